// Package sched sets the scheduler time slice of paddock's own threads.
//
// A supervising thread works in bursts of a few microseconds while the agent
// waits on each answer. Under Linux's EEVDF scheduler a thread that asks for
// a short slice (sched_attr.sched_runtime for SCHED_NORMAL, Linux 6.12+) is
// picked sooner when it wakes and is not left runnable behind the agent it
// has just answered. Measured on the fork+exec workload (docs/perf.md):
// about 6% less time with paddock's threads at the shortest slice. Older
// kernels accept the call and ignore the slice.
package sched

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// SupervisorSlice is the slice paddock's threads ask for while they
// supervise: the kernel's minimum (it clamps to 0.1-100 ms).
const SupervisorSlice = 100 * time.Microsecond

// SetSlice sets the time slice of thread tid (0: the calling thread);
// slice 0 restores the kernel's default. Its nice value and flags are kept.
// A thread under a real-time, deadline or idle policy is left as it is: the
// slice belongs to the normal and batch classes, and whoever chose another
// policy for paddock meant it.
func SetSlice(tid int, slice time.Duration) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil
	}
	a.Runtime = uint64(slice.Nanoseconds())
	// Utilization clamps are left alone by leaving their flags out.
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
	if err := unix.SchedSetAttr(tid, a, 0); err != nil {
		return fmt.Errorf("sched_setattr(%d, slice %v): %w", tid, slice, err)
	}
	return nil
}

// SetProcessSlice sets the slice of every thread of this process (see
// SetSlice). Threads started later inherit it from the thread that starts
// them, and so do child processes: a thread that forks something that is
// not paddock's (the agent) first restores its own with SetSlice(0, 0).
func SetProcessSlice(slice time.Duration) error {
	done := map[int]bool{}
	// Threads may start while the list is read; a second pass that finds
	// none new means every thread has the slice, and new ones inherit it.
	for pass := 0; pass < 8; pass++ {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			done[tid], fresh = true, true
			if err := SetSlice(tid, slice); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
	return errors.New("set the scheduler slice: threads kept starting while they were listed")
}

// threads lists this process's thread ids.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
