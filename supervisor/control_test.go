package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/reexec"
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

// With every connection slot this process may hold taken by idle clients,
// the next client is told that paddock is busy, and the agent's trapped
// syscalls are still answered: the notify loop never waits on the socket.
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

	idle := make([]*net.UnixConn, control.MaxPeerConns)
	for i := range idle {
		idle[i] = sockettest.Dial(t, s.SocketPath())
	}
	// The accept loop hands connections out in order, so once a later
	// connection is refused as busy, all the idle ones hold their slots.
	busy := sockettest.Dial(t, s.SocketPath())
	if resp := readAnswer(t, busy); resp.OK || !strings.HasPrefix(resp.Error, "paddock is busy") {
		t.Fatalf("client %d: %+v, want busy", control.MaxPeerConns+1, resp)
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

// holdConnsName is the job of a re-executed test binary that holds idle
// control connections (HoldConnsChild).
const holdConnsName = "__paddock_test_hold_conns"

// HoldConnsChild is the job run as `holdConnsName CHILDREN CONNS`: start
// CHILDREN copies of itself that hold CONNS each, and open CONNS idle
// connections to $PADDOCK_SOCKET itself; print "held H busy B other O" for
// its own connections (busy: answered at once that paddock is busy; held:
// no answer within 3 s), then wait for the end of stdin. Run as the agent,
// every connection comes from a process the session owns.
func HoldConnsChild() reexec.Child {
	return reexec.Child{Name: holdConnsName, Main: holdConns}
}

func holdConns(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: CHILDREN CONNS")
		return 2
	}
	children, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	conns, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var cmds []*exec.Cmd
	for i := 0; i < children; i++ {
		cmd := reexec.Command(holdConnsName, "0", args[1])
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cmds = append(cmds, cmd)
	}
	path := os.Getenv(control.SocketEnv)
	results := make(chan string, conns)
	for i := 0; i < conns; i++ {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer c.Close()
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			var resp control.Response
			err := json.NewDecoder(c).Decode(&resp)
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				results <- "held"
			case err == nil && strings.HasPrefix(resp.Error, "paddock is busy: "):
				results <- "busy"
			default:
				results <- fmt.Sprintf("other (%+v, %v)", resp, err)
			}
		}()
	}
	count := map[string]int{}
	for i := 0; i < conns; i++ {
		r := <-results
		if strings.HasPrefix(r, "other") {
			fmt.Fprintln(os.Stderr, r)
			r = "other"
		}
		count[r]++
	}
	fmt.Printf("held %d busy %d other %d\n", count["held"], count["busy"], count["other"])
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, cmd := range cmds {
		_ = cmd.Wait()
	}
	return 0
}

// 64 idle connections from the agent's own processes (8 processes of 8
// connections, within the per-process bound) take the session's whole
// budget, and no more: the user's `paddock ps` from outside the session
// (this process, the supervisor's host) is still served.
func TestControlSocketAgentCannotStarveTheUser(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const procs, per = 8, 8
	script := fmt.Sprintf("exec '%s' %s %d %d", exe, holdConnsName, procs-1, per)
	s, inW, outR := startScript(t, time.Hour, script, Config{})
	held, busy := 0, 0
	for i := 0; i < procs; i++ {
		line, err := outR.ReadString('\n')
		var h, b, o int
		if _, serr := fmt.Sscanf(line, "held %d busy %d other %d\n", &h, &b, &o); err != nil || serr != nil || o != 0 {
			t.Fatalf("agent process %d: %q, %v, %v", i, line, err, serr)
		}
		held, busy = held+h, busy+b
	}
	if held != control.MaxInsideConns || busy != procs*per-control.MaxInsideConns {
		t.Errorf("the agent's %d connections: %d held, %d busy; want %d held (the session's budget), the rest busy", procs*per, held, busy, control.MaxInsideConns)
	}
	resp, err := control.Call(s.SocketPath(), control.Request{Op: control.OpPs})
	if err != nil || !resp.OK {
		t.Fatalf("the user's ps with the agent's connections held: %+v, %v", resp, err)
	}
	if len(resp.Processes) != procs {
		t.Errorf("ps lists %d processes, want the agent's %d: %+v", len(resp.Processes), procs, resp.Processes)
	}
	inW.Close()
}

// Inside tells the control socket the session's processes from the rest,
// and counts what it cannot tell as the session's.
func TestControlOpsInside(t *testing.T) {
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	s := startSession(t, time.Minute, Config{})
	tests := []struct {
		name    string
		pid     int
		inside  bool
		errWant string
	}{
		{"agent root", s.Pid(), true, ""},
		{"the supervisor", os.Getpid(), false, ""},
		{"a foreign process", outside.Process.Pid, false, ""},
		{"PID 1", 1, false, ""},
		{"a reaped process", gone.Process.Pid, true, "is gone"},
	}
	for _, tc := range tests {
		in, err := controlOps{s}.Inside(tc.pid)
		if in != tc.inside || (err == nil) != (tc.errWant == "") || err != nil && !strings.Contains(err.Error(), tc.errWant) {
			t.Errorf("%s (pid %d): %v, %v; want %v, %q", tc.name, tc.pid, in, err, tc.inside, tc.errWant)
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
