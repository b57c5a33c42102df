package sched

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
)

// errNoSlice: /proc/PID/sched has no se.slice line (no EEVDF scheduler).
var errNoSlice = errors.New("no se.slice in /proc/PID/sched")

// readSlice reads thread tid's current slice from /proc (se.slice, in ns).
func readSlice(tid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/sched")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "se.slice" {
			ns, err := strconv.ParseInt(f[2], 10, 64)
			return time.Duration(ns), err
		}
	}
	return 0, errNoSlice
}

// readNice is thread tid's nice value.
func readNice(tid int) (int, error) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - p, err // the raw syscall answers 20 - nice
}

// sliceOf is readSlice for the test's goroutine: it skips where the kernel
// does not show slices.
func sliceOf(t *testing.T, tid int) time.Duration {
	t.Helper()
	d, err := readSlice(tid)
	switch {
	case errors.Is(err, errNoSlice):
		featuretest.RequireSince(t, features.Version{Major: 6, Minor: 6}, "the EEVDF scheduler (se.slice in /proc/PID/sched)", err)
	case err != nil:
		t.Skipf("needs /proc/PID/sched (CONFIG_SCHED_DEBUG): %v", err)
	}
	return d
}

// niceOf is readNice for the test's goroutine.
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	n, err := readNice(tid)
	if err != nil {
		t.Fatalf("getpriority(%d): %v", tid, err)
	}
	return n
}

// lockThread locks the test's goroutine to its thread and returns the
// thread's id. It is never unlocked: the thread ends with the test's
// goroutine, and what the test set on it with it. (Should that thread be
// the main one, Go keeps it, idle: the nice values below are chosen so
// that what stays on it agrees with the other tests.)
func lockThread() int {
	runtime.LockOSThread()
	return unix.Gettid()
}

// onNewThread reports the slice and nice value of a thread started now.
func onNewThread() (tid int, slice time.Duration, nice int, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		tid = unix.Gettid()
		if slice, err = readSlice(tid); err == nil {
			nice, err = readNice(tid)
		}
	}()
	<-done
	return tid, slice, nice, err
}

// customSlices skips unless the kernel honours a custom slice on tid.
func customSlices(t *testing.T, tid int, def time.Duration) {
	t.Helper()
	if got := sliceOf(t, tid); got == def && def != SupervisorSlice {
		featuretest.RequireSince(t, features.Version{Major: 6, Minor: 12}, "custom scheduler slices", fmt.Errorf("the slice stayed %v", got))
	}
}

func TestApply(t *testing.T) {
	tid := lockThread()
	def := sliceOf(t, tid)
	// Raising one's nice value needs no privilege (3 is also what
	// TestSupervise gives threads).
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 3); err != nil {
		t.Fatalf("setpriority: %v", err)
	}
	if err := Apply(0, Setting{Slice: SupervisorSlice, Nice: 3}); err != nil {
		t.Fatalf("Apply: %v", err)
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
}

// TestSupervise: every thread takes the supervising setting, new threads
// inherit it, and what it returns for the agent is what the process had.
// As root the nice value is boosted; without CAP_SYS_NICE the slice is
// shortened instead.
func TestSupervise(t *testing.T) {
	tid := lockThread()
	def := sliceOf(t, tid)
	// From a thread at nice 3, so that the boost is visible as root.
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 3); err != nil {
		t.Fatalf("setpriority: %v", err)
	}
	agent, taken, err := Supervise(SupervisorSlice, SupervisorBoost)
	t.Cleanup(func() {
		if err := ApplyProcess(Setting{}); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
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
		t.Fatalf("threads() = %v, %v: a Go process has several", tids, err)
	}
	for _, id := range tids {
		if got, n := sliceOf(t, id), niceOf(t, id); got != wantSlice || n != want.Nice {
			t.Errorf("thread %d: slice %v nice %d, want %v and %d", id, got, n, wantSlice, want.Nice)
		}
	}
	id, got, n, err := onNewThread()
	if err != nil {
		t.Fatalf("new thread: %v", err)
	}
	if got != wantSlice || n != want.Nice {
		t.Errorf("new thread %d: slice %v nice %d, want %v and %d", id, got, n, wantSlice, want.Nice)
	}
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
	tid := lockThread()
	def := sliceOf(t, tid)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Fatalf("capget: %v", err)
	}
	data[unix.CAP_SYS_NICE/32].Effective &^= 1 << (unix.CAP_SYS_NICE % 32)
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		t.Skipf("needs capset: %v", err)
	}
	agent, taken, err := Supervise(SupervisorSlice, SupervisorBoost)
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if agent != (Setting{}) || taken != (Setting{Slice: SupervisorSlice}) {
		t.Errorf("agent %+v, taken %+v; want the defaults and the short slice at nice 0", agent, taken)
	}
	customSlices(t, tid, def)
	if got, n := sliceOf(t, tid), niceOf(t, tid); got != SupervisorSlice || n != 0 {
		t.Errorf("slice %v nice %d, want %v and 0", got, n, SupervisorSlice)
	}
}
