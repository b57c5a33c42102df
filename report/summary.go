package report

import (
	"time"
)

// Summary counts a session's refusals, for --strict, --report and the
// closing line.
type Summary struct {
	// Refusals counts every refusal, reported individually or not.
	Refusals int            `json:"refusals"`
	ByRule   map[string]int `json:"by_rule"`
	// Unreported refusals came in a storm faster than they could be logged.
	Unreported int64     `json:"unreported,omitempty"`
	Items      []Refused `json:"items"`
	// ItemsTruncated: more refusals than maxItems; Items holds the first ones.
	ItemsTruncated bool `json:"items_truncated,omitempty"`
}

// Refused is one refusal in a Summary.
type Refused struct {
	TS      time.Time `json:"ts"`
	Caller  int       `json:"caller"`
	Syscall string    `json:"syscall"`
	Target  int       `json:"target,omitempty"`
	Signal  int       `json:"signal,omitempty"`
	Path    string    `json:"path,omitempty"`
	Argv    []string  `json:"argv,omitempty"`
	Rule    string    `json:"rule"`
	Message string    `json:"message"`
}

// maxItems bounds the refusals a Summary lists one by one.
const maxItems = 1000

// Summary returns the summary so far (after Flush or Close: complete).
func (p *Pipeline) Summary() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.summary
	s.ByRule = make(map[string]int, len(p.summary.ByRule))
	for k, v := range p.summary.ByRule {
		s.ByRule[k] = v
	}
	s.Items = append([]Refused(nil), p.summary.Items...)
	s.Refusals = int(p.seen.Load())
	s.Unreported = int64(s.Refusals) - int64(p.counted)
	if s.Unreported < 0 {
		s.Unreported = 0
	}
	return s
}

// record adds one reported refusal to the summary.
func (p *Pipeline) record(ev Event) {
	d := ev.Decision
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counted++
	if p.summary.ByRule == nil {
		p.summary.ByRule = map[string]int{}
	}
	p.summary.ByRule[string(d.Rule)]++
	if len(p.summary.Items) >= maxItems {
		p.summary.ItemsTruncated = true
		return
	}
	it := Refused{TS: ev.When, Caller: ev.Caller, Syscall: d.Syscall, Target: d.Target, Signal: d.Signal, Rule: string(d.Rule), Message: d.Message}
	if d.Exec != nil {
		it.Path, it.Argv = d.Exec.Path, boundedArgv(d.Exec.Argv)
	}
	p.summary.Items = append(p.summary.Items, it)
}
