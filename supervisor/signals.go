package supervisor

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// paddock's own signals, and what of them the agent gets: the signals a
// session catches from before the agent exists and forwards to it (an
// init's set when paddock is one), those it drops, and those the agent
// starts with ignored because paddock was.

// Signals are a session's own signals, being caught (CatchSignals).
type Signals struct {
	c       chan os.Signal
	ready   chan struct{}
	ignored uint64
}

// CatchSignals starts catching the signals a session forwards to its
// agent (an init's when init or when this process is PID 1; see
// initSignals), and keeps ignored those that were ignored when this
// process started (keepIgnored). A signal is caught from before the agent
// exists: one that arrives while it starts (a ^C, a container's SIGTERM)
// waits for it and is forwarded, instead of killing paddock by default
// under a running agent. os/signal enables each signal through a round
// trip to a thread of the Go runtime's own, about 20 us each, and an init
// catches about 60: the catching goes on in the background, beside the
// rest of the start, and the launch waits for it before the fork. A
// caller that has other work to do before Start calls it first and passes
// the result in Config.Signals.
func CatchSignals(init bool, log zerolog.Logger) *Signals {
	sg := &Signals{c: make(chan os.Signal, 16), ready: make(chan struct{}), ignored: keepIgnored(log)}
	go func() {
		defer close(sg.ready)
		if init || os.Getpid() == 1 {
			signal.Notify(sg.c, notIgnored(append(initSignals(), initDropped()...))...)
		} else {
			signal.Notify(sg.c, notIgnored(interactiveSignals())...)
		}
		signal.Notify(sg.c, syncSignals()...)
	}()
	return sg
}

// Stop gives the signals back once they are caught (Wait does, for a
// session's), for a caller of CatchSignals that does not go on to Start.
func (sg *Signals) Stop() {
	<-sg.ready
	signal.Stop(sg.c)
}

// forward passes paddock's own signals on to the agent root, or its group.
func (s *Session) forward() {
	for {
		select {
		case sig := <-s.sigs.c:
			if dropped(sig) {
				continue // initDropped, syncSignals
			}
			if sig == unix.SIGWINCH && s.cfg.Terminal != nil {
				continue // the relay resizes the agent's pty
			}
			if s.cfg.ForwardToGroup {
				// The agent leads its own group (Setpgid), so this never reaches paddock.
				_ = unix.Kill(-s.rootPid, sig.(syscall.Signal))
				continue
			}
			_ = unix.PidfdSendSignal(s.rootFd, sig.(syscall.Signal), nil, 0)
		case <-s.done:
			return
		}
	}
}

// interactiveSignals are forwarded to the agent in every mode.
func interactiveSignals() []os.Signal {
	return []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}
}

// initSignals are what a container's init forwards, tini's set: every
// asynchronous signal but SIGCHLD, SIGKILL and SIGSTOP, SIGTTIN and SIGTTOU
// (caught and dropped: see initDropped), and those the Go runtime keeps:
// SIGURG, which it sends itself for preemption (forwarding it would hand
// the agent signals nobody sent it), and SIGPROF, which it never hands to
// a channel. The real-time signals 35 to 64 are forwarded too (32 to 34
// belong to the C library; see uncatchable).
func initSignals() []os.Signal {
	sigs := append(interactiveSignals(), unix.SIGALRM, unix.SIGCONT, unix.SIGTSTP, unix.SIGVTALRM, unix.SIGXCPU,
		unix.SIGXFSZ, unix.SIGPWR, unix.SIGSTKFLT, unix.SIGIO, unix.SIGPIPE)
	for rt := 35; rt <= 64; rt++ {
		sigs = append(sigs, syscall.Signal(rt))
	}
	return sigs
}

// initDropped are caught by an init and dropped, as tini does: SIGTTIN and
// SIGTTOU would stop paddock if left to their default action, and the
// agent has no use for them (they concern a terminal's background jobs).
// Caught, not ignored, so that the agent starts with its default action
// for them.
func initDropped() []os.Signal { return []os.Signal{unix.SIGTTIN, unix.SIGTTOU} }

// syncSignals are the signals the kernel raises for a fault of the thread
// that gets them. Sent from outside (kill -SEGV) they would end paddock
// with a Go runtime trace, and the agent with it; caught, the runtime
// hands only those sent from outside to the channel, and paddock drops
// them, PID 1 or not, as tini does. A real fault of paddock's still
// crashes it.
func syncSignals() []os.Signal {
	return []os.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGABRT}
}

// uncatchable are the signals that os/signal cannot catch on Linux and the
// Go runtime leaves at their default action, which would end an init sent
// one of them: 32 and 34, which belong to the C library. An init ignores
// them (and so cannot forward them).
func uncatchable() []int { return []int{32, 34} }

// agentForked ignores what the agent must not inherit ignored, now that
// it is forked, and before its first exec is answered (or, without a trap
// on exec, before its first instruction could matter): the agent's code
// runs only after, so none of it sees the supervisor stoppable.
func (s *Session) agentForked() {
	if s.cfg.Init || os.Getpid() == 1 {
		s.ignoreUncatchable()
		return
	}
	// Nothing the agent does on a terminal may stop the supervisor: an
	// agent that turns on TOSTOP and takes the terminal's foreground
	// would otherwise stop it with SIGTTOU at its next log line. Ignored
	// (an init catches and drops them instead), so that a background
	// write or terminal setting goes through; only now, so that the
	// agent starts with their default action.
	signal.Ignore(unix.SIGTTOU, unix.SIGTTIN)
}

// ignoreUncatchable sets the uncatchable signals to SIG_IGN for this
// process, once the agent has been started without that.
func (s *Session) ignoreUncatchable() {
	for _, sig := range uncatchable() {
		if err := sys.IgnoreSignal(sig); err != nil {
			s.cfg.Log.Debug().Err(err).Int("signal", sig).Msg("could not ignore a signal os/signal cannot catch")
		}
	}
}

// keepIgnored ignores again the signals that were ignored when paddock
// started (nohup, a shell's `trap "" PIPE`, a background job), so that they stay
// ignored for paddock and, across the fork and exec, for the agent, and
// returns them as a mask (bit N-1 for signal N). The Go runtime keeps an
// inherited SIG_IGN only for SIGHUP and SIGINT; the others are read from
// the runtime's record (sys.IgnoredAtStart). Left as they are: the signals
// the runtime or the reaper needs (see passedOnIgnored).
func keepIgnored(log zerolog.Logger) uint64 {
	ign, err := sys.IgnoredAtStart()
	if err != nil {
		log.Debug().Err(err).Msg("only SIGHUP and SIGINT are known to have been ignored at start")
		for _, sig := range []syscall.Signal{unix.SIGHUP, unix.SIGINT} {
			if signal.Ignored(sig) {
				ign |= 1 << (sig - 1)
			}
		}
	}
	var kept uint64
	for n := 1; n <= 64; n++ {
		if ign&(1<<(n-1)) == 0 || !passedOnIgnored(n) {
			continue
		}
		signal.Ignore(syscall.Signal(n))
		kept |= 1 << (n - 1)
	}
	return kept
}

// passedOnIgnored reports whether sig, ignored when paddock started, stays
// ignored for paddock and its agent. Not: SIGCHLD (ignored, the kernel
// would reap the agent behind the reaper's back), SIGURG and SIGPROF (the
// Go runtime's preemption and profiling), the synchronous signals (a real
// fault must end the process), and 32 to 34 (the C library's, 33 the Go
// runtime's too).
func passedOnIgnored(sig int) bool {
	switch syscall.Signal(sig) {
	case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD, unix.SIGURG, unix.SIGPROF:
		return false
	}
	for _, s := range syncSignals() {
		if syscall.Signal(sig) == s {
			return false
		}
	}
	return sig < 32 || sig > 34
}

// notIgnored leaves out of sigs those ignored (keepIgnored): they stay
// ignored, for paddock and, across the exec, for the agent.
func notIgnored(sigs []os.Signal) []os.Signal {
	out := sigs[:0:0]
	for _, sig := range sigs {
		if !signal.Ignored(sig) {
			out = append(out, sig)
		}
	}
	return out
}

// dropped reports whether forward drops sig rather than passing it on.
func dropped(sig os.Signal) bool {
	for _, d := range append(initDropped(), syncSignals()...) {
		if sig == d {
			return true
		}
	}
	return false
}
