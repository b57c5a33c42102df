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

// niceOf is thread tid's nice value.
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatalf("getpriority(%d): %v", tid, err)
	}
	return 20 - p // the raw syscall answers 20 - nice
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

// customSlices skips unless the kernel honours a custom slice on tid.
func customSlices(t *testing.T, tid int, def time.Duration) {
	t.Helper()
	if got := sliceOf(t, tid); got == def && def != SupervisorSlice {
		t.Skipf("needs custom scheduler slices (Linux 6.12+): the slice stayed %v", got)
	}
}

func TestApply(t *testing.T) {
	onThread(func(tid int) {
		def := sliceOf(t, tid)
		// Raising one's nice value needs no privilege. (This thread may
		// outlive the test if it is the main thread: 3 is what
		// TestSupervise gives threads anyway.)
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 3); err != nil {
			t.Errorf("setpriority: %v", err)
			return
		}
		if err := Apply(0, Setting{Slice: SupervisorSlice, Nice: 3}); err != nil {
			t.Errorf("Apply: %v", err)
			return
		}
		customSlices(t, tid, def)
		if got := sliceOf(t, tid); got != SupervisorSlice {
			t.Errorf("slice %v after Apply, want %v", got, SupervisorSlice)
		}
		if n := niceOf(t, tid); n != 3 {
			t.Errorf("nice %d after Apply, want 3", n)
		}
		if err := Apply(0, Setting{Nice: 3}); err != nil {
			t.Errorf("Apply(default slice, nice 3): %v", err)
		}
		if got, n := sliceOf(t, tid), niceOf(t, tid); got != def || n != 3 {
			t.Errorf("slice %v nice %d after restoring, want %v and 3", got, n, def)
		}
	})
}

// TestSupervise: every thread takes the supervising setting, new threads
// inherit it, and what it returns for the agent is what the process had.
// As root the nice value is boosted; without CAP_SYS_NICE the slice is
// shortened instead.
func TestSupervise(t *testing.T) {
	onThread(func(tid int) {
		def := sliceOf(t, tid)
		// From a thread at nice 3, so that the boost is visible as root and
		// nothing else in the test process is affected by what stays.
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 3); err != nil {
			t.Errorf("setpriority: %v", err)
			return
		}
		agent, taken, err := Supervise(SupervisorSlice, SupervisorBoost)
		t.Cleanup(func() {
			if err := ApplyProcess(Setting{}); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Errorf("Supervise: %v", err)
			return
		}
		if agent != (Setting{Nice: 3}) {
			t.Errorf("agent setting %+v, want the default slice and nice 3", agent)
		}
		want := Setting{Slice: SupervisorSlice, Nice: 3}
		wantSlice := SupervisorSlice
		if unix.Setpriority(unix.PRIO_PROCESS, tid, -1) == nil {
			// Privileged: the boost was taken, and the slice left alone.
			_ = unix.Setpriority(unix.PRIO_PROCESS, tid, 3-SupervisorBoost)
			want, wantSlice = Setting{Nice: 3 - SupervisorBoost}, def
		}
		if taken != want {
			t.Errorf("taken %+v, want %+v", taken, want)
		}
		if want.Slice != 0 {
			customSlices(t, tid, def)
		}
		tids, err := threads()
		if err != nil || len(tids) < 2 {
			t.Errorf("threads() = %v, %v: a Go process has several", tids, err)
			return
		}
		for _, id := range tids {
			if got, n := sliceOf(t, id), niceOf(t, id); got != wantSlice || n != want.Nice {
				t.Errorf("thread %d: slice %v nice %d, want %v and %d", id, got, n, wantSlice, want.Nice)
			}
		}
		onThread(func(id int) {
			if got, n := sliceOf(t, id), niceOf(t, id); got != wantSlice || n != want.Nice {
				t.Errorf("new thread %d: slice %v nice %d, want %v and %d", id, got, n, wantSlice, want.Nice)
			}
		})
	})
}

// TestSuperviseWithoutCapSysNice: without the privilege to lower its nice
// value, the process supervises with the short slice instead. Run as root,
// the test drops CAP_SYS_NICE from one thread's effective set (capabilities
// belong to a thread) and supervises from there.
func TestSuperviseWithoutCapSysNice(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("needs root, to drop CAP_SYS_NICE from a thread (TestSupervise covers the unprivileged case)")
	}
	t.Cleanup(func() {
		if err := ApplyProcess(Setting{}); err != nil {
			t.Error(err)
		}
	})
	onThread(func(tid int) {
		def := sliceOf(t, tid)
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			t.Errorf("capget: %v", err)
			return
		}
		data[unix.CAP_SYS_NICE/32].Effective &^= 1 << (unix.CAP_SYS_NICE % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Skipf("needs capset: %v", err)
		}
		agent, taken, err := Supervise(SupervisorSlice, SupervisorBoost)
		if err != nil {
			t.Errorf("Supervise: %v", err)
			return
		}
		if agent != (Setting{}) || taken != (Setting{Slice: SupervisorSlice}) {
			t.Errorf("agent %+v, taken %+v; want the defaults and the short slice at nice 0", agent, taken)
		}
		customSlices(t, tid, def)
		if got, n := sliceOf(t, tid), niceOf(t, tid); got != SupervisorSlice || n != 0 {
			t.Errorf("slice %v nice %d, want %v and 0", got, n, SupervisorSlice)
		}
	})
}
