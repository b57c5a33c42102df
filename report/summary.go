package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/textwrap"
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
	// Adoptions counts the processes the session adopted (paddock adopt:
	// a process the agent did not start made its own), and OptIns the
	// calls an opt-in let through (PADDOCK_ALLOW_POWER_CONTROL=1 and the
	// like). Both widen what the agent may do, on its own say-so: --strict
	// fails on them as on a refusal, and Permitted lists them one by one.
	Adoptions int         `json:"adoptions"`
	OptIns    int         `json:"opt_ins"`
	Permitted []Permitted `json:"permitted,omitempty"`
	// PermittedTruncated: more than maxItems; Permitted holds the first ones.
	PermittedTruncated bool `json:"permitted_truncated,omitempty"`
}

// Widened reports whether the session adopted anything or honoured an
// opt-in.
func (s Summary) Widened() bool { return s.Adoptions > 0 || s.OptIns > 0 }

// Permitted is one adoption or honoured opt-in in a Summary.
type Permitted struct {
	TS time.Time `json:"ts"`
	// Action is the journal's: adopted or opt_in_used.
	Action string `json:"action"`
	// Pid is the adopted process, or the caller an opt-in let through.
	Pid     int      `json:"pid"`
	Comm    string   `json:"comm,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	By      string   `json:"by,omitempty"`
	Syscall string   `json:"syscall,omitempty"`
	OptIn   string   `json:"opt_in,omitempty"`
	Path    string   `json:"path,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Rule    string   `json:"rule,omitempty"`
	// Message says it in one line, for the reports and the CI summary.
	Message string `json:"message"`
}

// Adoption is an adoption as the summary counts it.
type Adoption struct {
	When             time.Time
	Pid              int
	Comm, Reason, By string
	LifelineOverride bool
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
	s.Permitted = append([]Permitted(nil), p.summary.Permitted...)
	s.Refusals = int(p.seen.Load())
	s.OptIns = int(p.optIns.Load())
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

// Adopted counts adoption a in the summary: the session made a process it
// did not start its own. The caller journals it.
func (p *Pipeline) Adopted(a Adoption) {
	what := "adopted"
	if a.LifelineOverride {
		what = "adopted, a lifeline (--lifeline-ok),"
	}
	p.permit(Permitted{TS: a.When, Action: "adopted", Pid: a.Pid, Comm: a.Comm, Reason: a.Reason, By: a.By,
		Message: fmt.Sprintf("pid %d (%s) %s by %s: %s", a.Pid, a.Comm, what, a.By, textwrap.OneLine(a.Reason))}, true)
}

// optedIn records an honoured opt-in (counted already, in Decided).
func (p *Pipeline) optedIn(ev Event) {
	d := ev.Decision
	it := Permitted{TS: ev.When, Action: string(d.Action), Pid: ev.Caller, Syscall: d.Syscall, OptIn: d.OptIn, Rule: string(d.Rule)}
	what := d.Syscall
	if d.Exec != nil {
		it.Path, it.Argv = d.Exec.Path, boundedArgv(d.Exec.Argv)
		what = "exec of " + textwrap.OneLine(strings.Join(it.Argv, " "))
	}
	it.Message = fmt.Sprintf("%s from pid %d allowed by the opt-in %s (rule %s)", what, ev.Caller, d.OptIn, d.Rule)
	p.permit(it, false)
}

// permit lists it in the summary, counting it as an adoption when adopted.
func (p *Pipeline) permit(it Permitted, adopted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if adopted {
		p.summary.Adoptions++
	}
	if len(p.summary.Permitted) >= maxItems {
		p.summary.PermittedTruncated = true
		return
	}
	p.summary.Permitted = append(p.summary.Permitted, it)
}
