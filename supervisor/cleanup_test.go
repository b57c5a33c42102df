package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

func TestNoChildren(t *testing.T) {
	if !noChildren() {
		t.Skip("needs a test process without children to start with")
	}
	c := startSleep(t)
	if noChildren() {
		t.Fatal("noChildren: true with a sleep running")
	}
	_ = c.Process.Kill()
	// Killed but not yet collected: a zombie is a child still.
	for i := 0; i < 100 && pidState(c.Process.Pid) != 'Z'; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if noChildren() {
		t.Error("noChildren: true with a zombie child")
	}
	_ = c.Wait()
	if !noChildren() {
		t.Error("noChildren: false once the child was collected")
	}
}

// pidState is the state letter of pid's stat line (0: unreadable).
func pidState(pid int) byte {
	st, err := procfs.Default().Stat(pid)
	if err != nil {
		return 0
	}
	return st.State
}

// A child the program hosting the supervisor starts itself (paddock's own
// nvidia-smi, for one) is left to its own waiter, which here comes 5 ms
// after the child exited: the reaper collects at once only the agent's
// processes (others after othersGrace), while the agent runs and after it
// has exited with leftovers running (KeepOrphans). Reaped by the
// supervisor, the child's os/exec Wait failed with "waitid: no child
// processes".
func TestReaperLeavesHostChildren(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	hostChild := func(stage string) {
		t.Helper()
		c := exec.Command(sh, "-c", "exit 3")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// A zombie a while before its Wait.
		for i := 0; i < 2000 && pidState(c.Process.Pid) != 'Z'; i++ {
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(5 * time.Millisecond)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("%s: the host's child: %v, want exit status 3", stage, err)
		}
	}
	pidFile := filepath.Join(t.TempDir(), "leftover")
	s := startSession(t, time.Minute, Config{Path: sh, Args: []string{"sh", "-c", `sleep 30 & echo $! > "$1"; sleep 0.5`, "sh", pidFile}, KeepOrphans: true})
	hostChild("while the agent runs")
	s.Wait()
	hostChild("after the agent, a leftover still running")
	// The leftover, now this process's child: ended here, not left to run.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := procfs.Default().Stat(pid); err == nil && st.PPid == os.Getpid() {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}
