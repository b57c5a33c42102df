package agent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// runcState is the message runc 1.1 sends (one descriptor, seccompFd).
const runcState = `{"ociVersion":"1.0.2","fds":["seccompFd"],"pid":4242,"metadata":"paddock",` +
	`"state":{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":4242,"bundle":"/run/c1",` +
	`"annotations":{"io.kubernetes.pod.namespace":"default","io.kubernetes.pod.name":"agent-0"}}}`

func TestParseState(t *testing.T) {
	tests := []struct {
		name  string
		msg   string
		nfds  int
		index int
		err   string // substring of the error; "" for none
	}{
		{name: "runc", msg: runcState, nfds: 1, index: 0},
		{name: "second of two", msg: strings.Replace(runcState, `["seccompFd"]`, `["other","seccompFd"]`, 1), nfds: 2, index: 1},
		{name: "empty", msg: "", nfds: 1, err: "empty message"},
		{name: "not JSON", msg: "hello", nfds: 1, err: "container process state"},
		{name: "two values", msg: runcState + runcState, nfds: 1, err: "more than one JSON value"},
		{name: "no seccompFd", msg: strings.Replace(runcState, `["seccompFd"]`, `["other"]`, 1), nfds: 1, err: `no "seccompFd"`},
		{name: "names and fds disagree", msg: runcState, nfds: 2, err: "names 1 descriptors (fds), 2 came with it"},
		{name: "no fds", msg: runcState, nfds: 0, err: "names 1 descriptors"},
		{name: "name twice", msg: strings.Replace(runcState, `["seccompFd"]`, `["seccompFd","seccompFd"]`, 1), nfds: 2, err: "given twice"},
		{name: "pid 0 (crun's exec)", msg: strings.Replace(runcState, `"pid":4242,"metadata"`, `"pid":0,"metadata"`, 1), nfds: 1, index: 0},
		{name: "negative pid", msg: strings.Replace(runcState, `"pid":4242,"metadata"`, `"pid":-1,"metadata"`, 1), nfds: 1, err: "pid -1"},
		{name: "no id", msg: strings.Replace(runcState, `"id":"c1",`, ``, 1), nfds: 1, err: "no container id"},
		{name: "oversize", msg: `{"x":"` + strings.Repeat("a", MaxStateSize) + `"}`, nfds: 1, err: "at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, index, err := ParseState([]byte(tc.msg), tc.nfds)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseState: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || index != tc.index {
				t.Fatalf("ParseState: index %d, %v; want %d, nil", index, err, tc.index)
			}
			if st.State.ID != "c1" || st.Metadata != "paddock" || st.State.Annotations["io.kubernetes.pod.name"] != "agent-0" {
				t.Errorf("state not read whole: %+v", st)
			}
		})
	}
}

// FuzzParseState: any message and descriptor count gives an error or a
// state that holds the checks' promises; never a panic.
func FuzzParseState(f *testing.F) {
	f.Add([]byte(runcState), 1)
	f.Add([]byte(`{"fds":["seccompFd","x"],"pid":1,"state":{"id":"a"}}`), 2)
	f.Add([]byte(`{"fds":null,"pid":1e99}`), 0)
	f.Fuzz(func(t *testing.T, msg []byte, nfds int) {
		st, index, err := ParseState(msg, nfds)
		if err != nil {
			return
		}
		if index < 0 || index >= nfds || len(st.Fds) != nfds || st.Fds[index] != specs.SeccompFdName || st.Pid < 0 || st.State.ID == "" {
			t.Fatalf("accepted %q (nfds %d) as index %d, state %+v", msg, nfds, index, st)
		}
	})
}

// listener returns a real seccomp listener: a filter that sends one unused
// syscall number to it, installed on a thread that ends with the test's
// goroutine (the kernel keeps the listener as long as a descriptor does).
func listener(t *testing.T) int {
	t.Helper()
	type res struct {
		fd  int
		err error
	}
	ch := make(chan res)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ch <- res{-1, err}
			return
		}
		prog := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 1023, Jt: 0, Jf: 1},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		}
		fd, err := sys.SeccompSetModeFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
		ch <- res{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Skipf("needs a seccomp listener: %v", r.err)
	}
	return r.fd
}

// send writes msg with fds over one end of a fresh stream socket pair (as
// runc dials the listenerPath) and returns the other end, as the runtime's
// connection to paddock agent, and a wait for the sender's end (closed
// once it sent all, or the reader closed its end).
func send(t *testing.T, msg []byte, fds ...int) (*net.UnixConn, func()) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// From a goroutine: a message larger than the socket's buffer waits
	// for the reader (or its close: then EPIPE).
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		defer unix.Close(pair[0])
		_ = unix.Sendmsg(pair[0], msg, oob, nil, 0)
	}()
	f := os.NewFile(uintptr(pair[1]), "handoff")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn), func() { <-sent }
}

// TestReceive: a real listener with the runc state is taken; a pipe named
// seccompFd, a state that does not match the descriptors, and garbage are
// refused, and every descriptor received is closed then.
func TestReceive(t *testing.T) {
	fd := listener(t)
	defer unix.Close(fd)
	conn, wait := send(t, []byte(runcState), fd)
	h, err := Receive(conn, uint32(os.Geteuid()))
	conn.Close()
	wait()
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if h.State.State.ID != "c1" || h.Listener < 0 || isListener(h.Listener) != nil {
		t.Fatalf("Receive = %+v: want container c1 and a seccomp listener", h)
	}
	unix.Close(h.Listener)

	// A runtime of another uid than the agent's (here the test's own
	// connection, taken by an agent of another user) is refused before
	// anything is read: a per-user agent serves its user's containers only.
	other := uint32(os.Geteuid()) + 1
	conn, wait = send(t, []byte(runcState), fd)
	h, err = Receive(conn, other)
	conn.Close()
	wait()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("only uid %d, the agent's own", other)) || h.Listener != -1 {
		t.Errorf("Receive from uid %d by an agent of uid %d = %+v, %v: want a refusal naming the agent's uid, nothing kept", os.Geteuid(), other, h, err)
	}

	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	two, _ := json.Marshal(map[string]any{"fds": []string{"seccompFd"}, "pid": 1, "state": map[string]string{"id": "c2"}})
	for _, c := range []struct {
		name string
		msg  []byte
		fds  []int
		err  string
		// kept: the refused handoff's Listener is the seccomp listener
		// that came with it (the server answers its calls).
		kept bool
	}{
		{"a pipe", []byte(runcState), []int{p[0]}, "not a seccomp listener", false},
		{"two descriptors for one name", two, []int{fd, p[0]}, "names 1 descriptors (fds), 2 came with it", true},
		{"garbage", []byte("\x00\xff"), []int{fd}, "container process state", true},
		{"ends inside its value", []byte(runcState[:100]), []int{fd}, "ended after 100 bytes, inside its JSON value", true},
		{"two values", []byte(runcState + runcState), []int{fd}, "more than one JSON value", true},
		{"over the bound", []byte(`{"x":"` + strings.Repeat("a", MaxStateSize) + `"}`), []int{fd}, "at most", true},
	} {
		before := openFds(t)
		conn, wait := send(t, c.msg, c.fds...)
		h, err := Receive(conn, uint32(os.Geteuid()))
		conn.Close()
		wait()
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: Receive: %v, want an error with %q", c.name, err, c.err)
		}
		if c.kept != (h.Listener >= 0) || h.Listener >= 0 && isListener(h.Listener) != nil {
			t.Errorf("%s: refused handoff's listener %d, want one kept: %v", c.name, h.Listener, c.kept)
		}
		if h.Listener >= 0 {
			unix.Close(h.Listener)
		}
		if after := openFds(t); after != before {
			t.Errorf("%s: %d descriptors open after the refusal, %d before: received ones were kept", c.name, after, before)
		}
	}
}

// TestReceiveInParts: a state with a 40 KB annotation, which the kernel
// splits into parts on a stream socket, is read whole, whether the runtime
// sends it in one sendmsg or several writes, and without waiting for EOF
// (crun's helper leaves the connection open); descriptors with a later
// part are refused, the first part's listener kept.
func TestReceiveInParts(t *testing.T) {
	fd := listener(t)
	defer unix.Close(fd)
	big := strings.Replace(runcState, `"annotations":{`, `"annotations":{"big":"`+strings.Repeat("x", 40000)+`",`, 1)
	for _, c := range []struct {
		name  string
		parts []string
		late  bool // a descriptor with the second part too
		err   string
	}{
		{name: "one sendmsg", parts: []string{big}},
		{name: "three writes", parts: []string{big[:10], big[10:30000], big[30000:]}},
		{name: "a descriptor late", parts: []string{big[:10], big[10:]}, late: true, err: "descriptors came after the first 10 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(pair[0]) // open until the end: no EOF to wait for
			f := os.NewFile(uintptr(pair[1]), "handoff")
			nc, err := net.FileConn(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			conn := nc.(*net.UnixConn)
			defer conn.Close()
			// A safety net: a Receive that waited for EOF fails here.
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			sent := make(chan error, 1)
			go func() {
				for i, p := range c.parts {
					var oob []byte
					if i == 0 || c.late {
						oob = unix.UnixRights(fd)
					}
					// A blocking socket: sendmsg sends the whole part.
					if err := unix.Sendmsg(pair[0], []byte(p), oob, nil, 0); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			before := openFds(t)
			h, err := Receive(conn, uint32(os.Geteuid()))
			if serr := <-sent; serr != nil {
				t.Fatal(serr)
			}
			if h.Listener >= 0 {
				defer unix.Close(h.Listener)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || h.Listener < 0 {
					t.Fatalf("Receive: %v, listener %d; want an error with %q and the first part's listener", err, h.Listener, c.err)
				}
				if after := openFds(t); after != before+1 {
					t.Errorf("%d descriptors open after, %d before: the late one was kept", after, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if got := h.State.State.Annotations["big"]; len(got) != 40000 || h.State.State.ID != "c1" || isListener(h.Listener) != nil {
				t.Errorf("Receive: annotation of %d bytes, id %q, listener %d: want the whole state and the listener", len(got), h.State.State.ID, h.Listener)
			}
		})
	}
}

// openFds counts this process's open descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
