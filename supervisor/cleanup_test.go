package supervisor

import (
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
