package supervisor

import (
	"errors"
	"os/exec"
	"testing"
	"time"

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
// nvidia-smi, for one) is left to its own waiter: the reaper collects only
// the agent's processes, while the agent runs and after it has exited with
// leftovers running (KeepOrphans). Reaped by the supervisor, the child's
// os/exec Wait failed with "waitid: no child processes".
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
		// A zombie before its Wait, as long as a reaper takes to see it.
		for i := 0; i < 200 && pidState(c.Process.Pid) != 'Z'; i++ {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("%s: the host's child: %v, want exit status 3", stage, err)
		}
	}
	s := startSession(t, time.Minute, Config{Path: sh, Args: []string{"sh", "-c", "sleep 30 & sleep 0.5"}, KeepOrphans: true})
	hostChild("while the agent runs")
	s.Wait()
	hostChild("after the agent, a leftover still running")
}
