package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/reexec"
)

// thiefChild is a root process that is not paddock and lacks the privilege
// to take descriptors out of the agent (no capabilities, as a container's
// root without CAP_SYS_PTRACE): thiefChild SOCKET. It asks for a takeover,
// tries what a new agent would do with a challenge (pidfd_getfd), answers
// a guess when that fails, and prints how many descriptors it was sent.
const thiefChild = "__agent_test_takeover_thief"

func thiefMain(args []string) int {
	// Capabilities are a thread's: everything below runs on this one.
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		fmt.Printf("capset: %v\n", err)
		return 1
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: args[0], Net: "unix"})
	if err != nil {
		fmt.Printf("connect: %v\n", err)
		return 1
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(takeoverRequest)); err != nil {
		fmt.Printf("request: %v\n", err)
		return 1
	}
	cred, err := unix.GetsockoptUcred(connFd(conn), unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		fmt.Printf("SO_PEERCRED: %v\n", err)
		return 1
	}
	got, getfd := 0, "not tried"
	buf, oob := make([]byte, MaxStateSize+1), make([]byte, unix.CmsgSpace(MaxFds*4))
	for {
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			break
		}
		fds, _ := parseRights(oob[:oobn])
		got += len(fds)
		for _, fd := range fds {
			unix.Close(fd)
		}
		c := challenge{Fd: -1}
		if json.Unmarshal(buf[:n], &c) == nil && c.Fd >= 0 {
			pidfd, err := unix.PidfdOpen(int(cred.Pid), 0)
			if err == nil {
				_, err = unix.PidfdGetfd(pidfd, c.Fd, 0)
				unix.Close(pidfd)
			}
			getfd = fmt.Sprint(err)
			msg, _ := json.Marshal(proof{Proof: strings.Repeat("00", proofSize)})
			_, _ = conn.Write(msg)
		}
	}
	fmt.Printf("descriptors=%d getfd=%s\n", got, getfd)
	return 0
}

// connFd is conn's descriptor, for a getsockopt of the thief's.
func connFd(conn *net.UnixConn) int {
	f, err := conn.File()
	if err != nil {
		return -1
	}
	return int(f.Fd()) // a dup, kept open for the child's short life
}

// TestTakeoverNeedsProof: a root peer that cannot take descriptors out of
// the agent (no CAP_SYS_PTRACE) asks for a takeover and is sent nothing:
// no listener, no socket; the agent logs who it was (pid, executable) and
// goes on serving. A peer that can (this test, root) takes a running
// container's listener and the socket over, and serves the container's
// next call. Without the challenge the thief is sent the listeners.
func TestTakeoverNeedsProof(t *testing.T) {
	h := startHarness(t)
	// A container served by the first agent, waiting for the switch.
	gate := filepath.Join(t.TempDir(), "go")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kept := h.start(t, "kept", fmt.Sprintf(`echo ready
while [ ! -e %s ]; do sleep 0.01; done
(kill -9 1; echo lifeline=$?)`, gate), w, w)
	w.Close()
	out := bufio.NewReader(r)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		_ = kept.Process.Kill()
		_ = kept.Wait()
		t.Fatalf("the container did not start: %q, %v", line, err)
	}
	// The thief.
	thief := reexec.Command(thiefChild, h.socket)
	got, err := thief.CombinedOutput()
	if err != nil {
		t.Fatalf("thief: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "descriptors=0 ") || !strings.Contains(string(got), "getfd=operation not permitted") {
		t.Errorf("the thief, a root process without CAP_SYS_PTRACE, was handed descriptors or could take them: %s", got)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "takeover refused") || !strings.Contains(logs, fmt.Sprintf(`"peer_pid":%d`, thief.Process.Pid)) || !strings.Contains(logs, `"peer_exe":`) {
		t.Errorf("the refusal is not logged with the peer's pid and executable\n%s", logs)
	}
	// Still serving: a new container's lifeline holds.
	if o := h.container(t, "after-thief", `(kill -9 1; echo lifeline=$?)`); !strings.Contains(o, "lifeline=1\n") {
		t.Errorf("after the refused takeover, the agent does not serve\n%s", o)
	}
	// A real takeover, by this process (root, CAP_SYS_PTRACE).
	taken, err := TakeOver(h.socket)
	if err != nil {
		t.Fatalf("TakeOver: %v\n%s", err, h.logs)
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(taken.containers)), func(c *container) bool { return c.id == "kept" }) {
		t.Errorf("the running container was not taken over: %v", taken.containers)
	}
	if err := <-h.done; err != nil {
		t.Errorf("the old agent's Serve: %v", err)
	}
	h.done <- nil // for the harness's cleanup
	s2 := &Server{Log: zerolog.New(h.logs), Taken: taken}
	done2 := make(chan error, 1)
	go func() { done2 <- s2.Serve(taken.Listener) }()
	defer func() {
		taken.Listener.Close()
		if err := <-done2; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("the new agent's Serve: %v", err)
		}
	}()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, _ := readAll(out)
	_ = kept.Wait()
	if !strings.Contains(rest, "lifeline=1\n") || !strings.Contains(rest, "paddock refused kill(SIGKILL) of pid 1") {
		t.Errorf("the container taken over was not served by the new agent\n%s\n%s", rest, h.logs)
	}
	if !strings.Contains(h.logs.String(), "proved it may take") {
		t.Errorf("the accepted takeover is not logged\n%s", h.logs)
	}
}

// readAll reads r to its end.
func readAll(r *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := r.WriteTo(&b)
	return b.String(), err
}

// TestTakeoverLarge: a takeover of containers whose states hold 200 KB
// annotations each, a batch the kernel splits into many parts and Go's
// non-blocking socket writes in several, and of a refused handoff's
// listener: the new agent takes all of them, serves the containers' next
// calls, and goes on refusing the refused one's.
func TestTakeoverLarge(t *testing.T) {
	h := startHarness(t)
	gate := filepath.Join(t.TempDir(), "go")
	script := fmt.Sprintf(`echo ready
while [ ! -e %s ]; do sleep 0.01; done
(kill -9 1; echo lifeline=$?)
kill -CONT $$; echo own=$?`, gate)
	type started struct {
		cmd *exec.Cmd
		out *bufio.Reader
	}
	var all []started
	for i, env := range [][]string{{"HARNESS_ANNOTATION=200000"}, {"HARNESS_ANNOTATION=200000"}, {"HARNESS_PID=-1"}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cmd := h.startWith(t, fmt.Sprintf("large%d", i), script, env, w, w)
		w.Close()
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		out := bufio.NewReader(r)
		if line, err := out.ReadString('\n'); line != "ready\n" {
			t.Fatalf("container large%d did not start: %q, %v\n%s", i, line, err, h.logs)
		}
		all = append(all, started{cmd, out})
	}
	taken, err := TakeOver(h.socket)
	if err != nil {
		t.Fatalf("TakeOver: %v\n%s", err, h.logs)
	}
	if len(taken.containers) != 3 || len(taken.listeners) != 3 || len(taken.detached) != 1 {
		t.Errorf("taken over: %d containers, %d listeners, %d detached; want 3, 3, 1", len(taken.containers), len(taken.listeners), len(taken.detached))
	}
	if err := <-h.done; err != nil {
		t.Errorf("the old agent's Serve: %v", err)
	}
	h.done <- nil // for the harness's cleanup
	s2 := &Server{Log: zerolog.New(h.logs), Taken: taken}
	done2 := make(chan error, 1)
	go func() { done2 <- s2.Serve(taken.Listener) }()
	defer func() {
		taken.Listener.Close()
		if err := <-done2; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("the new agent's Serve: %v", err)
		}
	}()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, s := range all {
		rest, _ := readAll(s.out)
		_ = s.cmd.Wait()
		want := []string{"lifeline=1\n", "own=0\n"}
		if i == 2 {
			want = []string{"lifeline=1\n", "own=1\n", "was refused"}
		}
		for _, w := range want {
			if !strings.Contains(rest, w) {
				t.Errorf("container large%d after the takeover lacks %q\n%s", i, w, rest)
			}
		}
	}
}
