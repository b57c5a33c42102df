package sys_test

import (
	"errors"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

func TestSiginfoPid(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start true: %v", err)
	}
	defer func() { _ = cmd.Wait() }()
	var info unix.Siginfo
	// WNOWAIT: cmd.Wait reaps it afterwards.
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if got := sys.SiginfoPid(&info); got != cmd.Process.Pid {
		t.Errorf("SiginfoPid = %d, want %d", got, cmd.Process.Pid)
	}
}

func TestErrorsAreBareErrnos(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func() error
		want unix.Errno
	}{
		{"SeccompNotifRecv on a bad fd", func() error { return sys.SeccompNotifRecv(-1, &sys.SeccompNotif{}) }, unix.EBADF},
		{"SeccompNotifIDValid on a bad fd", func() error { return sys.SeccompNotifIDValid(-1, 1) }, unix.EBADF},
		{"SeccompNotifSetFlags on a bad fd", func() error { return sys.SeccompNotifSetFlags(-1, 0) }, unix.EBADF},
		{"Ptrace of no such thread", func() error { return sys.Ptrace(unix.PTRACE_LISTEN, 1<<30, 0, 0) }, unix.ESRCH},
		{"PtraceGetSyscallInfo of no such thread", func() error { _, err := sys.PtraceGetSyscallInfo(1 << 30); return err }, unix.ESRCH},
		{"FcntlSetOwnEx on a bad fd", func() error { return sys.FcntlSetOwnEx(-1, 1, 1) }, unix.EBADF},
		{"IoctlTIOCSTI on a bad fd", func() error { return sys.IoctlTIOCSTI(-1, 'x') }, unix.EBADF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var errno unix.Errno
			if !errors.As(err, &errno) || errno != tc.want {
				t.Errorf("got %v, want the bare errno %v", err, tc.want)
			}
		})
	}
}

func TestChildSubreaper(t *testing.T) {
	if _, err := sys.ChildSubreaper(); err != nil {
		t.Fatalf("ChildSubreaper: %v", err)
	}
}
