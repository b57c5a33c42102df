package sched

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// RealTimePriority is the SCHED_FIFO priority a hurried thread takes: the
// lowest there is, above every normal thread and below every real-time
// one that anyone else chose.
const RealTimePriority = 1

// Budget bounds a real-time thread: at most Share of one CPU, measured
// over each Window. A thread that used more in a window runs with its
// normal setting for the next ones, until a window in which it used no
// more (the kernel's own bound, sched_rt_runtime_us, is for the whole
// machine, 95% of it by default: no bound for one thread's neighbours).
type Budget struct {
	Share  float64
	Window time.Duration
}

// SupervisorBudget is the notify loop's: a fifth of a CPU, measured every
// 250 ms (the watch wakes 4 times a second). A busy exec workload costs
// the loop a few percent of a CPU (docs/perf.md); a hot loop of trapped
// calls, or a storm of refusals, uses more and is answered at the normal
// setting after one window, as before real time.
var SupervisorBudget = Budget{Share: 0.2, Window: 250 * time.Millisecond}

// RealTime keeps one thread under SCHED_FIFO while it stays within its
// budget. Under contention a woken thread of the normal class waits for
// the scheduler to pick it among the busy ones, for each trapped call the
// loop answers (docs/perf.md, issue 35); a real-time thread runs at once.
// Threads and processes started from it do not inherit the policy
// (SCHED_FLAG_RESET_ON_FORK).
type RealTime struct {
	budget Budget

	mu     sync.Mutex
	tid    int
	normal Setting
	on     bool // under SCHED_FIFO now
	over   int  // windows over budget so far
	stop   chan struct{}
	done   chan struct{}
	// changed, when set (tests), hears each change of policy the
	// governor makes: true for real time, false for the normal setting.
	changed chan bool
}

// NewRealTime returns a RealTime for budget b whose thread, when over
// budget, takes normal (SetNormal changes it).
func NewRealTime(b Budget, normal Setting) *RealTime {
	return &RealTime{budget: b, normal: normal}
}

// Take puts the calling thread, which the caller has locked to its
// goroutine and keeps so, under SCHED_FIFO at RealTimePriority and starts
// watching its budget. Without CAP_SYS_NICE and without an RLIMIT_RTPRIO of
// at least RealTimePriority it fails with EPERM and changes nothing; a
// thread already under a real-time or deadline policy (someone chose it)
// is left alone, with an error.
func (r *RealTime) Take() error {
	if r.budget.Share <= 0 || r.budget.Window <= 0 {
		return fmt.Errorf("real time: budget %+v: want a share above 0 over a window above 0", r.budget)
	}
	tid := unix.Gettid()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return fmt.Errorf("real time: thread %d is under policy %d already, left as it is", tid, a.Policy)
	}
	if err := fifo(tid); err != nil {
		return err
	}
	clock := threadClock(tid)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		_ = demote(tid, r.normal)
		return fmt.Errorf("real time: read thread %d's CPU time: %w", tid, err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	r.mu.Lock()
	r.tid, r.on, r.stop, r.done = tid, true, stop, done
	r.mu.Unlock()
	go r.govern(stop, done, clock, ts.Nano())
	return nil
}

// SetNormal sets what the thread takes when over budget, and gives it
// that now if it is over budget now.
func (r *RealTime) SetNormal(s Setting) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.normal = s
	if r.tid == 0 || r.on {
		return nil
	}
	return demote(r.tid, s)
}

// Over reports how many windows the thread went over its budget in.
func (r *RealTime) Over() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.over
}

// Stop ends the watch and gives the thread its normal setting: to be
// called on the thread itself, before its goroutine gives it up (a thread
// that has exited is skipped).
func (r *RealTime) Stop() error {
	r.mu.Lock()
	stop, done, tid := r.stop, r.done, r.tid
	r.stop = nil
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	close(stop)
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	if err := demote(tid, r.normal); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}

// govern reads the thread's CPU time every window and moves it between
// real time and its normal setting by what it used in the window.
func (r *RealTime) govern(stop <-chan struct{}, done chan<- struct{}, clock int32, last int64) {
	defer close(done)
	t := time.NewTicker(r.budget.Window)
	defer t.Stop()
	since := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var ts unix.Timespec
		if err := unix.ClockGettime(clock, &ts); err != nil {
			return // the thread is gone
		}
		now := time.Now()
		used, elapsed := ts.Nano()-last, now.Sub(since)
		last, since = ts.Nano(), now
		over := float64(used) > r.budget.Share*float64(elapsed.Nanoseconds())
		r.mu.Lock()
		var err error
		changed := false
		switch {
		case over && r.on:
			if err = demote(r.tid, r.normal); err == nil {
				r.on, changed = false, true
			}
			r.over++
		case over:
			r.over++
		case !r.on:
			if err = fifo(r.tid); err == nil {
				r.on, changed = true, true
			}
		}
		on, note := r.on, r.changed
		r.mu.Unlock()
		if errors.Is(err, unix.ESRCH) {
			return
		}
		if changed && note != nil {
			note <- on
		}
	}
}

// fifo puts thread tid under SCHED_FIFO at RealTimePriority, reset on fork.
func fifo(tid int) error {
	a := unix.SchedAttr{
		Size:     unix.SizeofSchedAttr,
		Policy:   unix.SCHED_FIFO,
		Priority: RealTimePriority,
		Flags:    unix.SCHED_FLAG_RESET_ON_FORK,
	}
	if err := unix.SchedSetAttr(tid, &a, 0); err != nil {
		return fmt.Errorf("sched_setattr(%d, SCHED_FIFO %d): %w (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of %d)", tid, RealTimePriority, err, RealTimePriority)
	}
	return nil
}

// demote gives thread tid, real-time or not, setting s of the normal class.
func demote(tid int, s Setting) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr(%d): %w", tid, err)
	}
	return set(tid, a, s)
}

// threadClock is thread tid's CPU-time clock (the kernel's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), what pthread_getcpuclockid
// returns), readable by any thread of the process.
func threadClock(tid int) int32 {
	return int32(^uint32(tid)<<3 | 6)
}
