package report

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/callerio"
	"github.com/paddock-dev/paddock/terminal"
)

// Writing a refusal's message to the caller's own standard error.
//
// The message goes through the caller's descriptor 2 itself: a copy of it
// taken with pidfd_getfd shares the caller's open file description, so it
// reaches whatever descriptor 2 is (a terminal, a pipe, a socket a Node
// harness gave the child, a file the output was redirected to) with the
// caller's offset, so that a file's contents stay in order, and its access
// mode, so that a read-only descriptor gets nothing. Nothing is reopened by
// path with paddock's credentials (a root paddock would otherwise write into
// a file the agent's user could only read).
//
// The description is the caller's, blocking or not, and must stay as the
// caller set it, so it cannot be made non-blocking. Where the kernel can
// write without blocking for this one call (callerio.WriteNow) the message
// is written at once, before the caller is answered; otherwise the teller
// writes it on a goroutine of its own and the caller's answer waits for
// that write at most TellWait. A write still blocked after tellWrite (a
// full pipe nobody reads, a stopped terminal) finishes whenever it can,
// and until it has, further messages to that caller are not written but
// counted, and said in the next one that is.

const (
	tellQueueLen = 64
	// TellWait bounds how long a caller's answer waits for its message to
	// be written. Writing first puts the message ahead of the caller's own
	// error line and reaches a caller that exits right after the refusal;
	// the bound keeps a caller whose stderr is slow waiting no longer. The
	// front end's loop never waits: the answer is sent by After. 250 ms,
	// not 50: beside two busy loops the teller was not scheduled within 50
	// ms, and Gemini CLI's TUI, which reads a command's pty only until the
	// command exits, lost the message (the harness suite, loaded); a write
	// that blocks (a stopped terminal) costs its caller this once, then
	// its messages are counted.
	TellWait = 250 * time.Millisecond
	// tellWrite bounds how long the teller waits for one write before it
	// counts the caller as stuck.
	tellWrite = 50 * time.Millisecond
	// maxStuckWrites bounds the writes left blocked at once; past it
	// messages are counted instead of written.
	maxStuckWrites = 16
)

// tellJob is one message for one caller's stderr, fd (a copy of it the
// teller closes). ready is closed, once, when the caller may be answered.
type tellJob struct {
	caller int
	fd     int
	msg    string
	ready  chan struct{}
	once   sync.Once
}

// release lets the caller's answer go.
func (j *tellJob) release() { j.once.Do(func() { close(j.ready) }) }

// tell writes ev's message to the caller's stderr, or hands it to the
// teller; it returns ev with shown set when the message is on the terminal
// the log goes to, and what the answer waits for (nil: nothing). Called
// with closeMu read-held.
func (p *Pipeline) tell(ev Event) (Event, <-chan struct{}) {
	if !p.notifyStderr || ev.Quiet || !ev.Decision.Refusal {
		return ev, nil
	}
	msg, ok, watch := p.limit(ev)
	if watch != nil {
		p.watchExit(ev.Caller, watch)
	}
	if !ok {
		return ev, nil
	}
	// The caller's descriptor is taken now, while the caller waits for
	// its answer: a caller that exits right after its refusal still gets
	// the message, however late the teller comes to write it.
	fd, err := callerio.Stderr(p.fs, ev.Caller)
	if err != nil {
		p.log.Debug().Err(err).Int("caller", ev.Caller).Msg("refusal message not written to the caller's standard error")
		return ev, nil
	}
	// Known now, whatever the write's timing: the message goes where the
	// log goes, so the log line would only repeat it there.
	ev.shown = p.onLog(fd)
	rest := callerio.WriteNow(fd, []byte(msg))
	if len(rest) == 0 {
		// A pipe or a socket (the log's own one, maybe), never a terminal.
		unix.Close(fd)
		return ev, nil
	}
	job := &tellJob{caller: ev.Caller, fd: fd, msg: string(rest), ready: make(chan struct{})}
	select {
	case p.tells <- job:
	default:
		unix.Close(fd)
		ev.shown = false // a storm: the journal and the log still have it
		return ev, nil
	}
	time.AfterFunc(TellWait, job.release)
	return ev, job.ready
}

// onLog reports whether fd, a copy of a caller's stderr, reaches the stream
// the log goes to: the log's terminal (however the caller opened it: its
// pty, /dev/tty), the pty relayed onto it, or the log's very pipe, socket
// or file.
func (p *Pipeline) onLog(fd int) bool {
	if tty := terminal.DeviceOfFd(fd); tty != 0 {
		return tty == p.logTTY || tty == p.relayedTTY
	}
	return p.logStream != (streamID{}) && streamOf(fd) == p.logStream
}

// streamID names a pipe, a socket or a regular file by its inode: two
// descriptors with the same streamID write into one stream, whatever
// process holds them.
type streamID struct{ dev, ino uint64 }

// streamOf is fd's streamID, or the zero one when fd is none of those
// (a terminal, /dev/null, a descriptor that cannot be read).
func streamOf(fd int) streamID {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return streamID{}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFREG:
		return streamID{dev: st.Dev, ino: st.Ino}
	}
	return streamID{}
}

// teller writes the messages, one at a time, off the front end's loop.
func (p *Pipeline) teller() {
	stuck := map[int]chan struct{}{} // callers with a write still blocked
	held := map[int]int{}            // messages not written to them meanwhile
	for job := range p.tells {
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
			job.release()
			continue
		}
		msg := job.msg
		if n := held[job.caller]; n > 0 {
			msg = "paddock: " + strconv.Itoa(n) + " more refusals to this process were not shown while its standard error was blocked; see the journal\n" + msg
			delete(held, job.caller)
		}
		fd := job.fd
		written := make(chan struct{})
		go func() {
			_ = callerio.WriteAll(fd, []byte(msg))
			unix.Close(fd)
			close(written)
		}()
		t := time.NewTimer(tellWrite)
		select {
		case <-written:
		case <-t.C:
			stuck[job.caller] = written
		}
		t.Stop()
		job.release()
	}
}

// callerLimit rate-limits the messages written to one caller's stderr.
type callerLimit struct {
	windowStart time.Time
	sent        int
	suppressed  int
	// rules are those the caller was told of in this window: the first
	// refusal under each rule always gets its message.
	rules []audit.Rule
	// watched: an exit watch holds the caller's stderr, to say what was
	// suppressed if the caller exits first (watchExit).
	watched bool
}

// roll starts a new window at now when the current one is over, and
// reports whether it did.
func (l *callerLimit) roll(now time.Time) bool {
	if now.Sub(l.windowStart) < Window {
		return false
	}
	l.windowStart, l.sent, l.rules = now, 0, l.rules[:0]
	return true
}

// limit applies the rate limits and returns the text to write; watch, when
// not nil, is the caller's limit, whose first suppressed message in a while
// asks for an exit watch (watchExit). A lifeline's refusal (the agent
// itself, paddock) and the first refusal under each rule in a window are
// always written: a pkill that matches five processes before the agent
// must not use up the budget on them.
func (p *Pipeline) limit(ev Event) (msg string, ok bool, watch *callerLimit) {
	p.limitMu.Lock()
	defer p.limitMu.Unlock()
	lim := p.limits[ev.Caller]
	if lim == nil {
		if len(p.limits) > 4096 {
			clear(p.limits)
		}
		lim = &callerLimit{}
		p.limits[ev.Caller] = lim
	}
	lim.roll(ev.When)
	p.told.roll(ev.When)
	rule := ev.Decision.Rule
	always := rule == audit.RuleLifeline || !slices.Contains(lim.rules, rule)
	if !always && (lim.sent >= BurstPerCaller || p.told.sent >= BurstTotal) {
		lim.suppressed++
		if !lim.watched && p.exitWatches < maxExitWatches {
			lim.watched = true
			p.exitWatches++
			watch = lim
		}
		return "", false, watch
	}
	if !slices.Contains(lim.rules, rule) {
		lim.rules = append(lim.rules, rule)
	}
	p.told.sent++
	lim.sent++
	msg = ev.Decision.Message + "\n"
	if lim.suppressed > 0 {
		msg = suppressedNote(lim.suppressed) + msg
		lim.suppressed = 0
	}
	return msg, true, nil
}

// suppressedNote says that n messages to a caller were not written.
func suppressedNote(n int) string {
	return "paddock: " + strconv.Itoa(n) + " more refusals to this process were not shown; see the journal\n"
}

// maxExitWatches bounds the callers watched at once (watchExit); past it
// the count of suppressed messages waits for the caller's next message.
const maxExitWatches = 16

// watchExit takes the stderr of caller, whose message lim has just
// suppressed, while the caller still waits for its answer, and says on it
// how many of its messages were suppressed once the caller's process
// exits, unless a later message said so first: a pkill that exits after
// its last refusal would otherwise never hear of them. The watch ends
// with the process or with Close.
func (p *Pipeline) watchExit(caller int, lim *callerLimit) {
	unwatch := func() {
		p.limitMu.Lock()
		lim.watched = false
		p.exitWatches--
		p.limitMu.Unlock()
	}
	if p.closing == nil {
		unwatch()
		return
	}
	fd, err := callerio.Stderr(p.fs, caller)
	if err != nil {
		unwatch()
		return
	}
	pidfd := -1
	if pid, err := p.fs.Tgid(caller); err == nil {
		pidfd, _ = unix.PidfdOpen(pid, 0)
	}
	if pidfd < 0 {
		unix.Close(fd)
		unwatch()
		return
	}
	closing := p.closing.Fd()
	p.watches.Add(1)
	go func() {
		defer p.watches.Done()
		defer unix.Close(fd)
		defer unix.Close(pidfd)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(closing), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				break
			}
		}
		p.limitMu.Lock()
		n := lim.suppressed
		lim.suppressed = 0
		lim.watched = false
		p.exitWatches--
		p.limitMu.Unlock()
		if n > 0 {
			// Not waited on: a stderr nobody reads gets nothing.
			_ = callerio.WriteNow(fd, []byte(suppressedNote(n)))
		}
	}()
}
