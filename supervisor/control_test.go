package supervisor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/ownership"
)

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadRequest(t *testing.T) {
	atLimit := `{"op":"ps"}` + strings.Repeat(" ", maxRequest-len(`{"op":"ps"}`))
	tests := []struct {
		name string
		in   string
		want Request
		err  string // substring; "" = no error
	}{
		{"adopt", `{"op":"adopt","pid":42,"reason":"vllm server","lifeline_ok":true}` + "\n", Request{Op: "adopt", Pid: 42, Reason: "vllm server", LifelineOK: true}, ""},
		{"no newline, then closed", `{"op":"kill","pid":7,"signal":15}`, Request{Op: "kill", Pid: 7, Signal: 15}, ""},
		{"only the first line counts", `{"op":"ps"}` + "\n" + `{"op":"kill"`, Request{Op: "ps"}, ""},
		{"exactly the limit", atLimit + "\n", Request{Op: "ps"}, ""},
		{"one byte past the limit", atLimit + " \n", Request{}, "bad request: larger than 64 KiB"},
		{"huge", strings.Repeat("a", 1<<20), Request{}, "bad request: larger than 64 KiB"},
		{"empty", "", Request{}, "bad request: empty"},
		{"blank line", "\n", Request{}, "bad request: not a JSON request object"},
		{"malformed", `{"op":"ps"` + "\n", Request{}, "bad request: not a JSON request object: unexpected end of JSON input"},
		{"not an object", `[1,2]` + "\n", Request{}, "bad request: not a JSON request object"},
		{"trailing junk", `{"op":"ps"} x` + "\n", Request{}, "bad request: not a JSON request object"},
		{"wrong type", `{"op":"kill","pid":"1"}` + "\n", Request{}, "bad request: not a JSON request object"},
		{"pid out of range", `{"op":"kill","pid":1e30}` + "\n", Request{}, "bad request: not a JSON request object"},
		{"null", "null\n", Request{}, `bad request: unknown op ""`},
		{"unknown op", `{"op":"shutdown"}` + "\n", Request{}, `bad request: unknown op "shutdown" (want adopt, release, ps or kill)`},
		{"long unknown op", `{"op":"` + strings.Repeat("x", 5000) + `"}`, Request{}, `bad request: unknown op "` + strings.Repeat("x", 32) + `..."`},
		{"negative signal", `{"op":"kill","pid":7,"signal":-9}`, Request{}, "bad request: signal -9 is not a signal number (0 to 64)"},
		{"signal past SIGRTMAX", `{"op":"kill","pid":7,"signal":65}`, Request{}, "bad request: signal 65 is not a signal number"},
		{"signal 0 is a probe", `{"op":"kill","pid":7,"signal":0}`, Request{Op: "kill", Pid: 7}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(tc.in)}
			got, err := readRequest(cr, time.Second)
			if tc.err == "" && (err != nil || got != tc.want) {
				t.Fatalf("readRequest = %+v, %v; want %+v", got, err, tc.want)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("readRequest = %+v, %v; want an error with %q", got, err, tc.err)
			}
			if cr.n > maxRequest+1 {
				t.Fatalf("read %d bytes, past the %d-byte bound", cr.n, maxRequest+1)
			}
		})
	}
}

// timeoutReader fails as a connection past its read deadline does.
type timeoutReader struct{ data io.Reader }

func (r timeoutReader) Read(p []byte) (int, error) {
	if n, err := r.data.Read(p); err == nil {
		return n, nil
	}
	return 0, os.ErrDeadlineExceeded
}

func TestReadRequestTimeout(t *testing.T) {
	_, err := readRequest(timeoutReader{strings.NewReader(`{"op":"p`)}, 5*time.Second)
	if err == nil || err.Error() != "bad request: no complete request within 5s (send one JSON object, then a newline)" {
		t.Fatalf("err = %v", err)
	}
}

// recorder is a sessionOps that records the calls made on it.
type recorder struct {
	calls []string
	err   error
}

func (r *recorder) adopt(pid int, reason string, lifelineOK bool, by string) (ownership.Lease, error) {
	r.calls = append(r.calls, fmt.Sprintf("adopt %d %q %v by %s", pid, reason, lifelineOK, by))
	return ownership.Lease{Identity: ownership.Identity{Pid: pid}, Reason: reason, AdoptedBy: by, LifelineOverride: lifelineOK, AdoptedAt: time.Unix(1764682011, 0).UTC()}, r.err
}

func (r *recorder) release(pid int, by string) (ownership.Lease, error) {
	r.calls = append(r.calls, fmt.Sprintf("release %d by %s", pid, by))
	return ownership.Lease{Identity: ownership.Identity{Pid: pid}}, r.err
}

func (r *recorder) Owned() ([]Process, error) {
	r.calls = append(r.calls, "ps")
	return []Process{{Pid: 1, Comm: "sh", OwnedBy: "tree", Agent: true}}, r.err
}

func (r *recorder) kill(requester, pid, sig int) (*Signalled, error) {
	r.calls = append(r.calls, fmt.Sprintf("kill %d %d from %d", pid, sig, requester))
	return &Signalled{Pid: pid, Signal: sig}, r.err
}

func TestServeRequest(t *testing.T) {
	tests := []struct {
		in    string
		fail  bool
		call  string // "" = none
		check func(Response) bool
	}{
		{`{"op":"adopt","pid":42,"reason":"r","lifeline_ok":true}`, false, `adopt 42 "r" true by pid 9 (sh) uid 0`,
			func(r Response) bool { return r.OK && r.Lease != nil && r.Lease.Pid == 42 && r.Lease.LifelineOverride }},
		{`{"op":"release","pid":42}`, false, "release 42 by pid 9 (sh) uid 0", func(r Response) bool { return r.OK && r.Released.Pid == 42 }},
		{`{"op":"ps"}`, false, "ps", func(r Response) bool { return r.OK && len(r.Processes) == 1 }},
		{`{"op":"kill","pid":5,"signal":9}`, false, "kill 5 9 from 9", func(r Response) bool { return r.OK && r.Signalled.Signal == 9 }},
		{`{"op":"kill","pid":5,"signal":9}`, true, "kill 5 9 from 9", func(r Response) bool { return !r.OK && r.Error == "refused by the test" }},
		{`{"op":"kill","pid":5,"signal":99}`, false, "", func(r Response) bool { return !r.OK && strings.HasPrefix(r.Error, "bad request: signal 99") }},
		{`{"op":`, false, "", func(r Response) bool { return !r.OK && strings.HasPrefix(r.Error, "bad request: ") }},
	}
	for _, tc := range tests {
		rec := &recorder{}
		if tc.fail {
			rec.err = errors.New("refused by the test")
		}
		described := false
		resp := serveRequest(strings.NewReader(tc.in), time.Second, rec, 9, func() string { described = true; return "pid 9 (sh) uid 0" })
		if !tc.check(resp) {
			t.Errorf("%s: response %+v", tc.in, resp)
		}
		if got := strings.Join(rec.calls, "; "); got != tc.call {
			t.Errorf("%s: calls %q, want %q", tc.in, got, tc.call)
		}
		if described != (tc.call != "") {
			t.Errorf("%s: the client was described: %v; want only for a well-formed request", tc.in, described)
		}
	}
}

func TestAllowedPeer(t *testing.T) {
	for _, tc := range []struct {
		uid  uint32
		euid int
		ok   bool
	}{{0, 0, true}, {0, 1000, true}, {1000, 1000, true}, {1001, 1000, false}, {65534, 0, false}, {1 << 31, 0, false}} {
		err := allowedPeer(tc.uid, tc.euid)
		if (err == nil) != tc.ok {
			t.Errorf("allowedPeer(%d, %d) = %v, want allowed %v", tc.uid, tc.euid, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "from uid "+strconv.FormatUint(uint64(tc.uid), 10)) {
			t.Errorf("refusal %q does not name uid %d", err, tc.uid)
		}
	}
}

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
	old := requestTimeout
	requestTimeout = timeout
	s, err := Start(cfg)
	requestTimeout = old
	if err != nil {
		t.Skipf("cannot start a session here: %v", err)
	}
	t.Cleanup(func() { _ = s.Kill(); s.Wait() })
	return s
}

// dial connects to the session's control socket.
func dial(t *testing.T, s *Session) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: s.SocketPath(), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readAnswer reads the one answer of a connection; the deadline only keeps
// a broken supervisor from hanging the test.
func readAnswer(t *testing.T, c *net.UnixConn) Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&resp); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp
}

// stillOpen reports whether the supervisor has neither answered nor closed
// c: nothing to read, and no end of file (a non-blocking peek).
func stillOpen(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = errors.Is(err, unix.EAGAIN)
	})
	return open
}

// dialAs connects to path from a thread whose effective uid and gid are
// id, with no supplementary groups: what SO_PEERCRED then reports is what a
// process of that user would show. The thread is never unlocked, so the Go
// runtime ends it with the goroutine and nothing else runs as that user.
func dialAs(id int, path string) (*net.UnixConn, error) {
	type result struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		keep := ^uintptr(0) // -1: leave that id alone
		for _, call := range []struct {
			nr   uintptr
			args [3]uintptr
		}{
			{unix.SYS_SETGROUPS, [3]uintptr{0, 0, 0}},
			{unix.SYS_SETRESGID, [3]uintptr{keep, uintptr(id), keep}},
			{unix.SYS_SETRESUID, [3]uintptr{keep, uintptr(id), keep}},
		} {
			if _, _, e := unix.RawSyscall(call.nr, call.args[0], call.args[1], call.args[2]); e != 0 {
				ch <- result{err: fmt.Errorf("syscall %d: %w", call.nr, e)}
				return
			}
		}
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Another user cannot use the socket: the 0700 directory keeps it from even
// connecting, and with the directory opened up, SO_PEERCRED refuses it.
func TestControlSocketRefusesOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	s := startSession(t, time.Minute, Config{})
	const nobody = 65534

	if c, err := dialAs(nobody, s.SocketPath()); !errors.Is(err, unix.EACCES) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("uid %d connecting through the 0700 directory: %v, want EACCES", nobody, err)
	}

	if err := os.Chmod(filepath.Dir(s.SocketPath()), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.SocketPath(), 0o777); err != nil {
		t.Fatal(err)
	}
	c, err := dialAs(nobody, s.SocketPath())
	if err != nil {
		t.Fatalf("uid %d connecting with the directory opened up: %v", nobody, err)
	}
	defer c.Close()
	// The supervisor answers without reading the request: the write may
	// find the connection closed already.
	_, _ = c.Write([]byte(`{"op":"ps"}` + "\n"))
	resp := readAnswer(t, c)
	want := fmt.Sprintf("paddock refused a control request from uid %d: only uid 0 (the session's user) and root may control this session", nobody)
	if resp.OK || resp.Error != want || resp.Processes != nil {
		t.Fatalf("answer to uid %d: %+v; want the refusal %q and nothing else", nobody, resp, want)
	}

	// The session's own user is still served.
	own := dial(t, s)
	if _, err := own.Write([]byte(`{"op":"ps"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if resp := readAnswer(t, own); !resp.OK || len(resp.Processes) == 0 {
		t.Fatalf("answer to root: %+v", resp)
	}
}

// Malformed, huge and empty requests get an error each, and the session
// goes on answering.
func TestControlSocketBadRequests(t *testing.T) {
	s := startSession(t, time.Minute, Config{})
	tests := []struct {
		name      string
		send      []byte
		closeSide bool
		want      string
	}{
		{"malformed JSON", []byte("{op: ps}\n"), false, "bad request: not a JSON request object: invalid character 'o'"},
		{"unknown op", []byte(`{"op":"reboot"}` + "\n"), false, `bad request: unknown op "reboot"`},
		{"huge", bytes.Repeat([]byte("x"), 1<<20), false, "bad request: larger than 64 KiB"},
		{"huge on one line", append(append([]byte(`{"op":"adopt","pid":1,"reason":"`), bytes.Repeat([]byte("r"), 100<<10)...), "\"}\n"...), false, "bad request: larger than 64 KiB"},
		{"empty", nil, true, "bad request: empty"},
		{"no newline, then closed", []byte(`{"op":"kill","pid":1,"signal":`), true, "bad request: not a JSON request object: unexpected end of JSON input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			// The supervisor stops reading past the limit and answers: write
			// from a goroutine, and expect a huge write to fail.
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = c.Write(tc.send)
				if tc.closeSide {
					_ = c.CloseWrite()
				}
			}()
			resp := readAnswer(t, c)
			if resp.OK || !strings.HasPrefix(resp.Error, tc.want) {
				t.Fatalf("answer %+v, want an error starting %q", resp, tc.want)
			}
			if resp.Session.Agent != s.Pid() {
				t.Errorf("answer names agent %d, want %d", resp.Session.Agent, s.Pid())
			}
			c.Close()
			<-done
		})
	}
	resp, err := Call(s.SocketPath(), Request{Op: "ps"})
	if err != nil || !resp.OK {
		t.Fatalf("a good request after the bad ones: %+v, %v", resp, err)
	}
}

// A client that connects and sends nothing does not hold up anyone else:
// a second client is answered while the first is still connected.
func TestControlSocketSlowClientDoesNotBlockOthers(t *testing.T) {
	s := startSession(t, time.Hour, Config{})
	slow := dial(t, s)
	if _, err := slow.Write([]byte(`{"op":"p`)); err != nil { // half a request, then nothing
		t.Fatal(err)
	}
	resp, err := Call(s.SocketPath(), Request{Op: "ps"})
	if err != nil || !resp.OK {
		t.Fatalf("second client: %+v, %v", resp, err)
	}
	if !stillOpen(slow) {
		t.Fatal("the slow client's connection was closed or answered: the test proves nothing")
	}
}

// A client that does not finish its request within the timeout gets an
// error saying so, and the connection is closed.
func TestControlSocketReadDeadline(t *testing.T) {
	s := startSession(t, 200*time.Millisecond, Config{})
	slow := dial(t, s)
	if _, err := slow.Write([]byte(`{"op":"p`)); err != nil {
		t.Fatal(err)
	}
	resp := readAnswer(t, slow)
	if want := "bad request: no complete request within 200ms"; resp.OK || !strings.HasPrefix(resp.Error, want) {
		t.Fatalf("answer %+v, want an error starting %q", resp, want)
	}
	_ = slow.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := slow.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the answer: %d bytes, %v; want the connection closed", n, err)
	}
}

// With every connection slot held by idle clients, the next client is told
// that paddock is busy, and the agent's trapped syscalls are still answered:
// the notify loop never waits on the socket.
func TestControlSocketBusyLeavesNotifyLoopAlone(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	// SIGCONT to a sleeping process outside the session: refused (EPERM),
	// and harmless if it were not.
	script := fmt.Sprintf(`read go; kill -CONT %d 2>/dev/null; echo "status $?"; read end`, outside.Process.Pid)
	s := startSession(t, time.Hour, Config{Path: sh, Args: []string{"sh", "-c", script}, Stdin: inR, Stdout: outW})
	inR.Close()
	outW.Close()

	idle := make([]*net.UnixConn, maxConns)
	for i := range idle {
		idle[i] = dial(t, s)
	}
	// The accept loop hands connections out in order, so once a later
	// connection is refused as busy, all the idle ones hold their slots.
	busy := dial(t, s)
	if resp := readAnswer(t, busy); resp.OK || !strings.HasPrefix(resp.Error, "paddock is busy") {
		t.Fatalf("client %d: %+v, want busy", maxConns+1, resp)
	}

	if _, err := inW.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || line != "status 1\n" {
		t.Fatalf("agent's kill of a foreign process: %q, %v; want status 1 (refused)", line, err)
	}
	for i, c := range idle {
		if !stillOpen(c) {
			t.Fatalf("idle client %d was closed before the agent was answered: the test proves nothing", i)
		}
	}

	// A slot freed is a slot served.
	_ = idle[0].CloseWrite()
	if resp := readAnswer(t, idle[0]); resp.OK || !strings.HasPrefix(resp.Error, "bad request: empty") {
		t.Fatalf("closed idle client: %+v", resp)
	}
	for i := 0; ; i++ {
		resp, err := Call(s.SocketPath(), Request{Op: "ps"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.OK {
			break
		}
		if !strings.HasPrefix(resp.Error, "paddock is busy") || i == 100 {
			t.Fatalf("after a slot was freed: %+v", resp)
		}
		time.Sleep(10 * time.Millisecond) // the handler frees its slot just after its answer
	}
}

// A temp directory too deep for a unix socket's path stops the start with
// an error that says so and what to do, and leaves no directory behind.
func TestControlSocketPathTooLong(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", long)
	c, err := startControl(&Session{})
	if err == nil {
		c.close()
		t.Fatalf("startControl under a %d-byte TMPDIR succeeded", len(long))
	}
	for _, want := range []string{long, "shorter than 108", "TMPDIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if left, _ := os.ReadDir(long); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
