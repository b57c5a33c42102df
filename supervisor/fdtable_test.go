package supervisor

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Once the agent is forked, no thread of the supervisor holds a copy of a
// descriptor the session closes: the launching thread's table of its own
// (fdtable.go) is emptied right after the fork, whether the thread ends or,
// being the main thread, is only parked; the listener it made reached the
// session's table. (That the agent is forked without the listener is
// test/sweep_test.go's TestKilledAtTheAgentsFork.)
func TestLaunchingThreadKeepsNoDescriptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "marker")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	startSession(t, 0, Config{Backend: BackendSeccomp})
	f.Close()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	listeners := 0
	for _, task := range tasks {
		fds, _ := os.ReadDir("/proc/self/task/" + task.Name() + "/fd")
		for _, fd := range fds {
			target, _ := os.Readlink("/proc/self/task/" + task.Name() + "/fd/" + fd.Name())
			if target == path {
				t.Errorf("thread %s still holds %s, which the session closed, as descriptor %s", task.Name(), path, fd.Name())
			}
			if strings.Contains(target, "seccomp notify") {
				listeners++
			}
		}
	}
	if listeners == 0 {
		t.Error("no thread holds the seccomp listener")
	}
}

// onOwnThread never runs f on the main thread, which the Go runtime would
// park, with all f did to it, instead of ending (the goroutine it starts
// lands there now and then: a launch there once left /proc/self/fd empty
// for the rest of the process, and every later control socket failed to
// bind through it).
func TestOnOwnThreadIsNeverTheMainThread(t *testing.T) {
	for range 200 {
		tid := make(chan int, 1)
		onOwnThread(func() { tid <- unix.Gettid() })
		if got := <-tid; got == unix.Getpid() {
			t.Fatalf("f ran on the main thread (tid %d)", got)
		}
	}
}

// The launching thread's emptied table keeps the Go runtime's poller: the
// runtime wakes the poller from whatever thread it runs on, and a wake-up
// from a thread without the poller's eventfd ends the whole process
// ("netpollBreak write failed with 9"; a launching thread that blocks on a
// channel hands its P, timers and all, over through that path). Here a
// thread with its own table, released, waits on timers while the poller
// is in use; before release kept the poller, the test binary died.
func TestReleasedThreadKeepsTheRuntimesPoller(t *testing.T) {
	l, err := newPollerUser()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kept := make(chan []string, 1)
	onOwnThread(func() { // as a launch does: the thread ends with its table
		b := newListenerBridge()
		defer b.close()
		b.detach()
		if !b.own {
			kept <- nil
			return
		}
		b.release()
		for i := range 3000 {
			time.Sleep(time.Duration(i%50) * time.Microsecond)
		}
		var targets []string
		fds, _ := os.ReadDir("/proc/thread-self/fd")
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/thread-self/fd/" + fd.Name()); err == nil {
				targets = append(targets, target)
			}
		}
		kept <- targets
	})
	targets := <-kept
	if targets == nil {
		t.Skip("needs unshare(CLONE_FILES)")
	}
	for _, target := range targets {
		if !runtimeFile(target) && !strings.HasSuffix(target, "/fd") {
			t.Errorf("the released thread still holds %s", target)
		}
	}
}

// newPollerUser puts the runtime's network poller to work: a listener
// with an Accept waiting on it.
func newPollerUser() (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go l.Accept()
	return l, nil
}
