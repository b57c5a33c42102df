package peer

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPeerIsThisProcess: over a connection to itself, the peer is this
// process: its pid, a pidfd that pins it, its own executable; a pidfd of a
// child that has exited says so.
func TestPeerIsThisProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cred, err := Cred(conn)
	if err != nil || int(cred.Pid) != os.Getpid() || int(cred.Uid) != os.Getuid() {
		t.Fatalf("Cred = %+v, %v; want pid %d, uid %d", cred, err, os.Getpid(), os.Getuid())
	}
	pidfd, err := Pidfd(conn, cred.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if Exited(pidfd) {
		t.Error("Exited says this very process has exited")
	}
	exe, err := ExeOf(pidfd, int(cred.Pid))
	if err != nil {
		t.Fatal(err)
	}
	self, err := Self()
	if err != nil || !exe.Same(self) || exe.Path != self.Path {
		t.Errorf("ExeOf(self) = %+v, Self = %+v, %v: want the same file", exe, self, err)
	}
	child := exec.Command("true")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	cfd, err := unix.PidfdOpen(child.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	_ = child.Wait()
	if !Exited(cfd) {
		t.Error("Exited says a reaped child still runs")
	}
	if _, err := ExeOf(cfd, child.Process.Pid); err == nil {
		t.Error("ExeOf of a reaped child succeeded")
	}
}
