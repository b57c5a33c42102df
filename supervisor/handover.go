package supervisor

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
)

// handing is how the notify loop of a --keep-orphans session stops for a
// hand-over. Such a loop waits in poll(2) on its listener and on wake, an
// eventfd, before each receive (a receive itself is restarted after any
// signal Go catches, so nothing could interrupt it); HandOver sets asked
// and writes wake, and the loop returns at the top of its next turn. A
// notification it received before is decided and answered first: none is
// left taken and unanswered, which would hang its caller for good once
// paddock exits. stopped is closed when the loop has returned, for
// whatever reason. The poll costs a syscall per notification, so only
// sessions that may hand over have it (wake is -1 in the others).
type handing struct {
	asked   atomic.Bool
	wake    int
	stopped chan struct{}
}

// ready waits until the listener has a notification (or has no task left,
// which the receive then reports) and reports true, or reports false when
// it should look again: interrupted, or woken for a hand-over (asked).
func (h *handing) ready(listener int) bool {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}, {Fd: int32(h.wake), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, -1); err != nil {
		return false
	}
	return fds[1].Revents == 0
}

// Leftovers are what a --keep-orphans session hands on when its agent
// has exited and processes it started still run (HandOver): the
// listener of the filter they carry, and who they are.
type Leftovers struct {
	// Listener is a copy of the session's seccomp listener. While anyone
	// holds it, the leftovers' trapped calls wait for an answer; once
	// nobody does, the kernel answers each with ENOSYS.
	Listener *os.File
	// Processes are the processes the session owned at the hand-over,
	// in pid order.
	Processes []ownership.Identity
	// Comms are their names, by pid.
	Comms map[int]string
}

// ErrNothingLeft: HandOver found nothing to hand on (no process left, or
// no listener: the ptrace backend, whose tracees are let go instead).
var ErrNothingLeft = errors.New("no process of the session is left under its filter")

// HandOver stops the session's notify loop and returns its leftovers, for
// a keeper that answers their calls once paddock has exited (package
// leftover). It is for a KeepOrphans session on the seccomp backend,
// after Wait; until it returns, paddock goes on deciding their calls.
func (s *Session) HandOver() (Leftovers, error) {
	if !s.cfg.KeepOrphans || s.listener < 0 || s.backend != BackendSeccomp {
		return Leftovers{}, ErrNothingLeft
	}
	var left Leftovers
	left.Comms = map[int]string{}
	err := s.tree.ScanOwned(func(rel audit.Relation, st procfs.Stat) bool {
		left.Processes = append(left.Processes, ownership.IdentityOf(st))
		left.Comms[st.Pid] = st.Comm
		return true
	})
	if err != nil {
		return Leftovers{}, fmt.Errorf("list the processes left running: %w", err)
	}
	if len(left.Processes) == 0 {
		return Leftovers{}, ErrNothingLeft
	}
	// The copy first: the filter outlives this process from now on.
	fd, err := unix.FcntlInt(uintptr(s.listener), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return Leftovers{}, fmt.Errorf("copy the seccomp listener: %w", err)
	}
	left.Listener = os.NewFile(uintptr(fd), "seccomp-listener")
	s.stopServing()
	return left, nil
}

// stopServing stops the notify loop (see handing) and waits for every
// decision already received to be answered.
func (s *Session) stopServing() {
	s.handing.asked.Store(true)
	one := [8]byte{1, 0, 0, 0, 0, 0, 0, 1} // a nonzero uint64 in either byte order
	if _, err := unix.Write(s.handing.wake, one[:]); err != nil {
		s.cfg.Log.Debug().Err(err).Msg("could not wake the notify loop for the hand-over")
	}
	<-s.handing.stopped
	s.inflight.Wait()
}
