package supervisor

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
)

// Cleanup says what Wait did with the processes the agent left running.
type Cleanup struct {
	Left       int `json:"left"`       // owned processes still running when the agent exited
	Terminated int `json:"terminated"` // of those, gone after SIGTERM within the grace period
	Killed     int `json:"killed"`     // sent SIGKILL after the grace period
}

// leftover is one process the agent started and left running.
type leftover struct {
	pid, pidfd int
}

// leftovers lists the processes of the agent's tree still running (adopted
// processes are not the agent's to clean up, and neither are their children).
func (s *Session) leftovers() []leftover {
	if noChildren() {
		// Once the agent root is gone, everything of its tree is a
		// descendant of this child subreaper: no child, no leftover, and
		// no scan of every process on the machine.
		return nil
	}
	var out []leftover
	_ = s.tree.ScanOwned(func(rel audit.Relation, st procfs.Stat) bool {
		if rel != audit.RelOwned || st.State == 'Z' {
			return true
		}
		if _, adopted := s.tree.LeaseFor(st.Pid); adopted {
			return true
		}
		fd, err := unix.PidfdOpen(st.Pid, 0)
		if err != nil {
			return true
		}
		// The pidfd names the scanned process only if the pid still has the
		// scanned start time after it was opened.
		if now, err := s.fs.Stat(st.Pid); err != nil || now.StartTime != st.StartTime {
			unix.Close(fd)
			return true
		}
		out = append(out, leftover{pid: st.Pid, pidfd: fd})
		return true
	})
	return out
}

// noChildren reports whether this process has no child at all, in any
// state: waitid without waiting answers ECHILD then (children of every
// thread count, ptrace tracees included); anything else, a zombie not yet
// collected included, makes the caller scan.
func noChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
	return errors.Is(err, unix.ECHILD)
}

// alive reports whether a pinned process has not exited (a zombie has).
func (s *Session) alive(l leftover) bool {
	if ownership.Reaped(l.pidfd) {
		return false
	}
	st, err := s.fs.Stat(l.pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// cleanup sends SIGTERM to the agent's leftover processes, and SIGKILL to
// those still running after grace. Delivery goes through pidfds opened
// before the decision, so a reused pid is never hit.
func (s *Session) cleanup(grace time.Duration) Cleanup {
	left := s.leftovers()
	defer func() {
		for _, l := range left {
			unix.Close(l.pidfd)
		}
	}()
	c := Cleanup{Left: len(left)}
	if len(left) == 0 {
		return c
	}
	for _, l := range left {
		_ = unix.PidfdSendSignal(l.pidfd, syscall.SIGTERM, nil, 0)
	}
	deadline := time.Now().Add(grace)
	running := left
	for {
		var still []leftover
		for _, l := range running {
			if s.alive(l) {
				still = append(still, l)
			}
		}
		running = still
		if len(running) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Terminated = c.Left - len(running)
	for _, l := range running {
		_ = unix.PidfdSendSignal(l.pidfd, syscall.SIGKILL, nil, 0)
		c.Killed++
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		gone := true
		for _, l := range running {
			gone = gone && !s.alive(l)
		}
		if gone {
			break
		}
	}
	return c
}
