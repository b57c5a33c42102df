package sched

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sliceOf reads thread tid's current slice from /proc (se.slice, in ns).
func sliceOf(t *testing.T, tid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/sched")
	if err != nil {
		t.Skipf("needs /proc/PID/sched (CONFIG_SCHED_DEBUG): %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "se.slice" {
			ns, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("se.slice %q: %v", f[2], err)
			}
			return time.Duration(ns)
		}
	}
	t.Skip("needs the EEVDF scheduler (Linux 6.6+): no se.slice in /proc/PID/sched")
	return 0
}

// onThread runs f on a thread of its own, so that what f sets dies with it.
func onThread(f func(tid int)) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		defer close(done)
		f(unix.Gettid())
	}()
	<-done
}

func TestSetSlice(t *testing.T) {
	onThread(func(tid int) {
		def := sliceOf(t, tid)
		// A nice value the test may set without privilege (raising it).
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 7); err != nil {
			t.Errorf("setpriority: %v", err)
			return
		}
		if err := SetSlice(0, SupervisorSlice); err != nil {
			t.Errorf("SetSlice: %v", err)
			return
		}
		got := sliceOf(t, tid)
		if got == def && def != SupervisorSlice {
			t.Skipf("needs custom scheduler slices (Linux 6.12+): the slice stayed %v", got)
		}
		if got != SupervisorSlice {
			t.Errorf("slice %v after SetSlice(%v)", got, SupervisorSlice)
		}
		if nice, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err != nil || 20-nice != 7 {
			t.Errorf("nice changed by SetSlice: getpriority %d, %v (want nice 7)", nice, err)
		}
		if err := SetSlice(0, 0); err != nil {
			t.Errorf("SetSlice(0): %v", err)
		}
		if got := sliceOf(t, tid); got != def {
			t.Errorf("slice %v after restoring the default, want %v", got, def)
		}
	})
}

func TestSetProcessSlice(t *testing.T) {
	def := sliceOf(t, unix.Gettid())
	if err := SetProcessSlice(SupervisorSlice); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SetProcessSlice(0); err != nil {
			t.Error(err)
		}
	})
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	if len(tids) < 2 {
		t.Fatalf("threads() = %v: a Go process has several", tids)
	}
	for _, tid := range tids {
		if got := sliceOf(t, tid); got != SupervisorSlice {
			if got == def {
				t.Skipf("needs custom scheduler slices (Linux 6.12+): thread %d kept %v", tid, got)
			}
			t.Errorf("thread %d: slice %v, want %v", tid, got, SupervisorSlice)
		}
	}
	// A thread started from now on inherits it.
	onThread(func(tid int) {
		if got := sliceOf(t, tid); got != SupervisorSlice {
			t.Errorf("new thread %d: slice %v, want %v", tid, got, SupervisorSlice)
		}
	})
}
