package control

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/peer"
	"github.com/paddock-dev/paddock/internal/sockettest"
)

// recorder is an Ops that records the calls made on it. inside, when set,
// answers Inside; else every client is outside.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	err    error
	inside func(pid int) (bool, error)
}

func (r *recorder) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

// made is the calls so far.
func (r *recorder) made() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recorder) Adopt(pid int, reason string, lifelineOK bool, by string, inside bool) (LeaseInfo, error) {
	r.record(fmt.Sprintf("adopt %d %q %v by %s", pid, reason, lifelineOK, by))
	return LeaseInfo{Pid: pid, Reason: reason, AdoptedBy: by, LifelineOverride: lifelineOK, AdoptedAt: time.Unix(1764682011, 0).UTC()}, r.err
}

func (r *recorder) Release(pid int, by string) (LeaseInfo, error) {
	r.record(fmt.Sprintf("release %d by %s", pid, by))
	return LeaseInfo{Pid: pid}, r.err
}

func (r *recorder) Owned() ([]Process, error) {
	r.record("ps")
	return []Process{{Pid: 1, Comm: "sh", OwnedBy: "tree", Agent: true}}, r.err
}

func (r *recorder) Kill(requester, pid, sig int) (Signalled, error) {
	r.record(fmt.Sprintf("kill %d %d from %d", pid, sig, requester))
	return Signalled{Pid: pid, Signal: sig}, r.err
}

// recorderSession is what a recorder answers Info with.
var recorderSession = SessionInfo{Supervisor: 4000, Agent: 4001}

func (r *recorder) Info() SessionInfo { return recorderSession }

func (r *recorder) Inside(pid int) (bool, error) {
	if r.inside == nil {
		return false, nil
	}
	return r.inside(pid)
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
		{`{"op":"kill","pid":5,"signal":9}`, true, "kill 5 9 from 9", func(r Response) bool { return !r.OK && r.Error == "refused by the test" && r.Signalled == nil }},
		{`{"op":"adopt","pid":42,"reason":"r"}`, true, `adopt 42 "r" false by pid 9 (sh) uid 0`, func(r Response) bool { return !r.OK && r.Lease == nil }},
		{`{"op":"kill","pid":5,"signal":99}`, false, "", func(r Response) bool { return !r.OK && strings.HasPrefix(r.Error, "bad request: signal 99") }},
		{`{"op":`, false, "", func(r Response) bool { return !r.OK && strings.HasPrefix(r.Error, "bad request: ") }},
	}
	for _, tc := range tests {
		rec := &recorder{}
		if tc.fail {
			rec.err = errors.New("refused by the test")
		}
		described := false
		resp := serveRequest(strings.NewReader(tc.in), time.Second, rec, client{pid: 9, by: func() string { described = true; return "pid 9 (sh) uid 0" }})
		if !tc.check(resp) {
			t.Errorf("%s: response %+v", tc.in, resp)
		}
		if got := strings.Join(rec.made(), "; "); got != tc.call {
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

// listen serves a recorder on a fresh socket with the given timeout until
// the test ends.
func listen(t *testing.T, timeout time.Duration) (*Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	s, err := Listen(Options{Timeout: timeout, Log: zerolog.Nop()}, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, rec
}

// readAnswer reads the one answer of a connection.
func readAnswer(t *testing.T, c *net.UnixConn) Response {
	t.Helper()
	var resp Response
	sockettest.Decode(t, c, &resp)
	return resp
}

// The socket lives alone in a fresh 0700 directory under $XDG_RUNTIME_DIR,
// else $TMPDIR, else /dev/shm where it is a tmpfs, else /tmp, and Close
// takes both away. Where neither variable is set, only the order of the
// bases is checked: a directory made there would be outside the test's own.
func TestListen(t *testing.T) {
	xdg, tmp := t.TempDir(), t.TempDir()
	t.Run("neither", func(t *testing.T) {
		t.Setenv("XDG_RUNTIME_DIR", "")
		t.Setenv("TMPDIR", "")
		want := []string{"/tmp"}
		var fs unix.Statfs_t
		if err := unix.Statfs("/dev/shm", &fs); err == nil && fs.Type == unix.TMPFS_MAGIC {
			want = []string{"/dev/shm", "/tmp"}
		}
		if got := runtimeDirs(); !slices.Equal(got, want) {
			t.Errorf("runtimeDirs() = %q, want %q", got, want)
		}
	})
	for _, tc := range []struct {
		name, xdg, tmpdir, parent string
	}{
		{"XDG_RUNTIME_DIR", xdg, tmp, xdg},
		{"relative XDG_RUNTIME_DIR", "run", tmp, tmp},
		{"missing XDG_RUNTIME_DIR", filepath.Join(xdg, "gone"), tmp, tmp},
		{"TMPDIR", "", tmp, tmp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", tc.xdg)
			t.Setenv("TMPDIR", tc.tmpdir)
			s, err := Listen(Options{}, &recorder{})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(s.Path())
			if filepath.Dir(dir) != tc.parent || filepath.Base(s.Path()) != "control.sock" {
				t.Errorf("socket at %s, want it in a directory of its own under %s", s.Path(), tc.parent)
			}
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("directory %s: %v, %v; want mode 0700", dir, st.Mode(), err)
			}
			if s.timeout != DefaultTimeout {
				t.Errorf("timeout %v, want the default %v", s.timeout, DefaultTimeout)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after Close, %s: %v; want it gone", dir, err)
			}
			if _, err := Call(s.Path(), Request{Op: OpPs}); err == nil || !strings.HasPrefix(err.Error(), "no paddock supervisor is reachable at "+s.Path()) {
				t.Errorf("Call after Close: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
		})
	}
}

// Each op reaches the session as the call it names, from the client named
// for the journal, and its answer comes back through Call.
func TestControlSocketServes(t *testing.T) {
	s, rec := listen(t, time.Minute)
	by := fmt.Sprintf("pid %d (control.test) uid %d", os.Getpid(), os.Geteuid())
	tests := []struct {
		req   Request
		call  string
		check func(Response) bool
	}{
		{Request{Op: OpAdopt, Pid: 42, Reason: "vllm"}, `adopt 42 "vllm" false by ` + by,
			func(r Response) bool { return r.Lease != nil && r.Lease.AdoptedBy == by }},
		{Request{Op: OpRelease, Pid: 42}, "release 42 by " + by, func(r Response) bool { return r.Released != nil && r.Released.Pid == 42 }},
		{Request{Op: OpPs}, "ps", func(r Response) bool { return len(r.Processes) == 1 && r.Processes[0].Agent }},
		{Request{Op: OpKill, Pid: 5, Signal: 15}, fmt.Sprintf("kill 5 15 from %d", os.Getpid()), func(r Response) bool { return r.Signalled != nil && r.Signalled.Signal == 15 }},
	}
	for _, tc := range tests {
		resp, err := Call(s.Path(), tc.req)
		if err != nil || !resp.OK || !tc.check(resp) {
			t.Errorf("%s: %+v, %v", tc.req.Op, resp, err)
		}
		if resp.Session != recorderSession {
			t.Errorf("%s: answer names session %+v, want %+v", tc.req.Op, resp.Session, recorderSession)
		}
		if calls := rec.made(); len(calls) == 0 || calls[len(calls)-1] != tc.call {
			t.Errorf("%s: calls %q, want the last %q", tc.req.Op, calls, tc.call)
		}
	}
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
	s, rec := listen(t, time.Minute)
	const nobody = 65534

	if c, err := dialAs(nobody, s.Path()); !errors.Is(err, unix.EACCES) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("uid %d connecting through the 0700 directory: %v, want EACCES", nobody, err)
	}

	if err := os.Chmod(filepath.Dir(s.Path()), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Path(), 0o777); err != nil {
		t.Fatal(err)
	}
	c, err := dialAs(nobody, s.Path())
	if err != nil {
		t.Fatalf("uid %d connecting with the directory opened up: %v", nobody, err)
	}
	defer c.Close()
	// The server answers without reading the request: the write may find
	// the connection closed already.
	_, _ = c.Write([]byte(`{"op":"ps"}` + "\n"))
	resp := readAnswer(t, c)
	want := fmt.Sprintf("paddock refused a control request from uid %d: only uid 0 (the session's user) and root may control this session", nobody)
	if resp.OK || resp.Error != want || resp.Processes != nil {
		t.Fatalf("answer to uid %d: %+v; want the refusal %q and nothing else", nobody, resp, want)
	}
	if calls := rec.made(); len(calls) != 0 {
		t.Fatalf("uid %d's request reached the session: %q", nobody, calls)
	}

	// The session's own user is still served.
	if resp, err := Call(s.Path(), Request{Op: OpPs}); err != nil || !resp.OK || len(resp.Processes) == 0 {
		t.Fatalf("answer to root: %+v, %v", resp, err)
	}
}

// Malformed, huge and empty requests get an error each, and the server
// goes on answering.
func TestControlSocketBadRequests(t *testing.T) {
	s, rec := listen(t, time.Minute)
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
			c := sockettest.Dial(t, s.Path())
			// The server stops reading past the limit and answers: write
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
			if resp.Session != recorderSession {
				t.Errorf("answer names session %+v, want %+v", resp.Session, recorderSession)
			}
			c.Close()
			<-done
		})
	}
	if calls := rec.made(); len(calls) != 0 {
		t.Fatalf("bad requests reached the session: %q", calls)
	}
	resp, err := Call(s.Path(), Request{Op: OpPs})
	if err != nil || !resp.OK {
		t.Fatalf("a good request after the bad ones: %+v, %v", resp, err)
	}
}

// A client that connects and sends nothing does not hold up anyone else:
// a second client is answered while the first is still connected.
func TestControlSocketSlowClientDoesNotBlockOthers(t *testing.T) {
	s, _ := listen(t, time.Hour)
	slow := sockettest.Dial(t, s.Path())
	if _, err := slow.Write([]byte(`{"op":"p`)); err != nil { // half a request, then nothing
		t.Fatal(err)
	}
	resp, err := Call(s.Path(), Request{Op: OpPs})
	if err != nil || !resp.OK {
		t.Fatalf("second client: %+v, %v", resp, err)
	}
	if !sockettest.StillOpen(slow) {
		t.Fatal("the slow client's connection was closed or answered: the test proves nothing")
	}
}

// A client that does not finish its request within the timeout gets an
// error saying so, and the connection is closed.
func TestControlSocketReadDeadline(t *testing.T) {
	s, _ := listen(t, 200*time.Millisecond)
	slow := sockettest.Dial(t, s.Path())
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

// The budgets count by side and by connector, refuse past their sizes with
// an answer that says which was full, and give back what they took.
func TestBudget(t *testing.T) {
	type step struct {
		give bool
		sd   side
		pid  int32
		want string // "" = taken (or given)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"per peer", []step{
			{false, outside, 7, ""}, {false, inside, 7, ""},
			{false, outside, 7, "pid 7 already has 2 control requests in progress on this session (at most 2 per process)"},
			{false, outside, 8, ""},
			{true, outside, 7, ""}, {false, inside, 7, ""},
		}},
		{"inside full, outside served", []step{
			{false, inside, 1, ""}, {false, inside, 2, ""}, {false, inside, 3, ""},
			{false, inside, 4, "3 control requests from the session's own processes are in progress on this session (at most 3)"},
			{false, outside, 4, ""}, {false, outside, 5, ""},
			{true, inside, 2, ""}, {false, inside, 4, ""},
		}},
		{"outside full, inside served", []step{
			{false, outside, 1, ""}, {false, outside, 2, ""},
			{false, outside, 3, "2 control requests from processes outside the session are in progress on this session (at most 2)"},
			{false, inside, 3, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(limits{inside: 3, outside: 2, perPeer: 2})
			for i, st := range tc.steps {
				if st.give {
					b.give(st.sd, st.pid)
					continue
				}
				err := b.take(st.sd, st.pid)
				if st.want == "" && err != nil || st.want != "" && (err == nil || !strings.Contains(err.Error(), st.want) || !strings.HasPrefix(err.Error(), "paddock is busy: ")) {
					t.Fatalf("step %d, take(%v, %d): %v; want %q", i, st.sd, st.pid, err, st.want)
				}
			}
			if t.Failed() {
				return
			}
			for pid, n := range b.peers {
				if n <= 0 {
					t.Errorf("pid %d left with a count of %d", pid, n)
				}
			}
		})
	}
}

// mode is what a classifying recorder says of every client.
type mode int32

const (
	asOutside mode = iota
	asInside
	asError
)

// classifier returns an Inside for a recorder that answers as m says.
func classifier(m *atomic.Int32) func(int) (bool, error) {
	return func(int) (bool, error) {
		switch mode(m.Load()) {
		case asInside:
			return true, nil
		case asError:
			return false, errors.New("cannot tell (the test)")
		}
		return false, nil
	}
}

// With one budget held full by idle clients, the next client charged to it
// is told at once that paddock is busy, and which budget; a client charged
// to the other is served; a slot freed is a slot served. A client that
// cannot be classified is charged to the session, never the user.
func TestControlSocketBudgets(t *testing.T) {
	small := &limits{inside: 4, outside: 4, perPeer: 100}
	self := os.Getpid()
	tests := []struct {
		name     string
		lim      *limits // nil: the defaults
		hold     mode
		n        int
		busy     mode
		busyWant string
		served   mode
	}{
		{"per peer", nil, asOutside, MaxPeerConns, asOutside,
			fmt.Sprintf("paddock is busy: pid %d already has %d control requests in progress on this session (at most %d per process); try again", self, MaxPeerConns, MaxPeerConns), -1},
		{"inside full", small, asInside, 4, asInside,
			"paddock is busy: 4 control requests from the session's own processes are in progress on this session (at most 4); try again", asOutside},
		{"unclassified counts inside", small, asInside, 4, asError,
			"paddock is busy: 4 control requests from the session's own processes", asOutside},
		{"outside full", small, asOutside, 4, asOutside,
			"paddock is busy: 4 control requests from processes outside the session are in progress on this session (at most 4); try again", asInside},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m atomic.Int32
			rec := &recorder{inside: classifier(&m)}
			s, err := Listen(Options{Timeout: time.Hour, Log: zerolog.Nop(), limits: tc.lim}, rec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })

			m.Store(int32(tc.hold))
			idle := make([]*net.UnixConn, tc.n)
			for i := range idle {
				idle[i] = sockettest.Dial(t, s.Path())
			}
			// The accept loop takes connections in order, so once a later
			// connection is answered, all the idle ones hold their slots.
			m.Store(int32(tc.busy))
			busy := sockettest.Dial(t, s.Path())
			if resp := readAnswer(t, busy); resp.OK || !strings.HasPrefix(resp.Error, tc.busyWant) || resp.Session != recorderSession {
				t.Fatalf("client %d: %+v, want %q", tc.n+1, resp, tc.busyWant)
			}
			if tc.served >= 0 {
				m.Store(int32(tc.served))
				if resp, err := Call(s.Path(), Request{Op: OpPs}); err != nil || !resp.OK {
					t.Fatalf("a client charged to the other budget: %+v, %v", resp, err)
				}
			}
			for i, c := range idle {
				if !sockettest.StillOpen(c) {
					t.Fatalf("idle client %d was answered or closed", i)
				}
			}

			_ = idle[0].CloseWrite()
			if resp := readAnswer(t, idle[0]); resp.OK || !strings.HasPrefix(resp.Error, "bad request: empty") {
				t.Fatalf("closed idle client: %+v", resp)
			}
			m.Store(int32(tc.hold))
			for i := 0; ; i++ {
				resp, err := Call(s.Path(), Request{Op: OpPs})
				if err != nil {
					t.Fatal(err)
				}
				if resp.OK {
					break
				}
				if !strings.HasPrefix(resp.Error, "paddock is busy: ") || i == 100 {
					t.Fatalf("after a slot was freed: %+v", resp)
				}
				time.Sleep(10 * time.Millisecond) // the handler frees its slot just after its answer
			}
		})
	}
}

// sideOf charges the user's budget only for a connector the session says is
// outside; every doubt is charged to the session.
func TestSideOf(t *testing.T) {
	dir := t.TempDir()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sockettest.Dial(t, filepath.Join(dir, "s"))
	conn, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cred, err := peer.Cred(conn)
	if err != nil {
		t.Fatal(err)
	}
	if int(cred.Pid) != os.Getpid() {
		t.Fatalf("SO_PEERCRED pid %d, want this process, %d", cred.Pid, os.Getpid())
	}
	gone := *cred
	gone.Pid = 0
	tests := []struct {
		name    string
		cred    *unix.Ucred
		credErr error
		m       mode
		want    side
		why     string // "" = no reason given
	}{
		{"outside", cred, nil, asOutside, outside, ""},
		{"inside", cred, nil, asInside, inside, ""},
		{"classification error", cred, nil, asError, inside, "cannot tell (the test)"},
		{"no credentials", nil, unix.ENOTCONN, asOutside, inside, "cannot identify the connector"},
		{"pid 0", &gone, nil, asOutside, inside, "not visible in paddock's PID namespace"},
	}
	for _, tc := range tests {
		var m atomic.Int32
		m.Store(int32(tc.m))
		got, why := sideOf(&recorder{inside: classifier(&m)}, func(pid int32) (int, error) { return peer.Pidfd(conn, pid) }, tc.cred, tc.credErr)
		if got != tc.want || (why == nil) != (tc.why == "") || why != nil && !strings.Contains(why.Error(), tc.why) {
			t.Errorf("%s: %v, %v; want %v, %q", tc.name, got, why, tc.want, tc.why)
		}
	}
}

// A temp directory too deep for a unix socket's path stops Listen with an
// error that says so and what to do, and leaves no directory behind.
func TestControlSocketPathTooLong(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", long)
	s, err := Listen(Options{}, &recorder{})
	if err == nil {
		_ = s.Close()
		t.Fatalf("Listen under a %d-byte TMPDIR succeeded", len(long))
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
