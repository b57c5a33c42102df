package supervisor

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/callerio"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
)

// refusal is one refusal on its way to the log, the journal and the caller.
type refusal struct {
	// flushed, when set, marks a flush request instead of a refusal.
	flushed chan struct{}
	when    time.Time
	caller  int
	abi     string
	d       policy.Decision
	// quiet: the requester already has the message (a control-socket answer).
	quiet bool
	// shown: the message went to the caller's stderr on the terminal
	// paddock logs to, so the log line would repeat it there.
	shown bool
}

// reporter takes refusals off the notify loop: the loop only enqueues, and a
// full queue drops (and counts) rather than blocks, so nobody's slow stderr
// or disk can stall a decision.
type reporter struct {
	log zerolog.Logger
	fs  procfs.FS
	// logTTY is the terminal the log goes to (0: none, or not known), and
	// relayedTTY the agent's pty relayed onto it (0: none).
	logTTY       terminal
	relayedTTY   terminal
	journal      *journal.Journal // nil: no journal
	notifyStderr bool
	queue        chan refusal

	// seen counts every refusal; dropped those that found the queue full.
	seen    atomic.Int64
	dropped atomic.Int64

	// tells carries messages to the teller goroutine; limits rate-limits
	// them per caller (under limitMu).
	tells   chan *tellJob
	limitMu sync.Mutex
	limits  map[int]*callerLimit
	told    callerLimit // all callers together (under limitMu)

	// logged rate-limits the per-refusal log lines (run goroutine only).
	logged callerLimit

	mu      sync.Mutex
	summary Summary
	counted int // refusals recorded in summary (under mu)
}

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

// snapshot returns the summary so far (call after flush for a complete one).
func (r *reporter) snapshot() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.summary
	s.ByRule = make(map[string]int, len(r.summary.ByRule))
	for k, v := range r.summary.ByRule {
		s.ByRule[k] = v
	}
	s.Items = append([]Refused(nil), r.summary.Items...)
	s.Refusals = int(r.seen.Load())
	s.Unreported = int64(s.Refusals) - int64(r.counted)
	if s.Unreported < 0 {
		s.Unreported = 0
	}
	return s
}

// record adds one reported refusal to the summary.
func (r *reporter) record(f refusal) {
	d := f.d
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counted++
	if r.summary.ByRule == nil {
		r.summary.ByRule = map[string]int{}
	}
	r.summary.ByRule[string(d.Rule)]++
	if len(r.summary.Items) >= maxItems {
		r.summary.ItemsTruncated = true
		return
	}
	it := Refused{TS: f.when, Caller: f.caller, Syscall: d.Syscall, Target: d.Target, Signal: d.Signal, Rule: string(d.Rule), Message: d.Message}
	if d.Exec != nil {
		it.Path, it.Argv = d.Exec.Path, boundedArgv(d.Exec.Argv)
	}
	r.summary.Items = append(r.summary.Items, it)
}

// callerLimit rate-limits the messages written to one caller's stderr.
type callerLimit struct {
	windowStart time.Time
	sent        int
	suppressed  int
}

// roll starts a new window at now when the current one is over, and
// reports whether it did.
func (l *callerLimit) roll(now time.Time) bool {
	if now.Sub(l.windowStart) < window {
		return false
	}
	l.windowStart, l.sent = now, 0
	return true
}

const (
	queueLen = 1024
	// At most burstPerCaller messages per window reach one caller's stderr;
	// the rest are summarised in the next message that goes out.
	burstPerCaller = 5
	window         = time.Second
	// At most burstTotal messages per window go to callers' stderr in all
	// (a storm from many threads of one process would otherwise get 5 per
	// thread), and at most burstTotal refusals per window get a log line of
	// their own; the journal has every refusal either way.
	burstTotal = 20
)

func newReporter(log zerolog.Logger, fs procfs.FS, j *journal.Journal, notifyStderr bool) *reporter {
	r := &reporter{log: log, fs: fs, journal: j, notifyStderr: notifyStderr,
		queue: make(chan refusal, queueLen), limits: map[int]*callerLimit{},
		tells: make(chan *tellJob, tellQueueLen)}
	go r.run()
	go r.teller()
	return r
}

// tellJob is one message for one caller's stderr, fd (a copy of it the
// teller closes). The teller sets logTerminal, before it closes done, when
// it wrote the message to the terminal the log goes to.
type tellJob struct {
	caller      int
	fd          int
	msg         string
	done        chan struct{}
	logTerminal bool
}

const (
	tellQueueLen = 64
	// tellWait bounds how long a decision waits for its message to be
	// written before the caller gets its answer. Writing first puts the
	// message ahead of the caller's own error line and reaches a caller
	// that exits right after the refusal; the bound keeps a caller whose
	// stderr is slow (or a full queue) from stalling the notify loop.
	tellWait = 5 * time.Millisecond
)

// tell writes a refusal's message to the caller's own stderr (so that it
// shows in the agent's tool output) before the caller is answered, waiting
// at most tellWait. Messages are rate-limited per caller; what the limit
// holds back is counted in the next message that goes out. It reports
// whether the message went to the terminal the log goes to.
func (r *reporter) tell(f refusal) (logTerminal bool) {
	if !r.notifyStderr || f.quiet || !f.d.Refusal {
		return false
	}
	msg, ok := r.limit(f)
	if !ok {
		return false
	}
	// The caller's descriptor is taken now, while the caller waits for
	// its answer: a caller that exits right after its refusal still gets
	// the message, however late the teller comes to write it.
	fd, err := callerio.Stderr(r.fs, f.caller)
	if err != nil {
		r.log.Debug().Err(err).Int("caller", f.caller).Msg("refusal message not written to the caller's standard error")
		return false
	}
	rest := callerio.WriteNow(fd, []byte(msg))
	if len(rest) == 0 {
		// A pipe or a socket, never the log's terminal.
		unix.Close(fd)
		return false
	}
	job := &tellJob{caller: f.caller, fd: fd, msg: string(rest), done: make(chan struct{})}
	select {
	case r.tells <- job:
	default:
		unix.Close(fd)
		return false // a storm: the journal and the log still have it
	}
	t := time.NewTimer(tellWait)
	defer t.Stop()
	select {
	case <-job.done:
		return job.logTerminal
	case <-t.C:
		return false
	}
}

// teller writes the messages, one at a time, off the notify loop, through
// each caller's own descriptor 2 (tell.go).
func (r *reporter) teller() {
	stuck := map[int]chan struct{}{} // callers with a write still blocked
	held := map[int]int{}            // messages not written to them meanwhile
	for job := range r.tells {
		for caller, ch := range stuck {
			select {
			case <-ch:
				delete(stuck, caller)
			default:
			}
		}
		if _, blocked := stuck[job.caller]; blocked || len(stuck) >= maxStuckWrites {
			held[job.caller]++
			unix.Close(job.fd)
			close(job.done)
			continue
		}
		msg := job.msg
		if n := held[job.caller]; n > 0 {
			msg = "paddock: " + strconv.Itoa(n) + " more refusals to this process were not shown while its standard error was blocked; see the journal\n" + msg
			delete(held, job.caller)
		}
		fd := job.fd
		if tty := terminalFd(fd); tty != 0 {
			job.logTerminal = tty == r.logTTY || tty == r.relayedTTY
		}
		written := make(chan struct{})
		go func() {
			_ = callerio.WriteAll(fd, []byte(msg))
			unix.Close(fd)
			close(written)
		}()
		select {
		case <-written:
		case <-time.After(tellWrite):
			stuck[job.caller] = written
		}
		close(job.done)
	}
}

// report enqueues a refusal without blocking.
func (r *reporter) report(f refusal) {
	if f.d.Refusal {
		r.seen.Add(1)
	}
	select {
	case r.queue <- f:
	default:
		// The queue is full: a storm. The refusal itself stands; the loss of
		// its report is counted and said out loud when the reporter stops.
		r.dropped.Add(1)
	}
}

// flush waits (at most a few seconds) until everything reported so far has
// been logged, journaled and shown. The reporter keeps running afterwards:
// leftover agent processes may still be refused.
func (r *reporter) flush() {
	ch := make(chan struct{})
	select {
	case r.queue <- refusal{flushed: ch}:
	case <-time.After(3 * time.Second):
		return
	}
	select {
	case <-ch:
	case <-time.After(3 * time.Second):
	}
}

func (r *reporter) run() {
	for f := range r.queue {
		if f.flushed != nil {
			r.logSuppressed()
			if n := r.dropped.Swap(0); n > 0 {
				r.log.Error().Int64("dropped", n).Msg("refusals came faster than they could be reported; every one was refused, but these were not logged individually")
			}
			close(f.flushed)
			continue
		}
		d := f.d
		if !d.Refusal {
			// An honoured opt-in, or an exec allowed unread: journaled and
			// logged, nothing to tell the caller.
			if d.Unread {
				r.log.Info().Str("syscall", d.Syscall).Int("caller", f.caller).Str("rule", string(d.Rule)).Msg("exec allowed unread: the caller is not dumpable, so no guard looked at it")
			} else {
				r.log.Info().Str("syscall", d.Syscall).Int("caller", f.caller).Str("opt_in", d.OptIn).Str("rule", string(d.Rule)).Msg("opt-in honoured")
			}
			if r.journal != nil {
				if err := r.journal.Append(journalRecord(f)); err != nil {
					r.log.Error().Err(err).Msg("paddock could not write the audit journal")
				}
			}
			continue
		}
		r.record(f)
		if r.logged.roll(f.when) {
			r.logSuppressed()
		}
		if r.logged.sent >= burstTotal {
			r.logged.suppressed++
			r.journalRefusal(f)
			continue
		}
		if f.shown {
			// The user has just read the message on this very terminal.
			r.journalRefusal(f)
			continue
		}
		r.logged.sent++
		ev := r.log.Warn().Str("syscall", d.Syscall).Int("caller", f.caller)
		if d.Exec == nil && d.Syscall != "seccomp" {
			ev = ev.Int("target", d.Target).Int("signal", d.Signal)
		}
		ev.Str("rule", string(d.Rule)).Str("abi", f.abi).Msg(d.Message)
		r.journalRefusal(f)
	}
}

// journalRefusal appends a refusal's record; a failure is said out loud.
func (r *reporter) journalRefusal(f refusal) {
	if r.journal == nil {
		return
	}
	if err := r.journal.Append(journalRecord(f)); err != nil {
		r.log.Error().Err(err).Msg("paddock could not write the audit journal; the refusal itself stands")
	}
}

// logSuppressed says how many refusals of the last window got no log line.
func (r *reporter) logSuppressed() {
	if r.logged.suppressed > 0 {
		r.log.Warn().Int("refusals", r.logged.suppressed).Msg("more refusals than paddock logs one by one (" +
			strconv.Itoa(burstTotal) + " a second); each is in the audit journal (paddock journal)")
		r.logged.suppressed = 0
	}
}

// limit applies the per-caller rate limit and returns the text to write.
func (r *reporter) limit(f refusal) (string, bool) {
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	lim := r.limits[f.caller]
	if lim == nil {
		if len(r.limits) > 4096 {
			clear(r.limits)
		}
		lim = &callerLimit{}
		r.limits[f.caller] = lim
	}
	lim.roll(f.when)
	r.told.roll(f.when)
	if lim.sent >= burstPerCaller || r.told.sent >= burstTotal {
		lim.suppressed++
		return "", false
	}
	r.told.sent++
	lim.sent++
	msg := f.d.Message + "\n"
	if lim.suppressed > 0 {
		msg = "paddock: " + strconv.Itoa(lim.suppressed) + " more refusals to this process were not shown; see the journal\n" + msg
		lim.suppressed = 0
	}
	return msg, true
}

// Bounds on an exec's argv as journaled.
const (
	journalArgs     = 64
	journalArgBytes = 4096
)

// journalRecord renders a refusal (or an honoured opt-in) as its journal record.
func journalRecord(f refusal) journal.Record {
	d := f.d
	fields := map[string]any{"syscall": d.Syscall, "rule": string(d.Rule), "abi": f.abi}
	switch {
	case d.Exec != nil && (d.Action == audit.ExecDenied || d.Exec.Path != ""):
		fields["path"] = d.Exec.Path
		fields["argv"] = boundedArgv(d.Exec.Argv)
		if d.Exec.Truncated {
			fields["truncated"] = true
		}
	case d.Action == audit.SignalDenied:
		fields["target"], fields["signal"] = d.Target, d.Signal
	}
	if d.Message != "" {
		fields["message"] = d.Message
	}
	if d.Action == audit.OptInUsed {
		fields["opt_in"] = d.OptIn
	}
	if d.Unread && d.Exec != nil && d.Exec.Err != nil {
		fields["why"] = d.Exec.Err.Error()
	}
	return journal.Record{TS: f.when, Action: d.Action, Pid: f.caller, Fields: fields}
}

// boundedArgv keeps a journal record of a huge argv readable.
func boundedArgv(argv []string) []string {
	out := make([]string, 0, min(len(argv), journalArgs+1))
	total := 0
	for i, a := range argv {
		if i == journalArgs || total >= journalArgBytes {
			out = append(out, "...("+strconv.Itoa(len(argv)-i)+" more)")
			break
		}
		if len(a) > journalArgBytes-total {
			a = a[:journalArgBytes-total] + "..."
		}
		total += len(a)
		out = append(out, a)
	}
	return out
}
