// Package policytest is an in-memory policy.World for tests and
// benchmarks of policy.Decide: processes by pid, threads by tid, pidfds and
// terminals by (tid, fd), all in maps that the caller fills.
package policytest

import (
	"errors"
	"fmt"
	"sort"
	"syscall"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/vram"
)

// ErrBroken is what Lookup and Pgrp return for a pid in World.Broken.
var ErrBroken = errors.New("read /proc/x/stat: input/output error")

// World is a table-driven policy.World. The zero value is an empty world;
// nil maps read as empty.
type World struct {
	Procs    map[int]policy.Target  // processes by pid
	Groups   map[int]int            // pid -> process group
	Sessions map[int]int            // pid -> session, where not its process group
	Threads  map[int]int            // tid -> pid, for non-leader threads only
	Fds      map[[2]int]int         // (tid, fd) -> pid a pidfd refers to (-1: reaped)
	Ttys     map[[2]int]int         // (tid, fd) -> foreground process group of the pty
	Terms    map[[2]int]policy.Term // (tid, fd) -> the terminal it reaches; absent: not open
	Admins   map[int]bool           // tids holding CAP_SYS_ADMIN
	Absent   map[string]bool        // paths that do not exist
	Parents  map[int]int            // pid -> parent pid (policy.Lineage; absent: 0)
	Signals  map[int][2]uint64      // pid -> caught, ignored signal masks
	Broken   map[int]bool           // Lookup and Pgrp fail for these pids
	// OwnGroups are the process groups GroupOwned answers true for: groups
	// in a session only the agent's processes can be in.
	OwnGroups map[int]bool
	Policy    guard.Policy // what Guard returns
	Budget    *vram.Budget // what VRAM returns
}

// Full is w as the whole world Decide consults: every part of it.
func (w World) Full() policy.World {
	return policy.World{Processes: w, Guard: w.Policy, Sessions: w, Terminals: w, Execs: w, Lineage: w}
}

// Stat implements policy.Lineage: a process of Procs, with its parent from
// Parents; a thread reads as gone.
func (w World) Stat(pid int) (ppid int, start uint64, found bool, err error) {
	if w.Broken[pid] {
		return 0, 0, false, ErrBroken
	}
	t, ok := w.Procs[pid]
	if !ok || t.Rel == audit.RelGone {
		return 0, 0, false, nil
	}
	return w.Parents[pid], t.StartTime, true, nil
}

// Dispositions implements policy.Lineage, from Signals.
func (w World) Dispositions(pid int) (caught, ignored uint64, err error) {
	if w.Broken[pid] {
		return 0, 0, ErrBroken
	}
	m := w.Signals[pid]
	return m[0], m[1], nil
}

// Lookup implements policy's world: a thread reads as its process with its
// own pid; an unknown pid is Gone.
func (w World) Lookup(pid int) (policy.Target, error) {
	if w.Broken[pid] {
		return policy.Target{}, ErrBroken
	}
	if t, ok := w.Procs[pid]; ok {
		return t, nil
	}
	if tg, ok := w.Threads[pid]; ok {
		t := w.Procs[tg]
		t.Pid = pid
		return t, nil
	}
	return policy.Target{Pid: pid, Rel: audit.RelGone}, nil
}

// Pgrp implements policy's world.
func (w World) Pgrp(pid int) (int, error) {
	if w.Broken[pid] {
		return 0, ErrBroken
	}
	if tg, ok := w.Threads[pid]; ok {
		pid = tg
	}
	return w.Groups[pid], nil
}

// Sid implements policy's world: a process's session is in Sessions, or
// else is its process group (a test world has one group per session).
func (w World) Sid(pid int) (int, error) {
	if sid, ok := w.Sessions[pid]; ok {
		return sid, nil
	}
	return w.Pgrp(pid)
}

// ThreadOf implements policy's world.
func (w World) ThreadOf(tid, pid int) bool { return tid == pid || w.Threads[tid] == pid }

// Tgid implements policy's world.
func (w World) Tgid(tid int) (int, error) {
	if _, ok := w.Procs[tid]; ok {
		return tid, nil
	}
	return w.Threads[tid], nil
}

// pids is every process's pid, in order, so that lists are deterministic.
func (w World) pids() []int {
	out := make([]int, 0, len(w.Procs))
	for pid := range w.Procs {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// Group implements policy's world, in pid order.
func (w World) Group(pgid int) ([]policy.Target, error) {
	var out []policy.Target
	for _, pid := range w.pids() {
		if w.Groups[pid] == pgid {
			out = append(out, w.Procs[pid])
		}
	}
	return out, nil
}

// GroupOwned implements policy's world from OwnGroups.
func (w World) GroupOwned(pgid, caller int) bool { return w.OwnGroups[pgid] }

// FdPid implements policy's world.
func (w World) FdPid(tid, fd int) (int, error) {
	if pid, ok := w.Fds[[2]int{tid, fd}]; ok {
		return pid, nil
	}
	return 0, fmt.Errorf("descriptor %d of %d is not a pidfd: %w", fd, tid, syscall.EBADF)
}

// Missing implements policy's world.
func (w World) Missing(tid int, path string) bool { return w.Absent[path] }

// TermPgrp implements policy's world.
func (w World) TermPgrp(tid, fd int) (int, error) {
	if pgrp, ok := w.Ttys[[2]int{tid, fd}]; ok {
		return pgrp, nil
	}
	return 0, errors.New("inappropriate ioctl for device")
}

// Terminal implements policy's world: a descriptor not in Terms is not
// open (EBADF); one of a pid in Broken cannot be read.
func (w World) Terminal(tid, fd int) (policy.Term, error) {
	if w.Broken[tid] {
		return policy.Term{}, ErrBroken
	}
	if t, ok := w.Terms[[2]int{tid, fd}]; ok {
		return t, nil
	}
	return policy.Term{}, fmt.Errorf("pidfd_getfd(%d, %d): %w", tid, fd, syscall.EBADF)
}

// SysAdmin implements policy's world from Admins; a pid in Broken cannot
// be read.
func (w World) SysAdmin(tid int) (bool, error) {
	if w.Broken[tid] {
		return false, ErrBroken
	}
	return w.Admins[tid], nil
}

// VRAM implements policy's world.
func (w World) VRAM() *vram.Budget { return w.Budget }

// Files implements policy's world: no files.
func (w World) Files(int) vram.Files { return vram.Files{} }

// Owned implements policy's world: the agent root, then the owned
// processes in pid order, and how many there are.
func (w World) Owned(max int) ([]policy.Target, int) {
	var root, out []policy.Target
	total := 0
	for _, pid := range w.pids() {
		switch t := w.Procs[pid]; t.Rel {
		case audit.RelAgentRoot:
			root = append(root, t)
		case audit.RelOwned:
			out = append(out, t)
		default:
			continue
		}
		total++
	}
	out = append(root, out...)
	return out[:min(len(out), max)], total
}
