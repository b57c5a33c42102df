package agent

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
)

// world is policy.World for one call of a container's process: every pid
// it takes and gives is a number of the container's PID namespace, as the
// caller wrote it; behind each lookup it pins the host process with a
// pidfd, so that the answer can be re-validated before the call runs.
type world struct {
	c    *container
	pins map[int]int // container pid -> pidfd
}

func newWorld(c *container) *world {
	return &world{c: c, pins: map[int]int{}}
}

// close releases the pins.
func (w *world) close() {
	for _, fd := range w.pins {
		unix.Close(fd)
	}
	clear(w.pins)
}

// alive reports whether the process pinned as container pid n has not been
// reaped since it was looked up (so n still names it).
func (w *world) alive(n int) bool {
	fd, ok := w.pins[n]
	return ok && !ownership.Reaped(fd)
}

// Lookup implements policy.Processes.
func (w *world) Lookup(n int) (policy.Target, error) {
	t := policy.Target{Pid: n}
	h, fd, st, err := w.pin(n)
	if err != nil || fd < 0 {
		return t, err // Gone when err is nil
	}
	if old, ok := w.pins[n]; ok {
		unix.Close(old)
	}
	w.pins[n] = fd
	t.Comm, t.StartTime = st.Comm, st.StartTime
	switch {
	// pin found h with number n in the container's PID namespace (any
	// number, where the container shares the node's).
	case !w.c.inGroup(h) && !w.c.exitedOwn(st) || (w.c.shared && !w.c.inPidNS(h)):
		t.Rel = audit.RelForeign
	case w.c.lifeline(h, st.StartTime):
		t.Rel = audit.RelAgentRoot
	default:
		t.Rel = audit.RelOwned
	}
	return t, nil
}

// pin finds the host process that is the container's n, pins it with a
// pidfd, and reads its stat after the pin: the pid still names the process
// found only if it still has number n inside, which is checked then. A
// cached translation is checked that way alone, and looked up afresh when
// it fails. fd is -1 when the container has no process n.
func (w *world) pin(n int) (h, fd int, st procfs.Stat, err error) {
	h, fresh := w.c.cached(n), false
	for {
		if h == 0 {
			if h, err = w.c.host(n); err != nil || h == 0 {
				return 0, -1, st, err
			}
			fresh = true
		}
		fd, err = unix.PidfdOpen(h, 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return 0, -1, st, fmt.Errorf("pidfd_open(%d): %w", h, err)
		}
		if err == nil {
			st, err = w.c.fs.Stat(h)
			if err == nil {
				var l int
				if l, err = w.c.local(h); err == nil && l != n {
					err = procfs.ErrNotFound
				}
			}
			if err == nil {
				return h, fd, st, nil
			}
			unix.Close(fd)
			if !errors.Is(err, procfs.ErrNotFound) {
				return 0, -1, st, err
			}
		}
		if fresh {
			return 0, -1, st, nil // gone
		}
		h = 0 // a stale translation: look n up afresh
	}
}

// creds reads container process n's status.
func (w *world) creds(n int) (procfs.Creds, bool, error) {
	h, err := w.c.host(n)
	if err != nil || h == 0 {
		return procfs.Creds{}, false, err
	}
	cr, err := w.c.fs.Creds(h)
	if errors.Is(err, procfs.ErrNotFound) {
		return cr, false, nil
	}
	return cr, err == nil, err
}

// last is the last entry of an NS* list (0 when empty).
func last(l []int) int {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1]
}

// Pgrp implements policy.Processes.
func (w *world) Pgrp(n int) (int, error) {
	cr, ok, err := w.creds(n)
	if !ok {
		return 0, err
	}
	return last(cr.NSpgid), nil
}

// Sid implements policy.Processes.
func (w *world) Sid(n int) (int, error) {
	cr, ok, err := w.creds(n)
	if !ok {
		return 0, err
	}
	return last(cr.NSsid), nil
}

// ThreadOf implements policy.Processes.
func (w *world) ThreadOf(tid, pid int) bool {
	t, err := w.Tgid(tid)
	return err == nil && t == pid
}

// Tgid implements policy.Processes.
func (w *world) Tgid(tid int) (int, error) {
	cr, ok, err := w.creds(tid)
	if !ok {
		return 0, err
	}
	return w.c.local(cr.Tgid)
}

// Group implements policy.Processes: the processes whose group is pgid, among
// those the container can see (its own, which is every process of its PID
// namespace but those of other cgroups; a hostPID container's group may
// hold the node's).
func (w *world) Group(pgid int) ([]policy.Target, error) {
	pids, err := w.c.fs.Pids()
	if err != nil {
		return nil, err
	}
	var out []policy.Target
	for _, h := range pids {
		if ns, err := w.c.fs.Namespace(h, "pid"); err != nil || ns != w.c.pidns {
			continue
		}
		cr, err := w.c.fs.Creds(h)
		if err != nil || last(cr.NSpgid) != pgid {
			continue
		}
		// The host pid is known here: cached, Lookup's translation
		// need not scan /proc again for each member.
		n := last(cr.NSpid)
		w.c.remember(n, h)
		t, err := w.Lookup(n)
		if err != nil {
			return nil, err
		}
		if t.Rel != audit.RelGone {
			out = append(out, t)
		}
	}
	return out, nil
}

// FdPid implements policy.Processes.
func (w *world) FdPid(tid, fd int) (int, error) {
	h, err := w.c.host(tid)
	if err != nil {
		return 0, err
	}
	if h == 0 {
		return 0, fmt.Errorf("thread %d is gone", tid)
	}
	p, err := w.c.fs.FdTarget(h, fd)
	if err != nil || p <= 0 {
		return p, err
	}
	return w.c.local(p)
}

// Owned implements policy.Processes.
func (w *world) Owned(max int) ([]policy.Target, int) {
	return w.c.listed(max, w.owned)
}

// owned lists at most max of the container's processes, its first
// process first, then by pid, and counts them all.
func (w *world) owned(max int) ([]policy.Target, int) {
	hosts, err := w.c.members()
	if err != nil {
		return nil, 0
	}
	var first, out []policy.Target
	total := 0
	for _, h := range hosts {
		st, err := w.c.fs.Stat(h)
		if err != nil {
			continue
		}
		n, err := w.c.local(h)
		if err != nil || n == 0 {
			continue
		}
		total++
		t := policy.Target{Pid: n, Comm: st.Comm, StartTime: st.StartTime, Rel: audit.RelOwned}
		if w.c.lifeline(h, st.StartTime) {
			t.Rel = audit.RelAgentRoot
			first = append(first, t)
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b policy.Target) int { return a.Pid - b.Pid })
	out = append(first, out...)
	return out[:min(len(out), max)], total
}
