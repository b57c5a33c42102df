package supervisor

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// maxWaiting bounds the decisions that may wait (see call.mayWait) taken
// off the loops at once. Each ends within the deadlines of what it waits
// on (vram.SafeFiles, the background GPU detection); one more than this is
// refused at once with EAGAIN and a message, rather than queued behind them.
const maxWaiting = 64

// maxStalledReads bounds the reads of model files a session has running
// at once, those abandoned at their deadline included (vram.ReadSlots): a
// read that never returns (a stalled FUSE or NFS mount) holds a thread.
const maxStalledReads = 16

// workers runs the decisions that may wait, each on a goroutine of its
// own with a world of its own, so that the loop that received one goes
// straight back to its receive: a signal is never decided behind an exec
// that reads a model file. A decision's answer does not depend on the
// order of answers (notification ids are independent; a ptrace stop waits
// for its own answer), so they may finish in any order.
type workers struct {
	slots chan struct{}
}

func newWorkers() *workers { return &workers{slots: make(chan struct{}, maxWaiting)} }

// start runs fn on a goroutine of its own, or reports false when
// maxWaiting decisions are already waiting.
func (p *workers) start(fn func()) bool {
	select {
	case p.slots <- struct{}{}:
	default:
		return false
	}
	go func() {
		defer func() { <-p.slots }()
		fn()
	}()
	return true
}

// serve is the notify loop: receive, decide, hand the decision to the
// pipeline (package report) and answer. It never exits on ENOENT or EINTR:
// the kernel answers a receive with ENOENT when the caller was interrupted
// before it (a loop that stopped there once hung its agent). It is
// not locked to a thread: nothing it does belongs to one, and its periodic
// yield then costs no thread handoff (measured: a locked loop spent about
// 1% of a fork+exec run in Gosched's handoffs).
func (s *Session) serve(w *liveWorld) {
	defer close(s.handing.stopped)
	defer w.close()
	var n seccomp.Notif
	var y yielder
	// A direct launch: the first notification comes from the root (the
	// launching thread, the only other holder of the filter, makes no
	// trapped call), normally its own execve; it is pinned before the
	// answer lets the agent run.
	pinRoot := s.rootSet != nil
	if s.serving != nil {
		close(s.serving) // in its first receive next (see launchDirect)
	}
	for {
		y.maybe()
		if s.handing.wake >= 0 {
			// A session that may hand over (--keep-orphans): nothing is
			// received once it has (whatever comes goes to the keeper,
			// which holds the listener too). The others pay nothing here.
			if s.handing.asked.Load() {
				return
			}
			if !s.handing.ready(s.listener) {
				continue
			}
		}
		n = seccomp.Notif{}
		if err := seccomp.Recv(s.listener, &n); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				// ENOENT also comes back at once, forever, when no task
				// uses the filter any more: stop then instead of spinning.
				if seccomp.FilterGone(s.listener) {
					return
				}
				continue
			}
			s.cfg.Log.Error().Err(err).Msg("seccomp notify receive failed; trapped syscalls will fail closed")
			return
		}
		if pinRoot {
			pinRoot = false
			s.agentForked()
			s.rootSet <- s.pinRoot(int(n.Pid))
		}
		c := w.read(int(n.Pid), n.Data.Arch, n.Data.Nr, n.Data.Args, s.listener, n.ID)
		if c.mayWait() {
			if c.wallHere() {
				// An open for writing is tried here first (wallhere.go):
				// where it might wait, nothing was done, and a worker
				// takes it from its start.
				c.here = true
				s.sendAnswer(c)
				c.here = false
				if !c.deferred {
					continue
				}
				c.deferred = false
				*c.req.Wall = c.wallRead
			}
			if c = c.moveTo(w.spare()); s.offload(c, s.sendAnswer) {
				// Let the decision run now, on this thread, before the
				// next receive: a goroutine made just before a blocking
				// receive waits for the runtime's monitor to hand it a
				// processor (measured: a unix connect carried out by the
				// default wall cost 285 us against 29 bare); if it blocks,
				// the monitor hands this loop on instead.
				runtime.Gosched()
				continue
			}
		}
		s.sendAnswer(c)
	}
}

// sendAnswer decides c and answers its notification, once the pipeline
// lets the answer go (report.After): the loop never waits for a message.
func (s *Session) sendAnswer(c *call) {
	r, after, waiting := s.answer(c)
	if !waiting {
		return
	}
	if after == nil {
		// The common case, on the hottest path: no closure, no goroutine.
		s.send(c.listener, c.id, r)
		return
	}
	listener, id := c.listener, c.id
	s.inflight.Add(1)
	report.After(after, func() {
		defer s.inflight.Done()
		s.send(listener, id, r)
	})
}

// send answers notification id on listener with r.
func (s *Session) send(listener int, id uint64, r answer.Answer) {
	if err := seccomp.Answer(listener, id, r); err != nil {
		s.cfg.Log.Error().Err(err).Uint64("id", id).Msg("seccomp notify answer failed")
	}
}

// offload has a worker decide c and hand it to done. With every worker
// busy it reports false, and c carries a refusal (EAGAIN, with a message)
// for its caller to answer at once: nothing is queued behind the waiting.
func (s *Session) offload(c *call, done func(*call)) bool {
	s.inflight.Add(1) // until done returns (a hand-over waits for it)
	if s.workers.start(func() {
		defer s.inflight.Done()
		done(c)
	}) {
		return true
	}
	s.inflight.Done()
	c.preset = &policy.Decision{
		Syscall: c.req.Syscall.String(), Errno: unix.EAGAIN, Rule: audit.RuleUndecidable, Refusal: true, Exec: c.req.Exec, Action: audit.ExecDenied,
		Message: fmt.Sprintf("paddock refused %s from pid %d for now: %d decisions that read files or wait for GPU detection are already under way, and paddock queues none behind them. Way out: retry in a moment.",
			c.req.Syscall, c.req.Tid, maxWaiting),
	}
	return false
}

// yieldEvery is how often a loop that answers the agent (the notify loop,
// the ptrace reaper) passes through Go's scheduler. A goroutine that never
// does is seen by the runtime's monitor (sysmon) as running one time slice
// for over 10 ms (forcePreemptNS); from then on sysmon takes its P away
// during every blocking receive, goes to sleep with every P idle, and must
// be woken on the way out of the next receive: one more thread run before
// the caller is answered. Measured on the spaced kill loop (docs/perf.md):
// p50 about 50 us without the yield, 33-36 with it. A yield is not free
// either (with a P idle, Go wakes another thread, which takes the
// goroutine over: two futex calls and a migration, about 80 us of CPU on
// this VM), so it comes as seldom as stays under 10 ms: the time slice
// then never looks older than yieldEvery plus one notification's wait.
const yieldEvery = 7 * time.Millisecond

// yielder passes through the scheduler every yieldEvery.
type yielder struct{ last time.Time }

func (y *yielder) maybe() {
	if now := time.Now(); now.Sub(y.last) > yieldEvery {
		runtime.Gosched()
		y.last = now
	}
}
