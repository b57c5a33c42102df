package proctest

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// status is a /proc/PID/status text with the given signal masks.
func status(pnd, shd, ign, cgt string) []byte {
	return []byte(strings.Join([]string{"Name:\tsleep", "State:\tS (sleeping)", "SigQ:\t0/63", "SigPnd:\t" + pnd, "ShdPnd:\t" + shd,
		"SigBlk:\t0000000000000000", "SigIgn:\t" + ign, "SigCgt:\t" + cgt, "CapInh:\t0000000000000000", ""}, "\n"))
}

func TestDoomed(t *testing.T) {
	const none = "0000000000000000"
	tests := []struct {
		name   string
		status []byte
		want   bool
	}{
		{"nothing pending", status(none, none, none, none), false},
		{"SIGKILL on the thread", status("0000000000000100", none, none, none), true},
		{"SIGTERM on the process", status(none, "0000000000004000", none, none), true},
		{"SIGTERM caught", status(none, "0000000000004000", none, "0000000000004000"), false},
		{"SIGUSR1 ignored", status("0000000000000200", none, "0000000000000200", none), false},
		{"SIGSTOP", status(none, "0000000000040000", none, none), false},
		{"SIGCHLD", status(none, "0000000000010000", none, none), false},
		{"a real-time signal", status(none, "0000000400000000", none, none), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := doomed(tc.status)
			if err != nil || got != tc.want {
				t.Fatalf("doomed = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := doomed([]byte("Name:\tx\nSigPnd:\tzz\n")); err == nil || !strings.Contains(err.Error(), "SigPnd") {
		t.Errorf("a bad mask: %v, want an error naming the line", err)
	}
	if _, err := doomed([]byte("Name:\tx\n")); err == nil || !strings.Contains(err.Error(), "no SigPnd line") {
		t.Errorf("no masks: %v, want an error naming the missing line", err)
	}
}

// A running child is alive; stopped, still alive; killed, it is not, from
// the kill on, though it answers signal 0 until it is reaped.
func TestAlive(t *testing.T) {
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	if !Alive(t, pid) {
		t.Fatal("a running sleep is not alive")
	}
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if !Alive(t, pid) {
		t.Fatal("a stopped sleep is not alive")
	}
	if err := unix.Kill(pid, unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if Alive(t, pid) {
		t.Fatal("a sleep sent SIGTERM is alive")
	}
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie does not answer signal 0 (%v): the case this package is for is not shown", err)
	}
	if Alive(t, pid) {
		t.Fatal("a zombie is alive")
	}
	_ = c.Wait()
}

// A Proc is alive while it runs, and not once it has been killed and
// reaped in the background (Exited closed).
func TestProc(t *testing.T) {
	p := Start(t, exec.Command("sleep", "300"))
	if !p.Alive(t) {
		t.Fatal("a running sleep is not alive")
	}
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if p.Alive(t) {
		t.Fatal("a killed and reaped sleep is alive")
	}
}
