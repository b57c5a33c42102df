// Package report carries out what follows a decision, the same for every
// front end (the supervisor's seccomp and ptrace backends, and fleet mode's
// containers): the message on the caller's own standard error, rate-limited
// per caller; the log line; the journal record; and the session's summary
// for --strict, --report and the closing line. The front end decides, hands
// the decision to Pipeline.Decided, and answers the caller when the
// pipeline says (After): at once, or once the message is written, so that
// the message comes before the caller's own error line, never later than
// TellWait. Nothing here blocks a front end's loop on anyone's I/O: the
// log and the journal are written by the pipeline's own goroutine, and a
// full queue drops (and counts) rather than waits.
package report

import (
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/terminal"
)

// Event is one decision to report.
type Event struct {
	// When the decision was made.
	When time.Time
	// Caller is the calling thread, by its id in paddock's PID namespace.
	Caller int
	// ABI names the syscall table the call came through.
	ABI string
	// Decision is what was decided.
	Decision policy.Decision
	// Quiet: the requester already has the message (a control-socket
	// answer); it is not written to the caller's stderr.
	Quiet bool
	// Labels say where the caller is (fleet mode: its container), or,
	// for a refusal of the kernel's wall, what refused what (its blockers,
	// the object), in this order, in the journal record, and those marked
	// Logged in the log line.
	Labels []Label

	// shown: the message went to the caller's stderr on the stream the
	// log goes to (the same terminal, pipe, socket or file), so the log
	// line would repeat it there.
	shown bool
	// flushed, when set, marks a flush request instead of an event.
	flushed chan struct{}
}

// Label is one fact about where a caller is.
type Label struct {
	Key, Value string
	// Logged puts it in the log line too (the journal has every label).
	Logged bool
}

// Reports says whether decision d is reported at all: a refusal, an
// honoured opt-in, or an exec allowed unread.
func Reports(d policy.Decision) bool { return d.Refusal || d.OptIn != "" || d.Unread }

// Options configure a Pipeline.
type Options struct {
	// Log receives a line per refusal (at most BurstTotal a second; the
	// rest are counted) and the pipeline's own failures.
	Log zerolog.Logger
	// FS is the /proc the callers are found in.
	FS procfs.FS
	// Journal receives every reported decision (nil: none).
	Journal *journal.Journal
	// NotifyStderr writes each refusal's message to the caller's stderr.
	NotifyStderr bool
	// Pace, when positive, is how many refusals a second are answered at
	// once; past it each refusal's answer waits its turn, so that a storm
	// of refusals (a program retrying a refused call in a loop) runs at
	// that pace instead of taking a CPU from whoever shares the supervisor
	// (fleet mode's other containers). 0: no pace.
	Pace int
	// LogFile is the file Log writes to, when known, and Relayed a pty
	// relayed onto it: a message written to the caller's stderr on the
	// stream the log goes to gets no log line of its own, since the user
	// would read it twice there. That stream is LogFile's terminal (or
	// Relayed), or the very pipe, socket or file LogFile is: without a
	// terminal, where paddock's stderr and the agent's are one pipe (a CI
	// log), each refusal shows once, as the caller's message.
	LogFile, Relayed *os.File
}

// Pipeline reports the decisions of one session (or, in fleet mode, one
// container). Its goroutines end with Close.
type Pipeline struct {
	log          zerolog.Logger
	fs           procfs.FS
	journal      *journal.Journal
	notifyStderr bool
	// logTTY is the terminal the log goes to (0: none, or not known), and
	// relayedTTY the pty relayed onto it (0: none).
	logTTY, relayedTTY terminal.Device
	// logStream is the pipe, socket or regular file the log goes to (zero:
	// none, or a terminal, which logTTY covers).
	logStream streamID

	// closeMu guards closed and the sends on queue and tells, so that a
	// decision reported after Close is dropped instead of panicking.
	closeMu sync.RWMutex
	closed  bool
	queue   chan Event
	ended   chan struct{} // closed when run and teller have returned

	// seen counts every refusal, optIns every honoured opt-in; dropped
	// the events that found the queue full or the pipeline closed.
	seen    atomic.Int64
	optIns  atomic.Int64
	dropped atomic.Int64

	tells   chan *tellJob
	limitMu sync.Mutex
	limits  map[int]*callerLimit
	told    callerLimit // all callers together (under limitMu)
	// lastExec is each caller's last reported exec refusal (under
	// limitMu; sameCommand).
	lastExec map[int]execRefused
	// exitWatches counts the callers watched (under limitMu, watchExit);
	// watches are their goroutines, which end when closing (a pipe's read
	// end, whose write end closingW Close closes) is readable. nil: no
	// exit watches.
	exitWatches       int
	watches           sync.WaitGroup
	closing, closingW *os.File
	closeClosing      sync.Once

	// logged rate-limits the per-refusal log lines (run goroutine only).
	logged callerLimit
	// journalLost counts the records the journal failed to take since it
	// last took one (run goroutine only).
	journalLost int

	// pace and paceNext (under paceMu) are Options.Pace and the time the
	// next refusal over it may be answered.
	pace     time.Duration
	paceMu   sync.Mutex
	paceNext time.Time

	mu      sync.Mutex
	summary Summary
	counted int // refusals recorded in summary (under mu)
}

const (
	queueLen = 1024
	// BurstPerCaller messages at most reach one caller's stderr in a
	// Window; the rest are summarised in the next message that goes out.
	BurstPerCaller = 5
	// Window is the rate limits' period.
	Window = time.Second
	// BurstTotal messages at most go to callers' stderr in a Window in all
	// (a storm from many threads of one process would otherwise get
	// BurstPerCaller per thread), and at most BurstTotal refusals a Window
	// get a log line of their own; the journal has every refusal either way.
	BurstTotal = 20
)

// New starts a pipeline; Close ends it.
func New(o Options) *Pipeline {
	p := &Pipeline{log: o.Log, fs: o.FS, journal: o.Journal, notifyStderr: o.NotifyStderr,
		queue: make(chan Event, queueLen), ended: make(chan struct{}), limits: map[int]*callerLimit{},
		tells: make(chan *tellJob, tellQueueLen)}
	if p.fs.Root == "" {
		p.fs = procfs.Default()
	}
	if r, w, err := os.Pipe(); err == nil {
		p.closing, p.closingW = r, w
	}
	if o.Pace > 0 {
		p.pace = time.Second / time.Duration(o.Pace)
	}
	p.logTTY = terminal.DeviceOf(o.LogFile)
	if p.logTTY != 0 {
		p.relayedTTY = terminal.DeviceOf(o.Relayed)
	} else if o.LogFile != nil {
		p.logStream = streamOf(int(o.LogFile.Fd()))
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.run() }()
	go func() { defer wg.Done(); p.teller() }()
	go func() { wg.Wait(); close(p.ended) }()
	return p
}

// Decided reports ev: it writes the message to the caller's stderr (or
// hands it to the teller), queues the log line, the journal record and
// the summary's count, and returns when the caller may be answered: nil
// at once, or a channel closed once the message is written, or TellWait
// has passed, whichever comes first. After runs the answer accordingly.
// A decision that Reports nothing returns nil and costs nothing.
func (p *Pipeline) Decided(ev Event) (answerAfter <-chan struct{}) {
	if !Reports(ev.Decision) {
		return nil
	}
	if ev.When.IsZero() {
		ev.When = time.Now()
	}
	if p.sameCommand(ev) {
		return nil
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if ev.Decision.Refusal {
		p.seen.Add(1)
	} else if ev.Decision.OptIn != "" {
		p.optIns.Add(1)
	}
	if p.closed {
		p.dropped.Add(1)
		return nil
	}
	var wait <-chan struct{}
	ev, wait = p.tell(ev)
	select {
	case p.queue <- ev:
	default:
		// The queue is full: a storm. The refusal itself stands; the loss
		// of its report is counted and said out loud at the next Flush.
		p.dropped.Add(1)
	}
	if ev.Decision.Refusal && p.pace > 0 {
		wait = p.paced(ev.When, wait)
	}
	return wait
}

// Overflowed counts n refusals that a front end did not hand to Decided
// one by one (a storm past the pace it reports at): they count in the
// summary, and so fail --strict, as refusals not listed (Unreported), and
// the next Flush says how many there were.
func (p *Pipeline) Overflowed(n int) {
	if n <= 0 {
		return
	}
	p.seen.Add(int64(n))
	p.dropped.Add(int64(n))
}

// sameCommand reports whether ev refuses the exec of a command that the
// same caller was refused at another path just before (within Window),
// under the same rule and with the same arguments: a shell or execvp
// trying each PATH entry for one command (dash tries them all, whatever
// the error). One command is one refusal, one message and one record;
// each later try gets the same errno, unreported.
func (p *Pipeline) sameCommand(ev Event) bool {
	d := ev.Decision
	if !d.Refusal || d.Exec == nil {
		return false
	}
	p.limitMu.Lock()
	defer p.limitMu.Unlock()
	last, ok := p.lastExec[ev.Caller]
	if ok && last.rule == d.Rule && last.path != d.Exec.Path && ev.When.Sub(last.when) < Window && slices.Equal(last.argv, d.Exec.Argv) {
		return true
	}
	if p.lastExec == nil || len(p.lastExec) > 4096 {
		p.lastExec = map[int]execRefused{}
	}
	p.lastExec[ev.Caller] = execRefused{when: ev.When, rule: d.Rule, path: d.Exec.Path, argv: slices.Clone(d.Exec.Argv)}
	return false
}

// execRefused is the exec refusal last reported for a caller (sameCommand).
type execRefused struct {
	when time.Time
	rule audit.Rule
	path string
	argv []string
}

// paceBurst is how many refusals over the pace are answered at once after
// a quiet spell.
const paceBurst = 100

// paced returns what a refusal's answer waits for under Options.Pace:
// wait itself while refusals come no faster than the pace (a burst of
// paceBurst at once included: a pkill that matches a hundred processes is
// not slowed), else wait and then the refusal's turn.
// The turns are spaced by the pace, so a storm runs at the pace, whatever
// its number of threads.
func (p *Pipeline) paced(now time.Time, wait <-chan struct{}) <-chan struct{} {
	p.paceMu.Lock()
	if floor := now.Add(-paceBurst * p.pace); p.paceNext.Before(floor) {
		p.paceNext = floor
	}
	turn := p.paceNext
	p.paceNext = turn.Add(p.pace)
	p.paceMu.Unlock()
	if !turn.After(now) {
		return wait
	}
	done := make(chan struct{})
	time.AfterFunc(turn.Sub(now), func() {
		if wait != nil {
			<-wait
		}
		close(done)
	})
	return done
}

// After runs answer once wait is closed: at once, on this goroutine, when
// wait is nil (nothing to wait for), else on a goroutine of its own.
func After(wait <-chan struct{}, answer func()) {
	if wait == nil {
		answer()
		return
	}
	go func() {
		<-wait
		answer()
	}()
}

// Flush waits (at most a few seconds) until everything reported so far has
// been logged, journaled and counted. The pipeline keeps running
// afterwards: leftover agent processes may still be refused.
func (p *Pipeline) Flush() {
	p.closeMu.RLock()
	if p.closed {
		p.closeMu.RUnlock()
		return
	}
	ch := make(chan struct{})
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case p.queue <- Event{flushed: ch}:
	case <-t.C:
		p.closeMu.RUnlock()
		return
	}
	p.closeMu.RUnlock()
	select {
	case <-ch:
	case <-t.C:
	}
}

// Close flushes the pipeline and ends its goroutines; decisions reported
// afterwards are counted but not reported. Close may be called again.
func (p *Pipeline) Close() {
	p.Flush()
	p.closeMu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
		close(p.tells)
		if p.closingW != nil {
			p.closingW.Close() // ends the exit watches
		}
	}
	p.closeMu.Unlock()
	<-p.ended
	p.watches.Wait()
	p.closeClosing.Do(func() {
		if p.closing != nil {
			p.closing.Close()
		}
	})
}

// run logs, journals and counts each event, off the front end's loop.
func (p *Pipeline) run() {
	for ev := range p.queue {
		if ev.flushed != nil {
			p.logSuppressed()
			if n := p.dropped.Swap(0); n > 0 {
				p.log.Error().Int64("dropped", n).Msg("refusals came faster than they could be reported; every one was refused, but these were not logged individually")
			}
			if p.journalLost > 1 {
				p.log.Error().Int("records", p.journalLost).Msg("the audit journal still takes no record; this many could not be written to it (the journal mirror has them, where one is kept)")
			}
			close(ev.flushed)
			continue
		}
		d := ev.Decision
		if !d.Refusal {
			// An honoured opt-in, or an exec allowed unread: journaled and
			// logged, nothing to tell the caller.
			e := p.log.Info()
			if d.Unread {
				e = labelled(e, ev).Str("syscall", d.Syscall).Int("caller", ev.Caller).Str("rule", string(d.Rule))
				e.Msg("exec allowed unread: the caller is not dumpable, so no guard looked at it")
			} else {
				e = labelled(e, ev).Str("syscall", d.Syscall).Int("caller", ev.Caller).Str("opt_in", d.OptIn).Str("rule", string(d.Rule))
				e.Msg("opt-in honoured")
				p.optedIn(ev)
			}
			p.journalEvent(ev)
			continue
		}
		p.record(ev)
		if p.logged.roll(ev.When) {
			p.logSuppressed()
		}
		switch {
		case p.logged.sent >= BurstTotal:
			p.logged.suppressed++
		case ev.shown:
			// The user has just read the message on this very terminal.
		default:
			p.logged.sent++
			e := labelled(p.log.Warn(), ev).Str("syscall", d.Syscall).Int("caller", ev.Caller)
			if d.Exec == nil && d.Syscall != "seccomp" && (d.Target != 0 || d.Signal != 0 || d.Action != audit.DeputyDenied) {
				// A D-Bus filter's refusal aims at a method, not a process.
				e = e.Int("target", d.Target).Int("signal", d.Signal)
			}
			e = e.Str("rule", string(d.Rule))
			if ev.ABI != "" {
				e = e.Str("abi", ev.ABI)
			}
			e.Msg(d.Message)
		}
		p.journalEvent(ev)
	}
}

// labelled adds ev's logged labels to a log line.
func labelled(e *zerolog.Event, ev Event) *zerolog.Event {
	for _, l := range ev.Labels {
		if l.Logged {
			e = e.Str(l.Key, l.Value)
		}
	}
	return e
}

// journalEvent appends ev's record; a failure is said out loud, and the
// decision itself stands. A journal that keeps failing (its lock held, say)
// is said once, with the first error, then once more when it works again,
// with how many records it could not take meanwhile (each went to the
// mirror, where one is kept): a storm of refusals does not become a storm
// of log lines.
func (p *Pipeline) journalEvent(ev Event) {
	if p.journal == nil {
		return
	}
	err := p.journal.Append(Record(ev))
	switch {
	case err == nil && p.journalLost > 0:
		p.log.Warn().Int("records", p.journalLost).Msg("the audit journal takes records again; it could not take this many meanwhile (the journal mirror has them, where one is kept)")
		p.journalLost = 0
	case err != nil && p.journalLost == 0:
		p.log.Error().Err(err).Msg("paddock could not write the audit journal; the decision itself stands (said once until the journal takes a record again)")
		p.journalLost++
	case err != nil:
		p.journalLost++
	}
}

// logSuppressed says how many refusals of the last window got no log line.
func (p *Pipeline) logSuppressed() {
	if p.logged.suppressed > 0 {
		p.log.Warn().Int("refusals", p.logged.suppressed).Msg("more refusals than paddock logs one by one (" +
			strconv.Itoa(BurstTotal) + " a second); each is in the audit journal (paddock journal)")
		p.logged.suppressed = 0
	}
}
