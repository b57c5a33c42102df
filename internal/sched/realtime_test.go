package sched

import (
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// policyOf is thread tid's scheduling policy, priority and nice value.
func policyOf(t *testing.T, tid int) (policy uint32, prio uint32, nice int32) {
	t.Helper()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatalf("sched_getattr(%d): %v", tid, err)
	}
	return a.Policy, a.Priority, a.Nice
}

// takeOrSkip takes real time on the calling (locked) thread, skipping where
// it is not permitted.
func takeOrSkip(t *testing.T, r *RealTime) {
	t.Helper()
	if err := r.Take(); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("needs CAP_SYS_NICE or an RLIMIT_RTPRIO of %d: %v", RealTimePriority, err)
		}
		t.Fatalf("Take: %v", err)
	}
}

// TestRealTimeTake: the thread runs SCHED_FIFO at the lowest priority, a
// process it starts does not, and Stop gives it its normal setting.
func TestRealTimeTake(t *testing.T) {
	tid := lockThread()
	r := NewRealTime(Budget{Share: 0.5, Window: 50 * time.Millisecond}, Setting{Nice: 2})
	takeOrSkip(t, r)
	if p, prio, _ := policyOf(t, tid); p != unix.SCHED_FIFO || prio != RealTimePriority {
		t.Errorf("after Take: policy %d priority %d, want SCHED_FIFO (%d) at %d", p, prio, unix.SCHED_FIFO, RealTimePriority)
	}
	// os/exec forks from this very thread: the child is reset to the
	// normal class (SCHED_FLAG_RESET_ON_FORK), and grep reads its own.
	out, err := exec.Command("grep", "-m1", "^policy", "/proc/self/sched").Output()
	if err != nil {
		t.Skipf("needs grep and /proc/PID/sched (CONFIG_SCHED_DEBUG): %v", err)
	}
	if f := strings.Fields(string(out)); len(f) != 3 || f[2] != "0" {
		t.Errorf("a child of the real-time thread has %q, want policy 0 (SCHED_NORMAL)", out)
	}
	if err := r.Take(); err == nil {
		t.Error("a second Take on a real-time thread succeeded; want it left as it is, with an error")
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p, _, nice := policyOf(t, tid); p != unix.SCHED_NORMAL || nice != 2 {
		t.Errorf("after Stop: policy %d nice %d, want SCHED_NORMAL at its normal nice 2", p, nice)
	}
}

// TestRealTimeBudget: a thread that keeps its CPU past its share of a
// window is put back to its normal setting; once it idles through a
// window, it is real-time again.
func TestRealTimeBudget(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: on one, the real-time spin below leaves the governor only the kernel's real-time throttling to run in")
	}
	tid := lockThread()
	r := NewRealTime(Budget{Share: 0.2, Window: 20 * time.Millisecond}, Setting{})
	r.changed = make(chan bool, 8)
	takeOrSkip(t, r)
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := r.SetNormal(Setting{Nice: 3}); err != nil {
		t.Fatalf("SetNormal while real-time: %v", err)
	}
	if p, _, _ := policyOf(t, tid); p != unix.SCHED_FIFO {
		t.Fatalf("SetNormal while within budget changed the policy to %d", p)
	}
	// Spin, real-time, until the governor takes real time away (it
	// runs on the other CPU); a minute bounds a governor that never does.
	limit := time.Now().Add(time.Minute)
spin:
	for {
		select {
		case on := <-r.changed:
			if on {
				t.Fatal("the governor gave real time to a thread over budget")
			}
			break spin
		default:
		}
		if time.Now().After(limit) {
			t.Fatal("a thread spinning past its budget kept real time for a minute")
		}
	}
	if p, _, nice := policyOf(t, tid); p != unix.SCHED_NORMAL || nice != 3 {
		t.Errorf("over budget: policy %d nice %d, want SCHED_NORMAL at the normal nice 3", p, nice)
	}
	if r.Over() < 1 {
		t.Errorf("Over() = %d after a window over budget", r.Over())
	}
	// Idle: the next window within budget gives real time back.
	select {
	case on := <-r.changed:
		if !on {
			t.Fatal("the governor took real time twice")
		}
	case <-time.After(time.Minute):
		t.Fatal("an idle thread was not given real time back within a minute")
	}
	if p, _, _ := policyOf(t, tid); p != unix.SCHED_FIFO {
		t.Errorf("back within budget: policy %d, want SCHED_FIFO", p)
	}
}

// TestRealTimeBadBudget: a budget without a share or a window is refused
// and the thread is left alone.
func TestRealTimeBadBudget(t *testing.T) {
	tid := lockThread()
	for _, b := range []Budget{{}, {Share: 0.2}, {Window: time.Second}} {
		if err := NewRealTime(b, Setting{}).Take(); err == nil || !strings.Contains(err.Error(), "budget") {
			t.Errorf("Take with budget %+v: %v, want an error naming the budget", b, err)
		}
		if p, _, _ := policyOf(t, tid); p == unix.SCHED_FIFO {
			t.Errorf("budget %+v: the thread went real-time", b)
		}
	}
}

// TestApplyLeavesRealTime: Supervise's per-thread setting leaves a
// real-time thread as it is (the notify loop's, or one the user chose).
func TestApplyLeavesRealTime(t *testing.T) {
	tid := lockThread()
	r := NewRealTime(Budget{Share: 0.5, Window: time.Second}, Setting{})
	takeOrSkip(t, r)
	t.Cleanup(func() { _ = r.Stop() })
	if err := Apply(tid, Setting{Slice: SupervisorSlice, Nice: 5}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if p, prio, _ := policyOf(t, tid); p != unix.SCHED_FIFO || prio != RealTimePriority {
		t.Errorf("after Apply: policy %d priority %d, want it left at SCHED_FIFO %d", p, prio, RealTimePriority)
	}
}
