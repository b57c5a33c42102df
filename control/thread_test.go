package control

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// splitMainEnv makes this test binary, run again as a child, give its
// main thread a descriptor table of its own before any test runs.
const splitMainEnv = "PADDOCK_TEST_SPLIT_MAIN_TABLE"

// init, in that child only, does to the main thread what a launching
// thread's table does when it ends up parked there: the main goroutine is
// locked to it and it takes a copy of the table, so that whatever other
// threads open from then on is not in /proc/self/fd. The Go runtime's
// poller is set up first (os.Pipe registers with it), so that the main
// thread's table keeps the poller's descriptors.
func init() {
	if os.Getenv(splitMainEnv) == "" {
		return
	}
	runtime.LockOSThread()
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	r.Close()
	w.Close()
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		os.Exit(3) // the parent skips: no table of its own to be had
	}
}

// TestListenWithMainThreadsTableApart: the control socket is bound through
// the descriptor of its directory as this thread sees it, not as the main
// thread does: a session started after a launch left the main thread with
// a table of its own still gets its socket (it failed, under load, with
// "bind: no such file or directory" when bound through /proc/self/fd).
func TestListenWithMainThreadsTableApart(t *testing.T) {
	if os.Getenv(splitMainEnv) != "" {
		t.Setenv("XDG_RUNTIME_DIR", "")
		t.Setenv("TMPDIR", os.Getenv("PADDOCK_TEST_DIR"))
		s, err := Listen(Options{}, &recorder{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Call(s.Path(), Request{Op: OpPs}); err != nil {
			t.Errorf("Call: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenWithMainThreadsTableApart$", "-test.count=1")
	cmd.Env = append(os.Environ(), splitMainEnv+"=1", "PADDOCK_TEST_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		t.Skip("needs unshare(CLONE_FILES): refused in the child")
	}
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child with the main thread's table apart: %v\n%s", err, out)
	}
}
