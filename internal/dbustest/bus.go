// Package dbustest helps tests speak D-Bus: it starts a private
// dbus-daemon, and holds a minimal connection (Conn) that authenticates,
// says Hello, requests a name, answers calls as a stand-in service
// (StandIn) and makes calls as a client, with unix descriptors both
// ways. It exists so that the D-Bus filter's own tests (package
// dbusproxy) and the end-to-end tests of paddock's wall (test/, and the
// agent's Go client in test/agenthelper) share one copy.
//
// Its encoder is its own, not dbusproxy's: a test of the filter's parser
// with messages built here does not check the parser against itself, and
// it writes what the bus would refuse (a NUL in a string, not UTF-8, values
// nested too deep) for the tests of that refusal. Its decoder builds Go
// values of its own from the reading of the format it shares with the
// relay (package internal/dbuswire): it refuses the strings and signatures
// the bus refuses, but checks none of the names' and paths' syntax. It
// encodes little-endian, decodes both endiannesses, and knows every D-Bus
// type; it is for tests, not for untrusted input.
package dbustest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// busConfig is a custom bus that lets every user connect and everyone
// do everything, as a session bus does, authenticated by EXTERNAL (the
// peer's uid) only.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// BusOptions says where and as whom StartBus runs the bus.
type BusOptions struct {
	// Dir holds the bus's socket and configuration file; "" is a
	// temporary directory of a path short enough for a socket, removed
	// when the test ends. A bus of another user needs a Dir that user
	// may write.
	Dir string
	// Credential runs dbus-daemon as another user (a root test's bus of
	// nobody's); nil runs it as the test.
	Credential *syscall.Credential
}

// Bus is a running dbus-daemon of the test's.
type Bus struct {
	// Path is the bus's socket.
	Path string
	// Address is its D-Bus address, unix:path=Path, as
	// DBUS_SYSTEM_BUS_ADDRESS names a bus.
	Address string
}

// StartBus starts a dbus-daemon of the test's own, stopped when the test
// ends, and returns it once it listens (it prints its address then). It
// skips the test where dbus-daemon is missing or cannot start.
func StartBus(t testing.TB, o BusOptions) *Bus {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skipf("needs dbus-daemon: %v", err)
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dbus"); err != nil {
			t.Fatalf("a directory for the bus: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	// Readable by the bus's user, whoever that is.
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, sock), 0o644); err != nil {
		t.Fatalf("write the bus's configuration: %v", err)
	}
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address")
	if o.Credential != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.Credential}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("dbus-daemon's output: %v", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("needs dbus-daemon to start: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("dbus-daemon printed no address (%v): %s", err, stderr.String())
	}
	if !strings.Contains(addr, sock) {
		t.Fatalf("dbus-daemon listens on %q, want %s", addr, sock)
	}
	return &Bus{Path: sock, Address: "unix:path=" + sock}
}
