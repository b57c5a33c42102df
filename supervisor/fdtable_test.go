package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
