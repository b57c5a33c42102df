package supervisor

import (
	"os"
	"os/exec"
	"testing"
)

// TestSameNSForgetsExitedCallers: a caller found in paddock's namespace is
// remembered while it lives, and forgotten once it has exited, so that a
// later caller of the same tid (in any namespace) is looked at again.
func TestSameNSForgetsExitedCallers(t *testing.T) {
	s := newSameNS()
	defer s.flush()
	s.add(os.Getpid())
	if !s.has(os.Getpid()) {
		t.Fatal("the test process itself is not remembered")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	s.add(pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if s.has(pid) {
		t.Errorf("pid %d is remembered after it was reaped", pid)
	}
	if _, ok := s.fds[pid]; ok {
		t.Errorf("pid %d's pin was not dropped", pid)
	}
	var none *sameNS
	none.add(os.Getpid())
	if none.has(os.Getpid()) {
		t.Error("a nil sameNS remembers")
	}
}
