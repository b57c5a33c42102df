package supervisor

import (
	"errors"
	"os"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/report"
	"github.com/paddock-dev/paddock/tracer"
)

// tracing is what the ptrace backend holds: the tracer, the world its
// decisions use (on the reaping thread only), the answers of the decisions
// taken off that thread for the tracees it holds stopped meanwhile, and
// sigchld, which wakes the reaper while it polls for both.
type tracing struct {
	tracer  *tracer.Tracer
	world   *liveWorld
	answers chan heldAnswer
	sigchld chan os.Signal
}

// heldAnswer is a worker's answer for a tracee the ptrace backend holds
// stopped until it comes (tracer.Tracer.Answer).
type heldAnswer struct {
	tid int
	r   answer.Answer
}

// startTracing seizes the init's thread for the ptrace backend. Its
// decisions run on the reaping thread (the tracer's), except those that may
// wait: a worker takes each of those over and sends its answer back on
// s.trace.answers, and the caller stays stopped until the reaper applies it.
func (s *Session) startTracing(tid int) error {
	if err := tracer.Seize(tid); err != nil {
		return err
	}
	w := s.newWorld().keepPins()
	s.trace.world = w
	s.trace.answers = make(chan heldAnswer, maxWaiting)
	s.trace.sigchld = make(chan os.Signal, 1)
	signal.Notify(s.trace.sigchld, unix.SIGCHLD)
	s.trace.tracer = tracer.New(func(tid int, tc tracer.Call) (answer.Answer, bool) {
		c := w.read(tid, tc.Arch, tc.Nr, tc.Args, -1, 0)
		if c.mayWait() {
			c = c.moveTo(w.spare())
			if s.offload(c, func(c *call) {
				r, after, _ := s.answer(c)
				report.After(after, func() { s.trace.answers <- heldAnswer{tid: tid, r: r} })
			}) {
				return answer.Continue(), true
			}
		}
		r, after, _ := s.answer(c)
		if after == nil {
			return r, false
		}
		// The message waits for the teller: the tracee stays stopped until
		// it is written (at most report.TellWait), the others go on.
		report.After(after, func() { s.trace.answers <- heldAnswer{tid: tid, r: r} })
		return answer.Continue(), true
	}, func(tid int, what string, err error) {
		s.cfg.Log.Error().Err(err).Int("tid", tid).Msg("ptrace: " + what)
	})
	return nil
}

// waitNext waits for the next child to report (waitid with flags, which
// include WNOWAIT). While the tracer holds tracees for workers' answers, it
// polls instead, applying each answer as it comes and waking on SIGCHLD for
// the children's own reports.
func (s *Session) waitNext(flags int, info *unix.Siginfo) error {
	for {
		if s.trace.tracer == nil || s.trace.tracer.Held() == 0 {
			return unix.Waitid(unix.P_ALL, 0, info, flags, nil)
		}
		*info = unix.Siginfo{}
		if err := unix.Waitid(unix.P_ALL, 0, info, flags|unix.WNOHANG, nil); err != nil || sys.SiginfoPid(info) != 0 {
			return err
		}
		select {
		case a := <-s.trace.answers:
			s.trace.tracer.Answer(a.tid, a.r)
		case <-s.trace.sigchld:
		}
	}
}

// releaseHeld waits for every held tracee's answer and applies it, before
// the tracer lets go of its tracees.
func (s *Session) releaseHeld() {
	for s.trace.tracer.Held() > 0 {
		a := <-s.trace.answers
		s.trace.tracer.Answer(a.tid, a.r)
	}
}

// reap collects every child (orphans of the agent included, as a subreaper)
// until the agent root has exited. With the ptrace backend it also answers
// every ptrace stop, on this thread (the tracer's), and goes on doing so for
// what the agent left running until nothing is left.
func (s *Session) reap(root int) {
	flags := unix.WEXITED | unix.WNOWAIT | unix.WALL
	if s.trace.tracer != nil {
		flags |= unix.WSTOPPED
		defer signal.Stop(s.trace.sigchld)
	}
	if s.trace.world != nil {
		defer s.trace.world.close()
	}
	rootDone := false
	var y yielder
	var others backoff
	for {
		y.maybe()
		// Peek at the next child to collect, then reap exactly that one:
		// the tree must hear that the root exited before its pid is
		// released (see ownership.Tree.RootExited).
		var info unix.Siginfo
		err := s.waitNext(flags, &info)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD cannot happen while the root lives; treat it as its end.
			if !rootDone {
				s.tree.RootExited()
				s.status = unix.WaitStatus(0xff00)
				close(s.done)
			}
			return
		}
		next := sys.SiginfoPid(&info)
		if info.Code == cldTrapped || info.Code == cldStopped {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(next, &ws, unix.WALL|unix.WUNTRACED, nil); err == nil && s.trace.tracer != nil {
				s.trace.tracer.Handle(next, ws)
			}
			continue
		}
		if next != root && !s.agents(next) && others.wait() {
			continue
		}
		others.reset()
		if next == root && !rootDone {
			s.tree.RootExited()
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(next, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) || (err != nil && next != root) {
			continue
		}
		if s.trace.tracer != nil {
			s.trace.tracer.Handle(next, ws)
		}
		if rootDone || (pid != root && err == nil) {
			s.warnReaped(pid, ws)
			continue
		}
		rootDone = true
		s.status = ws
		if s.trace.tracer == nil {
			close(s.done)
			go s.reapOrphans()
			return
		}
		if s.cfg.KeepOrphans {
			// Let go of what the agent left running before paddock exits
			// (a dying tracer's tracees are killed: PTRACE_O_EXITKILL);
			// then only orphans are left to collect.
			s.releaseHeld()
			s.trace.tracer.Detach()
			close(s.done)
			s.reapOrphans()
			return
		}
		close(s.done)
	}
}

// reapOrphans keeps collecting re-parented orphans after the root exited, so
// that none stays a zombie while the process lives on; it ends when this
// process has no child left.
func (s *Session) reapOrphans() {
	var others backoff
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		next := sys.SiginfoPid(&info)
		if !s.agents(next) && others.wait() {
			continue
		}
		others.reset()
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(next, &ws, unix.WALL, nil); err == nil {
			s.warnReaped(pid, ws)
		}
	}
}

// agents reports whether pid, a child of this process that has exited,
// is the agent's to collect: the agent root, or an orphan of its tree
// (which carries the agent's seccomp filter; ownership.Tree). Any other
// child was started by paddock itself (nvidia-smi, for the VRAM budget)
// or by the program hosting the supervisor, and its own waiter (os/exec)
// collects it: reaped here first, it would make that wait fail with
// ECHILD. A child whose filters cannot be read is the agent's: no zombie
// stays for want of a reading.
func (s *Session) agents(pid int) bool {
	if pid == s.rootPid {
		return true
	}
	_, filters, err := s.fs.Seccomp(pid)
	return err != nil || s.tree.CarriesAgentFilter(filters)
}

// othersGrace is how long the reaper leaves a child that is not the
// agent's (see agents) to its own waiter, looking again ever more rarely,
// before it collects the child itself: os/exec's Wait, already waiting,
// takes it within microseconds, and a zombie nobody waits for must not
// keep the reaper from the agent's processes (waitid sees the first
// zombie child first) for longer than that.
const othersGrace = 50 * time.Millisecond

// backoff spaces the reaper's looks at a child that is not the agent's.
type backoff struct{ d, total time.Duration }

// wait sleeps before the next look and reports true, or reports false
// once othersGrace is spent: collect it then.
func (b *backoff) wait() bool {
	if b.total >= othersGrace {
		return false
	}
	b.d = min(max(2*b.d, 50*time.Microsecond), othersGrace/4)
	b.total += b.d
	time.Sleep(b.d)
	return true
}

func (b *backoff) reset() { *b = backoff{} }

// warnReaped logs a process other than the agent root that paddock reaped
// (an orphan re-parented to it), with Config.WarnOnReap: tini's -w.
func (s *Session) warnReaped(pid int, ws unix.WaitStatus) {
	if !s.cfg.WarnOnReap || pid <= 0 {
		return
	}
	s.cfg.Log.Warn().Int("pid", pid).Int("status", ExitCode(ws)).Msg("reaped a zombie process")
}

// si_code values of SIGCHLD (asm-generic/siginfo.h).
const (
	cldTrapped = 4
	cldStopped = 5
)
