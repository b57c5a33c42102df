// Package sched sets how paddock's own threads are scheduled while they
// supervise.
//
// A supervising thread works in bursts of a few microseconds while the agent
// waits on each answer. Either of two settings has it run as soon as it is
// woken, rather than behind the agent it has just answered:
//   - where paddock may raise its priority (CAP_SYS_NICE), a nice value a
//     few steps below the one it was started with, as auditd's
//     priority_boost does for the same reason;
//   - otherwise the shortest scheduler slice (sched_attr.sched_runtime for
//     SCHED_NORMAL, Linux 6.12+; older kernels accept and ignore it), which
//     needs no privilege.
//
// Measured on the fork+exec workload (docs/perf.md). Threads and child
// processes inherit both settings, so paddock takes them only once the
// agent is forked.
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

// SupervisorBoost is how many nice steps below its own paddock's threads
// supervise when they may (auditd's default priority_boost is 4 too).
const SupervisorBoost = 4

// Setting is a thread's slice (0: the kernel's default) and nice value.
type Setting struct {
	Slice time.Duration
	Nice  int
}

// Current returns thread tid's (0: the calling thread's) nice value, with
// Slice 0: the kernel does not say whether a slice is its default, and the
// default is what paddock gives back.
func Current(tid int) (Setting, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return Setting{}, fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	return Setting{Nice: int(a.Nice)}, nil
}

// Apply gives thread tid (0: the calling thread) setting s, keeping its
// policy and flags. A thread under a real-time, deadline or idle policy is
// left as it is: the slice belongs to the normal and batch classes, and
// whoever chose another policy for paddock meant it. Lowering the nice
// value without CAP_SYS_NICE fails with EPERM and changes nothing.
func Apply(tid int, s Setting) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil
	}
	a.Runtime = uint64(s.Slice.Nanoseconds())
	a.Nice = int32(max(-20, min(19, s.Nice)))
	// Utilization clamps are left alone by leaving their flags out.
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
	if err := unix.SchedSetAttr(tid, a, 0); err != nil {
		return fmt.Errorf("sched_setattr(%d, slice %v, nice %d): %w", tid, s.Slice, a.Nice, err)
	}
	return nil
}

// ApplyProcess gives every thread of this process setting s (see Apply);
// a thread whose nice value may not be lowered that far takes the slice
// alone. Threads started later inherit the setting from the thread that
// starts them.
func ApplyProcess(s Setting) error {
	done := map[int]bool{}
	// Threads may start while the list is read; a pass that finds none new
	// means every thread has the setting, and new ones inherit it.
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
			err := Apply(tid, s)
			if errors.Is(err, unix.EPERM) {
				var own Setting
				if own, err = Current(tid); err == nil {
					err = Apply(tid, Setting{Slice: s.Slice, Nice: own.Nice})
				}
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
	return errors.New("set the threads' scheduling: threads kept starting while they were listed")
}

// Supervise gives this process's threads the supervising setting: a nice
// value boost steps below the calling thread's where that is permitted,
// else the short slice (with both, the slice adds nothing measurable to an
// exec-heavy workload and costs a hot signal loop about 7%, docs/perf.md).
// It returns what the calling thread had (the default slice, its nice
// value) and the setting taken.
func Supervise(slice time.Duration, boost int) (had, taken Setting, err error) {
	had, err = Current(0)
	if err != nil {
		return had, had, err
	}
	taken = Setting{Nice: had.Nice - boost}
	if boost <= 0 || Apply(0, taken) != nil {
		taken = Setting{Slice: slice, Nice: had.Nice}
	}
	return had, taken, ApplyProcess(taken)
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
