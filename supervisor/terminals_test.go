package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/ptytest"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/terminal"
)

// TestWorldTerminal reads real terminals through a caller's descriptors:
// the agent root (a sleep leading a session on a pty of its own) holds the
// session's pty, paddock's terminal, a pty another process of the user has
// as its controlling terminal, a free pty and its master, and a pipe.
func TestWorldTerminal(t *testing.T) {
	_, own := ptytest.Open(t)
	_, session := ptytest.Open(t)
	_, paddock := ptytest.Open(t)
	_, users := ptytest.Open(t)
	freeMaster, free := ptytest.Open(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()

	// Another process of the user's, on its own terminal.
	shell := exec.Command("sleep", "300")
	shell.Stdin = users
	shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shell.Process.Kill(); _ = shell.Wait() })

	root := exec.Command("sleep", "300")
	root.Stdin = own
	root.ExtraFiles = []*os.File{session, paddock, users, free, freeMaster, pr} // 3..8
	root.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Process.Kill(); _ = root.Wait() })

	fs := procfs.Default()
	tree, err := ownership.NewTree(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat(root.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree.SetRootStat(st)
	w := newLiveWorld(tree, fs, guard.Policy{}, nil)
	pid := root.Process.Pid
	if _, err := w.terminal(pid, 3); err == nil {
		t.Errorf("a world that does not know the session's terminals read one")
	}
	dev := func(f *os.File) uint64 { return uint64(terminal.DeviceBehind(int(f.Fd()))) }
	w.terms = &termSet{session: []uint64{dev(session)}, supervisor: []uint64{dev(paddock)}}

	for _, tc := range []struct {
		name                        string
		fd                          int
		dev                         uint64
		master, session, supervisor bool
		foreign                     []int
		named                       string
	}{
		{name: "its own pty, which it leads", fd: 0, dev: dev(own)},
		{name: "the session's pty", fd: 3, dev: dev(session), session: true},
		{name: "paddock's terminal", fd: 4, dev: dev(paddock), supervisor: true, named: paddock.Name()},
		{name: "another process's terminal", fd: 5, dev: dev(users), foreign: []int{shell.Process.Pid}, named: users.Name()},
		{name: "a free pty", fd: 6, dev: dev(free), named: free.Name()},
		{name: "a pty's master", fd: 7, dev: dev(free), master: true},
		{name: "a pipe", fd: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.terminal(pid, tc.fd)
			if err != nil {
				t.Fatal(err)
			}
			var foreign []int
			for _, f := range got.Foreign {
				foreign = append(foreign, f.Pid)
				if f.Rel != audit.RelForeign {
					t.Errorf("holder %d is %v, want foreign", f.Pid, f.Rel)
				}
			}
			if got.Dev != tc.dev || got.Master != tc.master || got.Session != tc.session || got.Supervisor != tc.supervisor ||
				!slices.Equal(foreign, tc.foreign) || (tc.named != "" && got.Name != tc.named) {
				t.Errorf("descriptor %d: %+v; want dev %#x master %v session %v supervisor %v foreign %v name %q",
					tc.fd, got, tc.dev, tc.master, tc.session, tc.supervisor, tc.foreign, tc.named)
			}
		})
	}
	if _, err := w.terminal(pid, 99); !errors.Is(err, unix.EBADF) {
		t.Errorf("a descriptor that is not open: %v, want EBADF", err)
	}
}

// TestNewTermSet: the session's terminal is the pty given as Config.Terminal,
// else every terminal among the agent's standard descriptors.
func TestNewTermSet(t *testing.T) {
	_, slave := ptytest.Open(t)
	_, other := ptytest.Open(t)
	dev := func(f *os.File) uint64 { return uint64(terminal.DeviceBehind(int(f.Fd()))) }
	fs := procfs.Default()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if ts := newTermSet(Config{Terminal: slave, Stdin: slave, Stdout: other, Stderr: pw}, fs); !slices.Equal(ts.session, []uint64{dev(slave)}) {
		t.Errorf("with a pty: session %v, want %#x", ts.session, dev(slave))
	}
	if ts := newTermSet(Config{Stdin: pr, Stdout: other, Stderr: slave}, fs); !slices.Equal(ts.session, []uint64{dev(other), dev(slave)}) {
		t.Errorf("on the user's terminals: session %v, want %#x and %#x", ts.session, dev(other), dev(slave))
	}
}
