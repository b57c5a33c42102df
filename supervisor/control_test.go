package supervisor

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/sockettest"
)

// The control socket's protocol and bounds are tested in package control
// against a stand-in session; what is tested here needs a real one.

// startSession starts `sleep 600` under supervision (or the shell script
// given) with the control socket's request timeout set to timeout, and
// ends it when the test does.
func startSession(t *testing.T, timeout time.Duration, cfg Config) *Session {
	t.Helper()
	if cfg.Path == "" {
		path, err := exec.LookPath("sleep")
		if err != nil {
			t.Skip(err)
		}
		cfg.Path, cfg.Args = path, []string{"sleep", "600"}
	}
	cfg.Log = zerolog.Nop()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { null.Close() })
	if cfg.Stdout == nil {
		cfg.Stdout = null
	}
	if cfg.Stderr == nil {
		cfg.Stderr = null
	}
	cfg.controlTimeout = timeout
	s, err := Start(cfg)
	if err != nil {
		// Skipped only where the kernel lacks what a session needs.
		featuretest.Require(t, features.IDPidfdOpen, features.IDChildSubreaper)
		if cfg.Backend == BackendPtrace {
			featuretest.Require(t, features.IDRetTrace, features.IDPtrace)
		} else {
			featuretest.Require(t, features.IDUserNotif, features.IDListener)
		}
		t.Fatalf("cannot start a session: %v", err)
	}
	t.Cleanup(func() { _ = s.Kill(); s.Wait() })
	return s
}

// readAnswer reads the one answer of a connection.
func readAnswer(t *testing.T, c *net.UnixConn) control.Response {
	t.Helper()
	var resp control.Response
	sockettest.Decode(t, c, &resp)
	return resp
}

// With every connection slot held by idle clients, the next client is told
// that paddock is busy, and the agent's trapped syscalls are still answered:
// the notify loop never waits on the socket.
func TestControlSocketBusyLeavesNotifyLoopAlone(t *testing.T) {
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
	// SIGCONT to a sleeping process outside the session: refused (EPERM),
	// and harmless if it were not.
	script := fmt.Sprintf(`read go; kill -CONT %d 2>/dev/null; echo "status $?"; read end`, outside.Process.Pid)
	s, inW, outR := startScript(t, time.Hour, script, Config{})

	idle := make([]*net.UnixConn, control.MaxConns)
	for i := range idle {
		idle[i] = sockettest.Dial(t, s.SocketPath())
	}
	// The accept loop hands connections out in order, so once a later
	// connection is refused as busy, all the idle ones hold their slots.
	busy := sockettest.Dial(t, s.SocketPath())
	if resp := readAnswer(t, busy); resp.OK || !strings.HasPrefix(resp.Error, "paddock is busy") {
		t.Fatalf("client %d: %+v, want busy", control.MaxConns+1, resp)
	}

	if _, err := inW.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, err := outR.ReadString('\n')
	if err != nil || line != "status 1\n" {
		t.Fatalf("agent's kill of a foreign process: %q, %v; want status 1 (refused)", line, err)
	}
	for i, c := range idle {
		if !sockettest.StillOpen(c) {
			t.Fatalf("idle client %d was closed before the agent was answered: the test proves nothing", i)
		}
	}
}

// The socket serves the session itself: its answers name this supervisor
// and the agent, ps lists the agent, kill goes through the session's
// decision (an outsider is refused), and adoption without a journal is refused as the library's is.
func TestControlSocketServesTheSession(t *testing.T) {
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
	s := startSession(t, time.Minute, Config{})
	self := control.SessionInfo{Supervisor: os.Getpid(), Agent: s.Pid()}
	tests := []struct {
		req   control.Request
		check func(control.Response) bool
	}{
		{control.Request{Op: control.OpPs}, func(r control.Response) bool {
			return r.OK && len(r.Processes) == 1 && r.Processes[0].Pid == s.Pid() && r.Processes[0].Agent && r.Processes[0].OwnedBy == "tree"
		}},
		{control.Request{Op: control.OpKill, Pid: s.Pid(), Signal: 0}, func(r control.Response) bool {
			return r.OK && r.Signalled != nil && r.Signalled.Pid == s.Pid() && r.Signalled.Comm == "sleep"
		}},
		// SIGCONT to a sleeping process outside the session: refused, and
		// harmless if it were not.
		{control.Request{Op: control.OpKill, Pid: outside.Process.Pid, Signal: int(unix.SIGCONT)}, func(r control.Response) bool {
			return !r.OK && strings.Contains(r.Error, fmt.Sprintf("pid %d is not owned by this session", outside.Process.Pid))
		}},
		{control.Request{Op: control.OpAdopt, Pid: os.Getpid(), Reason: "test"}, func(r control.Response) bool {
			return !r.OK && strings.HasPrefix(r.Error, "adoption refused: this session has no audit journal")
		}},
		{control.Request{Op: control.OpRelease, Pid: s.Pid()}, func(r control.Response) bool {
			return !r.OK && r.Error == fmt.Sprintf("release of pid %d refused: pid %d is not adopted by this session (paddock ps lists what is)", s.Pid(), s.Pid())
		}},
	}
	for _, tc := range tests {
		resp, err := control.Call(s.SocketPath(), tc.req)
		if err != nil || !tc.check(resp) {
			t.Errorf("%+v: %+v, %v", tc.req, resp, err)
		}
		if resp.Session != self {
			t.Errorf("%+v: answer names %+v, want %+v", tc.req, resp.Session, self)
		}
	}
}

// startScript starts `sh -c script` under supervision (startSession, with
// cfg's other settings) with its stdin and stdout on pipes: the test writes
// to in and reads the agent's lines from out.
func startScript(t *testing.T, timeout time.Duration, script string, cfg Config) (s *Session, in *os.File, out *bufio.Reader) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("needs sh: %v", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close() })
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close() })
	cfg.Path, cfg.Args, cfg.Stdin, cfg.Stdout = sh, []string{"sh", "-c", script}, inR, outW
	s = startSession(t, timeout, cfg)
	inR.Close()
	outW.Close()
	return s, inW, bufio.NewReader(outR)
}
