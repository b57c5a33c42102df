// Package terminal puts a pseudo-terminal between a supervised agent and
// the user's terminal, as sudo's use_pty, script, tmux and ssh do.
//
// An agent on the user's own terminal shares it: it could push input into
// the user's shell (TIOCSTI), hang the terminal up (vhangup), change its
// foreground group under the user, and it shares paddock's session, so that
// its kill(0) addresses paddock too. Behind a pty of its own the agent
// leads a session whose controlling terminal is that pty: whatever it does
// to "its terminal" reaches only the pty. paddock relays between the two:
// input from the user's terminal (put in raw mode, so that ^C, ^Z and ^\
// reach the pty as bytes and its line discipline turns them into signals
// for the agent's foreground job), output back, the window size at the
// start and on every SIGWINCH; and it restores the user's terminal settings
// when it is done, with what everyone on the terminal shares (its line
// discipline, exclusive mode and output flow). It never waits on the
// user's terminal without bound once the agent is gone, nor for its own
// lines: a terminal whose output is stopped must not hold paddock up.
package terminal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// drainWait is how long Close waits for the pty's last output once the
// agent is gone: the output ends at once unless something the agent left
// running (paddock run --keep-orphans) still holds the pty open.
const drainWait = time.Second

// bgPoll is how often the input loop checks whether paddock, in the
// background of the user's terminal, has been brought to the foreground.
const bgPoll = 200 * time.Millisecond

// Relay is a pty between an agent and the user's terminal.
type Relay struct {
	master, slave *os.File
	// agent holds the agent's stdin, stdout and stderr: the pty's slave in
	// place of each of the user's descriptors that is a terminal.
	agent [3]*os.File
	// in is the user's terminal as stdin (nil when stdin is not one); it
	// is what raw mode is set on. inRead is what the input copier reads:
	// a second, non-blocking open of the same terminal where one can be
	// had (so that Close can stop the read), else in itself.
	in, inRead *os.File
	// out receives the pty's output: stdout when it is a terminal, else
	// stderr. ref is the user's terminal the settings and the window size
	// are read from: in when there is one, else out.
	out, ref *os.File

	mu    sync.Mutex
	saved *term.State // the user's settings while raw, else nil
	// closing: Close has begun, and the terminal is not made raw again.
	closing bool
	// shared is what Start found of the user's terminals that everyone on
	// them shares (line discipline, exclusive mode), put back by Restore.
	shared []sharedState

	// sink writes the agent's output to out: without a bound while the
	// agent runs (a terminal that takes nothing holds the agent up, as
	// the terminal itself would), within stall once it is gone. logs are
	// the writers of paddock's own lines (LogWriter), within stall always.
	sink  *termWriter
	logs  []*termWriter
	stall time.Duration

	// cont (SIGCONT), winch and chld: see Start.
	cont, winch, chld chan os.Signal
	quit              chan struct{}
	loops             sync.WaitGroup
	outDone           chan struct{}
	followPid         int
	// stopRoot asks the signal loop to stop the agent root's group and
	// paddock with it (the user typed the suspend key at the root).
	stopRoot chan struct{}
	// wake tells the input loop that paddock was continued.
	wake      chan struct{}
	closeOnce sync.Once

	// size orders the relay's copies of the user's window size with the
	// agent's own settings of the pty's size (AgentResize).
	size struct {
		sync.Mutex
		// replaced are the sizes the relay's copies replaced on the pty
		// since the agent last set one (a few at most; see AgentResize).
		replaced []unix.Winsize
	}
}

// maxReplaced bounds Relay.size.replaced: the resizes remembered between
// two settings of the agent's (an interactive shell sets the size at each
// prompt).
const maxReplaced = 8

// New opens a pty for an agent whose standard descriptors are stdin,
// stdout and stderr (nil: this process's), when any of them is a terminal;
// with none, it returns nil and no error, and the agent needs no relay.
// The descriptors that are not terminals are the agent's as given (a file,
// a pipe). Nothing is changed on the user's terminal before Start.
func New(stdin, stdout, stderr *os.File) (*Relay, error) {
	std := [3]*os.File{stdin, stdout, stderr}
	for i, def := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		if std[i] == nil {
			std[i] = def
		}
	}
	var isTTY [3]bool
	some := false
	for i, f := range std {
		isTTY[i] = term.IsTerminal(int(f.Fd()))
		some = some || isTTY[i]
	}
	if !some {
		return nil, nil
	}
	master, slave, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("terminal: open a pty for the agent: %w (paddock run --no-pty runs it on your terminal instead)", err)
	}
	// The agent inherits the slave's open file: blocking, as a terminal is.
	_ = slave.Fd()
	r := &Relay{master: master, slave: slave, quit: make(chan struct{}), outDone: make(chan struct{}), stopRoot: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), stall: StallWait}
	for i, f := range std {
		r.agent[i] = f
		if isTTY[i] {
			r.agent[i] = slave
		}
	}
	if isTTY[0] {
		r.in = std[0]
	}
	switch {
	case isTTY[1]:
		r.out = std[1]
	case isTTY[2]:
		r.out = std[2]
	default:
		// Only stdin is a terminal: the agent's output goes where the
		// user sent it, and what it writes on the pty itself (a
		// password prompt on /dev/tty) to the user's terminal.
		r.out = std[0]
	}
	r.ref = r.in
	if r.ref == nil {
		r.ref = r.out
	}
	return r, nil
}

// Agent is the agent's stdin, stdout and stderr: the pty's slave in place
// of each of the user's descriptors that is a terminal.
func (r *Relay) Agent() (stdin, stdout, stderr *os.File) { return r.agent[0], r.agent[1], r.agent[2] }

// Slave is the pty's slave: the agent's controlling terminal.
func (r *Relay) Slave() *os.File { return r.slave }

// Start copies the user's terminal settings (when paddock is not in its
// background) and window size to the pty, puts the user's terminal in raw
// mode when stdin is that terminal and paddock is not in its background,
// and starts relaying. Call Close when the agent is gone, on every path:
// it restores the user's terminal.
func (r *Relay) Start() error {
	// From the background the user's settings are whatever the user's
	// shell uses while it reads a command line (readline's raw-ish mode):
	// the pty then keeps the kernel's defaults, a sane cooked terminal.
	if t, err := unix.IoctlGetTermios(int(r.ref.Fd()), unix.TCGETS); err == nil && !r.background() {
		if err := unix.IoctlSetTermios(int(r.slave.Fd()), unix.TCSETS, t); err != nil {
			return fmt.Errorf("terminal: copy the terminal's settings to the agent's pty: %w", err)
		}
	}
	r.copySize()
	// The size the pty had before the agent existed is nothing the agent
	// could echo.
	r.size.Lock()
	r.size.replaced = r.size.replaced[:0]
	r.size.Unlock()
	r.saveShared()
	if err := r.raw(); err != nil {
		return err
	}
	r.sink = newTermWriter(r.out, 0)
	// One channel per signal, each holding one: os/signal drops a signal
	// whose channel is full, and a shared channel full of SIGCHLDs (every
	// orphan of the agent's that exits sends one to this subreaper) would
	// drop a SIGWINCH, leaving the agent's pty at the old size for good.
	// A pending one of each is all it takes: each handler reads the state
	// afresh.
	r.cont, r.winch, r.chld = make(chan os.Signal, 1), make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(r.cont, unix.SIGCONT)
	signal.Notify(r.winch, unix.SIGWINCH)
	signal.Notify(r.chld, unix.SIGCHLD)
	r.loops.Add(1)
	go r.signals()
	go r.output()
	if r.in != nil {
		r.inRead = reopen(r.in, unix.O_RDONLY)
		go r.input()
	}
	return nil
}

// Follow makes the relay follow the job control of the agent root pid,
// which leads the pty's session, as sudo does: when the root itself stops,
// paddock gives the user's terminal back as it was and stops itself with
// SIGTSTP, so that the user's shell sees the job stopped; when the shell
// continues paddock (fg, bg), the terminal is put back in raw mode if
// paddock is in the foreground, and the agent's group is continued. A stop
// of a job inside the agent (an interactive shell's own jobs) stays inside
// the pty.
//
// The root's process group is orphaned (its parent, paddock, is outside
// its session), so the kernel drops the SIGTSTP the pty's suspend key
// would send it (and one it sends itself). When the user types the suspend
// key (^Z) while the root's group is the pty's foreground and the pty
// generates signals, paddock stops that group with SIGSTOP instead, then
// itself. Any other stop of the root is seen when it shows as 'T' in
// /proc/PID/stat: under the ptrace backend a stopped root is in a tracing
// stop instead, which paddock does not follow (docs/limits.md).
func (r *Relay) Follow(pid int) {
	r.mu.Lock()
	r.followPid = pid
	r.mu.Unlock()
}

// signals copies the window size on SIGWINCH and follows the agent root's
// stops on SIGCHLD.
func (r *Relay) signals() {
	defer r.loops.Done()
	for {
		select {
		case <-r.quit:
			return
		case <-r.winch:
			r.copySize()
		case <-r.cont:
			// Continued in the foreground (fg) or the background (bg).
			if r.background() {
				r.pauseInput()
			} else {
				_ = r.raw()
				r.copySize()
			}
			select {
			case r.wake <- struct{}{}:
			default:
			}
		case <-r.chld:
			r.mu.Lock()
			pid := r.followPid
			r.mu.Unlock()
			if pid > 0 && stopped(pid) {
				r.suspend(pid)
			}
		case <-r.stopRoot:
			r.mu.Lock()
			pid := r.followPid
			r.mu.Unlock()
			if unix.Kill(-pid, unix.SIGSTOP) == nil {
				r.suspend(pid)
			}
		}
	}
}

// suspend stops paddock while the agent root is stopped (see Follow).
func (r *Relay) suspend(pid int) {
	r.Restore()
	// The default action of SIGTSTP stops this process, paddock's group
	// being the user's job; Go leaves it at the default unless notified.
	// Sent to this thread, which then stops before it returns from the
	// call (a signal to the process could stop it only after the terminal
	// has been made raw again). In an orphaned group (paddock leads its
	// session) the kernel drops it, and the agent goes on at once.
	runtime.LockOSThread()
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGTSTP)
	runtime.UnlockOSThread()
	// Continued by the user's shell (or by anyone).
	select {
	case <-r.quit:
		return
	default:
	}
	_ = r.raw()
	r.copySize()
	_ = unix.Kill(-pid, unix.SIGCONT)
}

// stopped reports whether pid is in a stop ('T' in /proc/PID/stat).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which ends with the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}

// copySize gives the pty the user's terminal's window size; the kernel
// then signals SIGWINCH to the pty's foreground job when it changed. The
// size it replaces is remembered for AgentResize.
func (r *Relay) copySize() {
	r.size.Lock()
	defer r.size.Unlock()
	ws, err := unix.IoctlGetWinsize(int(r.ref.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	if old, err := unix.IoctlGetWinsize(int(r.slave.Fd()), unix.TIOCGWINSZ); err == nil && *old != *ws {
		if len(r.size.replaced) == maxReplaced {
			r.size.replaced = r.size.replaced[1:]
		}
		r.size.replaced = append(r.size.replaced, *old)
	}
	_ = unix.IoctlSetWinsize(int(r.slave.Fd()), unix.TIOCSWINSZ, ws)
}

// AgentResize carries out a setting of the pty's window size by the agent
// (TIOCSWINSZ on its terminal, which paddock's supervisor traps) in order
// with the relay's copies of the user's size, and drops one that sets a
// size the relay replaced since the agent's last setting.
//
// Readline sets the size it has just read at every prompt (a "dummy call
// to force a backgrounded readline to stop"): a resize of the user's
// terminal copied between its read and its write would be undone by the
// write, and never copied again, the user's terminal being unchanged
// since. The trap widens that window from microseconds to a round trip
// through the supervisor, which lost the resize of a shell's prompt in
// one run of four. A size the pty no longer has because the user's
// terminal changed is such an echo, and the pty keeps the user's size;
// the one deliberate setting dropped with it is a program's going back,
// before any other setting of its own, to a size the user's terminal had
// earlier, which the user's terminal would not show either (docs/limits.md).
func (r *Relay) AgentResize(ws *unix.Winsize) error {
	r.size.Lock()
	defer r.size.Unlock()
	echo := slices.Contains(r.size.replaced, *ws)
	r.size.replaced = r.size.replaced[:0]
	if echo {
		return nil
	}
	return unix.IoctlSetWinsize(int(r.slave.Fd()), unix.TIOCSWINSZ, ws)
}

// background reports whether paddock's group is in the background of the
// user's terminal (stdin): it may then neither read it nor set its mode.
// A terminal that is not paddock's controlling terminal (a harness's pty)
// has no background.
func (r *Relay) background() bool {
	return r.in != nil && backgroundOf(r.in)
}

// backgroundOf reports whether paddock's group is in the background of
// terminal f (false when f is not paddock's controlling terminal).
func backgroundOf(f *os.File) bool {
	pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pg != unix.Getpgrp()
}

// pauseInput ends a pending read of the user's terminal (where the read
// can be ended: see reopen), so that the input loop waits for the
// foreground.
func (r *Relay) pauseInput() {
	if r.inRead != nil {
		_ = r.inRead.SetReadDeadline(time.Now())
	}
}

// raw puts the user's terminal in raw mode, when stdin is that terminal
// and paddock's group is not in its background (setting a terminal's mode
// from the background would stop paddock with SIGTTOU). A terminal that is
// not paddock's controlling terminal (a harness's pty) has no background.
func (r *Relay) raw() error {
	if r.in == nil {
		return nil
	}
	if r.background() {
		return nil
	}
	fd := int(r.in.Fd())
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved != nil || r.closing {
		return nil
	}
	st, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("terminal: put the terminal in raw mode: %w", err)
	}
	r.saved = st
	return nil
}

// Restore puts the user's terminal back as Start found it (the relay
// goes on): its settings, and what everyone on it shares, which something
// else than paddock may have changed meanwhile (sharedState.restore). It
// may be called from any goroutine, and again.
func (r *Relay) Restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.shared {
		st.restore(r.stall)
	}
	if r.saved == nil {
		return
	}
	_ = term.Restore(int(r.in.Fd()), r.saved)
	r.saved = nil
}

// sharedState is what one of the user's terminals shares with everyone on
// it, beyond its settings, as Start found it: an agent that opens the
// terminal by its path can change it for the user's shell too (paddock
// refuses it that, but a descriptor swapped between paddock's look and the
// call can slip through: docs/threat-model.md).
type sharedState struct {
	f     *os.File
	ldisc int // line discipline (TIOCGETD); -1: not known
	excl  int // exclusive mode (TIOCGEXCL): 0 or 1; -1: not known
}

// saveShared records the shared state of the user's terminals paddock is
// on (in and out, once each).
func (r *Relay) saveShared() {
	seen := map[Device]bool{}
	for _, f := range []*os.File{r.in, r.out} {
		if f == nil {
			continue
		}
		dev := DeviceBehind(int(f.Fd()))
		if dev == 0 || seen[dev] {
			continue
		}
		seen[dev] = true
		st := sharedState{f: f, ldisc: -1, excl: -1}
		if d, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGETD); err == nil {
			st.ldisc = d
		}
		if x, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGEXCL); err == nil {
			st.excl = x
		}
		r.shared = append(r.shared, st)
	}
}

// restore puts back the terminal's exclusive mode and line discipline
// where they changed, and restarts its output (TCOON: stopped by tcflow,
// the one state that cannot be read). It waits at most bound: a change of
// line discipline first waits for the output to drain, which on a serial
// line whose flow is held may never come.
func (st sharedState) restore(bound time.Duration) {
	fd := int(st.f.Fd())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if x, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL); err == nil && x != 0 && st.excl == 0 {
			_ = unix.IoctlSetInt(fd, unix.TIOCNXCL, 0)
		}
		// From paddock's background TCXONC and TIOCSETD would stop
		// paddock (SIGTTOU) unless paddock ignores it, as it does while
		// it supervises.
		if backgroundOf(st.f) && !signal.Ignored(unix.SIGTTOU) {
			return
		}
		// TCXONC is the line discipline's to answer (N_NULL answers
		// EINVAL): once before, so that a change of discipline does not
		// wait on stopped output, and once after.
		_ = unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON)
		if d, err := unix.IoctlGetInt(fd, unix.TIOCGETD); err == nil && st.ldisc >= 0 && d != st.ldisc {
			_ = unix.IoctlSetPointerInt(fd, unix.TIOCSETD, st.ldisc)
			_ = unix.IoctlSetInt(fd, unix.TCXONC, unix.TCOON)
		}
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// input copies the user's keystrokes to the pty until the user's terminal
// ends (hung up) or Close; the suspend key aimed at the agent root stops
// it (see Follow).
//
// Only while paddock is not in the terminal's background: a read from there
// would stop paddock (SIGTTIN), as it would any background job that reads
// its terminal, though the agent may never read. In the background the
// loop waits for SIGCONT, checking every bgPoll too (a shell's fg continues
// a running job without one), and puts the terminal in raw mode once
// paddock is in the foreground.
func (r *Relay) input() {
	buf := make([]byte, 4096)
	for first := true; ; first = false {
		if first || r.background() {
			for r.background() {
				select {
				case <-r.quit:
					return
				case <-r.wake:
				case <-time.After(bgPoll):
				}
			}
			// On the first pass too, not only after a wait: paddock may
			// have been brought to the foreground after Start found it in
			// the background and before this loop first looked (a quick
			// fg), and a read in the user's cooked mode would end the loop
			// on the ^D meant for the agent. Nothing is done when the
			// terminal is raw already. Not before every read: while
			// paddock stops with its agent (suspend), the terminal must
			// stay as the user's shell gets it back.
			_ = r.raw()
		}
		_ = r.inRead.SetReadDeadline(time.Time{})
		n, err := r.inRead.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue // paused: paddock went to the background
		}
		p := buf[:n]
		for len(p) > 0 {
			i := r.suspendKey(p)
			if i < 0 {
				break
			}
			if _, werr := r.master.Write(p[:i]); werr != nil {
				return
			}
			select {
			case r.stopRoot <- struct{}{}:
			default:
			}
			p = p[i+1:]
		}
		if len(p) > 0 {
			if _, werr := r.master.Write(p); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// suspendKey is the index in p of the pty's suspend key when it would stop
// the agent root's own group, else -1: the relay follows the root, the pty
// generates signals (ISIG), and its foreground group is the root's.
func (r *Relay) suspendKey(p []byte) int {
	r.mu.Lock()
	pid := r.followPid
	r.mu.Unlock()
	if pid <= 0 {
		return -1
	}
	sc, err := r.master.SyscallConn()
	if err != nil {
		return -1
	}
	var tio *unix.Termios
	var fg int
	var terr, perr error
	if err := sc.Control(func(fd uintptr) {
		// On a pty's master these are the slave's settings and group.
		tio, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
		fg, perr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	}); err != nil || terr != nil || perr != nil {
		return -1
	}
	key := tio.Cc[unix.VSUSP]
	if tio.Lflag&unix.ISIG == 0 || key == 0 || fg != pid {
		return -1
	}
	return bytes.IndexByte(p, key)
}

// output copies the pty's output to the user's terminal until every
// holder of the slave has closed it (EIO), or Close gives up waiting.
func (r *Relay) output() {
	defer close(r.outDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.master.Read(buf)
		if n > 0 {
			if _, werr := r.sink.Write(buf[:n]); werr != nil {
				// The user's terminal is gone, or took nothing for the
				// bound once the agent was gone; keep draining the pty so
				// that nothing left on it blocks on a full one.
				r.discard(errors.Is(werr, errStalled))
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// discard reads the pty's output and drops it, counting it as given up
// when the terminal stalled.
func (r *Relay) discard(stalled bool) {
	n, _ := io.Copy(io.Discard, r.master)
	if stalled {
		r.sink.dropped.Add(n)
	}
}

// Close ends the relay once the agent is gone: it closes paddock's copy of
// the slave, writes out what the agent left on the pty (waiting up to
// drainWait while a process the agent left running still holds it, and
// giving up what the user's terminal does not take within its stall
// bound: a terminal whose output is stopped never would), stops relaying,
// restores the user's terminal (its output restarted first) and closes
// the pty, which hangs up anything still on it. It returns an error that
// says what was given up, if anything, for paddock to show once the
// terminal is restored; it may be called again (nil then).
func (r *Relay) Close() error {
	var note error
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closing = true
		r.mu.Unlock()
		if r.cont != nil {
			signal.Stop(r.cont)
			signal.Stop(r.winch)
			signal.Stop(r.chld)
		}
		close(r.quit)
		// The signal loop uses the slave (window sizes): it ends first.
		r.loops.Wait()
		_ = r.slave.Close()
		if r.cont != nil {
			r.sink.limit(r.stall)
			select {
			case <-r.outDone:
			case <-time.After(drainWait):
				_ = r.master.SetReadDeadline(time.Now())
				<-r.outDone
			}
		}
		r.Restore()
		if r.inRead != nil && r.inRead != r.in {
			_ = r.inRead.Close()
		}
		_ = r.master.Close()
		if r.sink != nil {
			r.sink.close()
			note = r.dropNote()
		}
	})
	return note
}

// dropNote says what the relay and paddock's log gave up because the
// user's terminal took nothing; nil when nothing was.
func (r *Relay) dropNote() error {
	out := r.sink.dropped.Load()
	var logged int64
	r.mu.Lock()
	for _, w := range r.logs {
		logged += w.dropped.Load()
	}
	r.mu.Unlock()
	if out == 0 && logged == 0 {
		return nil
	}
	return fmt.Errorf("terminal: your terminal took no output for %v (its output was stopped, as tcflow(TCOOFF) or ^S do, or its connection stalled): %d bytes of the agent's last output and %d bytes of paddock's own lines were given up; its output is restarted now", r.stall, out, logged)
}

// LogWriter wraps w, the user's terminal, for paddock's own lines: while
// the terminal is raw (no output processing), each "\n" is written as
// "\r\n", so that lines start at the left margin. When w is a terminal,
// a line it does not take within the stall bound (StallWait) is given up,
// so that paddock never hangs on a terminal whose output is stopped, and
// Close says how much was.
func (r *Relay) LogWriter(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && DeviceBehind(int(f.Fd())) != 0 {
		tw := newTermWriter(f, r.stall)
		r.mu.Lock()
		r.logs = append(r.logs, tw)
		r.mu.Unlock()
		w = tw
	}
	return &logWriter{r: r, w: w}
}

type logWriter struct {
	r *Relay
	w io.Writer
}

// Write implements io.Writer.
func (l *logWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	raw := l.r.saved != nil
	l.r.mu.Unlock()
	if !raw || !bytes.Contains(p, []byte{'\n'}) {
		return l.w.Write(p)
	}
	if _, err := l.w.Write(bytes.ReplaceAll(p, []byte{'\n'}, []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// reopen opens the terminal f is a second time, non-blocking, for reading
// or writing (mode O_RDONLY or O_WRONLY), so that a read or a write on it
// can be ended (by a deadline, or by closing it); f's own open file
// (shared with the user's shell) keeps its flags. Where that fails, it
// returns f itself.
func reopen(f *os.File, mode int) *os.File {
	fd, err := unix.Open(procfs.FdPath(int(f.Fd())), mode|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return f
	}
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(int(f.Fd()), &b) != nil || a.Rdev != b.Rdev {
		unix.Close(fd)
		return f
	}
	return os.NewFile(uintptr(fd), f.Name())
}
