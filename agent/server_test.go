package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/proctest"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/journal"
)

// The runtime-free harness: a child of the test, started in a PID
// namespace of its own (its pid 1), does what an OCI runtime's init does
// for a container whose profile names a listenerPath: it installs a
// filter with a listener (paddock's own, signals trapped), connects to the
// agent's socket, sends the container process state with the listener by
// SCM_RIGHTS, closes its copy, and execs the container's program (sh).

// harnessChild is the child's job: harnessChild SOCKET ID SCRIPT.
const harnessChild = "__agent_test_container"

func TestMain(m *testing.M) {
	reexec.Run(reexec.Child{Name: harnessChild, Main: harnessMain}, reexec.Child{Name: benchChild, Main: benchMain},
		reexec.Child{Name: thiefChild, Main: thiefMain}, reexec.Child{Name: elsewhereChild, Main: elsewhereMain})
	os.Exit(m.Run())
}

func harnessMain(args []string) int {
	runtime.LockOSThread() // the filter goes on this thread, which execs
	socket, id, script := args[0], args[1], args[2]
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "harness: %s: %v\n", what, err)
		return 1
	}
	// The host's /proc is still mounted: it names this process by its
	// host pid, which is what a runtime sends.
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fail("read own status", err)
	}
	cr, err := procfs.ParseCreds(b)
	if err != nil {
		return fail("read own status", err)
	}
	prog, err := filter.Build(filter.Options{Action: unix.SECCOMP_RET_USER_NOTIF})
	if err != nil {
		return fail("build filter", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("no_new_privs", err)
	}
	listener, _, err := filter.InstallListener(prog, filter.Install)
	if err != nil {
		return fail("install listener", err)
	}
	// What it sends can be changed, as runtimes do (harnessEnv).
	pid, status := cr.NSpid[0], specs.StateCreating
	if v := os.Getenv("HARNESS_PID"); v != "" {
		if pid, err = strconv.Atoi(v); err != nil {
			return fail("HARNESS_PID", err)
		}
	}
	if v := os.Getenv("HARNESS_STATUS"); v != "" {
		status = specs.ContainerState(v)
	}
	var annotations map[string]string
	if v := os.Getenv("HARNESS_ANNOTATION"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fail("HARNESS_ANNOTATION", err)
		}
		annotations = map[string]string{"large": strings.Repeat("a", n)}
	}
	state, err := json.Marshal(specs.ContainerProcessState{
		Version: specs.Version, Fds: []string{specs.SeccompFdName}, Pid: pid, Metadata: "harness",
		State: specs.State{Version: specs.Version, ID: id, Status: status, Pid: pid, Bundle: "/harness/" + id, Annotations: annotations},
	})
	if err != nil {
		return fail("state", err)
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return fail("connect", err)
	}
	if os.Getenv("HARNESS_SPLIT_CLOSE") != "" {
		// The listener with the state's first bytes, then this process's
		// copy closed before the rest: the agent has the whole message
		// only once no process of the container holds the listener.
		if _, _, err := conn.WriteMsgUnix(state[:10], unix.UnixRights(listener), nil); err != nil {
			return fail("send", err)
		}
		unix.Close(listener)
		if _, err := conn.Write(state[10:]); err != nil {
			return fail("send", err)
		}
	} else if _, _, err := conn.WriteMsgUnix(state, unix.UnixRights(listener), nil); err != nil {
		return fail("send", err)
	}
	conn.Close()
	if os.Getenv("HARNESS_KEEP") != "" {
		// As crun's exec does: a trapped call before the exec, while this
		// process still holds its copy of the listener (closing the
		// agent's copy then ends nothing: the call waits for an answer).
		err := unix.Kill(os.Getpid(), unix.SIGCONT)
		fmt.Printf("before-exec=%v\n", err)
	}
	unix.Close(listener)
	return fail("exec sh", syscall.Exec("/bin/sh", []string{"sh", "-c", script}, os.Environ()))
}

// harness is an agent serving a test socket.
type harness struct {
	socket, journal string
	logs            *syncWriter
	ln              *net.UnixListener
	done            chan error
}

func startHarness(t testing.TB) *harness {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: a PID namespace for the container")
	}
	dir, err := os.MkdirTemp("", "pda")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{socket: filepath.Join(dir, "agent.sock"), journal: filepath.Join(dir, "j.jsonl"), logs: &syncWriter{b: &bytes.Buffer{}}, done: make(chan error, 1)}
	j, err := journal.Open(h.journal, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.ln, err = ListenPath(h.socket)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Journal: j, Log: zerolog.New(h.logs)}
	go func() { h.done <- s.Serve(h.ln) }()
	t.Cleanup(func() {
		h.ln.Close()
		if err := <-h.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		j.Close()
	})
	return h
}

// container runs the harness child as container id with script, and
// returns its output.
func (h *harness) container(t testing.TB, id, script string, env ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := h.startWith(t, id, script, env, &out, &out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("container %s ran over a minute\n%s", id, out.String())
	}
	return out.String()
}

// start starts the harness child as container id with script, its
// output going to stdout and stderr.
func (h *harness) start(t testing.TB, id, script string, stdout, stderr io.Writer) *exec.Cmd {
	t.Helper()
	return h.startWith(t, id, script, nil, stdout, stderr)
}

// startWith is start with env added to the child's environment: the
// harness's knobs, HARNESS_PID (the pid it sends: "0" as crun's exec
// does, "-1" to have its handoff refused), HARNESS_STATUS (the status it
// sends: "running" as an exec session's) and HARNESS_KEEP (it keeps its
// copy of the listener and makes a trapped call, kill(self, SIGCONT),
// before its exec, printing "before-exec=" and the error),
// HARNESS_ANNOTATION (an annotation of that many bytes in its state),
// HARNESS_SPLIT_CLOSE (it closes its copy of the listener before it
// sends the state's end).
func (h *harness) startWith(t testing.TB, id, script string, env []string, stdout, stderr io.Writer) *exec.Cmd {
	t.Helper()
	self, argv := reexec.Argv(harnessChild, h.socket, id, script)
	cmd := exec.Command(self, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("needs a new PID namespace: %v", err)
	}
	return cmd
}

// syncWriter is a bytes.Buffer safe for the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestServerHarness: served without a runtime, a container's first process
// (pid 1) signals its own child; a descendant's kill -9 1 is refused with
// paddock's message on its stderr and a journal record naming the
// container; a process outside the container (a sleep of the test's) cannot
// be signalled (its pid names nothing inside); a malformed handoff is
// refused and the agent goes on.
func TestServerHarness(t *testing.T) {
	h := startHarness(t)
	// Garbage first, from a root peer: refused with a log line only.
	c, err := net.Dial("unix", h.socket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("{not json")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	out := h.container(t, "h1", fmt.Sprintf(`sleep 100 & kill $!; echo own=$?
(kill -9 1; echo lifeline=$?)
kill -0 1; echo probe=$?
kill -TERM %d; echo outside=$?`, sleep.Process.Pid))
	for _, want := range []string{"own=0\n", "lifeline=1\n", "probe=0\n", "outside=1\n", "paddock refused kill(SIGKILL) of pid 1 (sh)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the container's output lacks %q\n%s", want, out)
		}
	}
	if !proctest.Alive(t, sleep.Process.Pid) {
		t.Errorf("the process outside the container was killed")
	}
	j, _ := os.ReadFile(h.journal)
	// One record: the node's pid names no process inside the container's
	// PID namespace, so that kill is ESRCH, as the kernel would say.
	if n := strings.Count(string(j), `"container":"h1"`); n != 1 || !strings.Contains(string(j), `"listener_metadata":"harness"`) {
		t.Errorf("want one record naming container h1 with its metadata\n%s", j)
	}
	// The second container is served too: the garbage stopped nothing.
	out = h.container(t, "h2", `(kill -9 1; echo lifeline=$?)`)
	if !strings.Contains(out, "lifeline=1\n") {
		t.Errorf("the second container was not served\n%s", out)
	}
	if !strings.Contains(h.logs.String(), "handoff refused") {
		t.Errorf("the malformed handoff was not logged\n%s", h.logs)
	}
}

// elsewhereChild serves a socket from a PID namespace of its own, with the
// node's /proc still mounted (it reads every container), until SIGTERM:
// elsewhereChild SOCKET JOURNAL. The kernel names no caller to it (pid 0):
// the containers' processes are in no namespace it sees.
const elsewhereChild = "__agent_test_server_elsewhere"

func elsewhereMain(args []string) int {
	j, err := journal.Open(args[1], journal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := ListenPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		<-stop
		ln.Close()
	}()
	fmt.Println("listening")
	s := &Server{Journal: j, Log: zerolog.New(os.Stderr)}
	err = s.Serve(ln)
	j.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestCallerOutOfSightRefused: an agent that cannot name a call's caller
// (here it runs in a PID namespace of its own, so the kernel gives it pid
// 0 for every caller) refuses the call with EPERM and a journal record,
// where it let it through undecided before (the kill of the container's
// own child then succeeded).
func TestCallerOutOfSightRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: PID namespaces")
	}
	dir, err := os.MkdirTemp("", "pdo")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h := &harness{socket: filepath.Join(dir, "agent.sock"), journal: filepath.Join(dir, "j.jsonl")}
	agentCmd := reexec.Command(elsewhereChild, h.socket, h.journal)
	agentCmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	var agentLog bytes.Buffer
	agentCmd.Stderr = &agentLog
	stdout, err := agentCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agentCmd.Start(); err != nil {
		t.Skipf("needs a new PID namespace: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = agentCmd.Process.Signal(syscall.SIGTERM)
			_ = agentCmd.Wait()
		}
	}
	defer stop()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "listening\n" {
		stop()
		t.Fatalf("the agent did not listen: %q, %v\n%s", line, err, agentLog.String())
	}
	out := h.container(t, "far", `sleep 100 & kill $!; echo own=$?`)
	stop()
	if !strings.Contains(out, "own=1\n") {
		t.Errorf("a call whose caller the agent cannot name was not refused\n%s\n%s", out, agentLog.String())
	}
	j, _ := os.ReadFile(h.journal)
	if !strings.Contains(string(j), `"rule":"undecidable"`) || !strings.Contains(string(j), "could not place the caller") || !strings.Contains(string(j), `"container":"far"`) {
		t.Errorf("want an undecidable record naming container far\n%s\n%s", j, agentLog.String())
	}
}

// TestContainerNestedAndZombies: a call from a PID namespace the container
// made inside itself is let through undecided, as docs/fleet.md says; a
// signal to the container's own zombie (a child its parent has not
// reaped) gets 0, as the kernel gives it, where a zombie's cgroup, which
// cgroup v1 shows as the root, made it foreign before.
func TestContainerNestedAndZombies(t *testing.T) {
	h := startHarness(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("needs unshare (util-linux): %v", err)
	}
	d := t.TempDir()
	// Run with a /proc of the container's own, in a mount namespace of
	// its own: a child that exits once its parent is sleep(1), which
	// never reaps it; then the zombie, and its parent, are signalled.
	zombie := fmt.Sprintf(`d=%s
(sh -c "echo \$\$ >$d/zpid; read x <$d/fifo" & exec sleep 100) &
parent=$!
until [ -s $d/zpid ] && [ "$(cat /proc/$parent/comm)" = sleep ]; do :; done
z=$(cat $d/zpid)
echo >$d/fifo
until [ "$(cut -d' ' -f3 /proc/$z/stat)" = Z ]; do :; done
kill -TERM $z; echo zombie=$?
kill $parent; echo parent=$?
`, d)
	if err := os.WriteFile(filepath.Join(d, "zombie.sh"), []byte(zombie), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(d, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A caller in a namespace nested in the container's is decided with
	// its pids read there: its own child by its number there is allowed;
	// the container's sleep by the container's number, which names nothing
	// in the nested namespace (it holds 1 and 2), is ESRCH, and the sleep
	// lives on; and its pid 1, the nested sh, is the container's process
	// of that namespace (read as the container's 1, it would be the
	// container's first process, a lifeline against its descendants).
	out := h.container(t, "nz", fmt.Sprintf(`sleep 100 & sleep 100 & o=$!
unshare --pid --fork sh -c "trap 'echo term' TERM; sleep 100 & kill \$!; echo nested=\$?; kill $o 2>/dev/null; echo outer=\$?; sh -c 'kill 1; echo one=\$?'"
kill $o; echo outer-after=$?
unshare --mount --mount-proc sh %s/zombie.sh`, d))
	for _, want := range []string{"nested=0\n", "outer=1\n", "one=0\n", "outer-after=0\n", "zombie=0\n", "parent=0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the container's output lacks %q\n%s\n%s", want, out, h.logs)
		}
	}
}

// TestRefusedHandoffAnswered: a handoff the agent refuses (here a pid of
// -1) whose sender keeps its own copy of the listener and makes a trapped
// call, as crun's exec does, gets EPERM with paddock's message and an
// undecidable journal record naming the container, instead of waiting for
// ever on a listener the agent closed; the agent goes on serving.
func TestRefusedHandoffAnswered(t *testing.T) {
	h := startHarness(t)
	out := h.container(t, "refused", `kill -CONT $$; echo after=$?`, "HARNESS_PID=-1", "HARNESS_KEEP=1")
	for _, want := range []string{"before-exec=operation not permitted\n", "after=1\n", "the runtime's handoff of this process's seccomp listener (container refused) was refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused container's output lacks %q\n%s", want, out)
		}
	}
	j, _ := os.ReadFile(h.journal)
	if n := strings.Count(string(j), `"container":"refused"`); n != 2 || !strings.Contains(string(j), `"rule":"undecidable"`) {
		t.Errorf("want two undecidable records naming container refused\n%s", j)
	}
	if !strings.Contains(h.logs.String(), "handoff refused: its listener is kept") {
		t.Errorf("the refusal is not logged\n%s", h.logs)
	}
	if o := h.container(t, "after", `(kill -9 1; echo lifeline=$?)`); !strings.Contains(o, "lifeline=1\n") {
		t.Errorf("after the refused handoff, the agent does not serve\n%s", o)
	}
}

// TestSameIDNewContainer: a second container with the id of one still
// served (podman restart reuses it) is a container of its own, whether its
// handoff says `creating` or `running` (a session whose process is not
// the served container's): its process signals its own child, and its
// descendant's kill -9 1 is refused. Before, it joined the first one, and
// its calls were decided against the first one's processes.
func TestSameIDNewContainer(t *testing.T) {
	h := startHarness(t)
	gate := filepath.Join(t.TempDir(), "go")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := h.start(t, "same", fmt.Sprintf(`echo ready
while [ ! -e %s ]; do sleep 0.01; done
(kill -9 1; echo lifeline=$?)`, gate), w, w)
	w.Close()
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	out := bufio.NewReader(r)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("the first container did not start: %q, %v", line, err)
	}
	for _, status := range []string{"creating", "running"} {
		o := h.container(t, "same", `sleep 100 & kill $!; echo own=$?
(kill -9 1; echo lifeline=$?)`, "HARNESS_STATUS="+status)
		if !strings.Contains(o, "own=0\n") || !strings.Contains(o, "lifeline=1\n") {
			t.Errorf("a second container of the same id, status %s, was not served as its own\n%s\n%s", status, o, h.logs)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, _ := readAll(out)
	_ = first.Wait()
	if !strings.Contains(rest, "lifeline=1\n") {
		t.Errorf("the first container is not served any more\n%s", rest)
	}
}

// TestSessionWithoutPid: a session handed over with pid 0, as crun's exec
// sends it, started in a served container's PID namespace from outside it
// (nsenter, as a runtime's exec): it joins the container, its processes
// signal their own, and its first process is its lifeline against its
// descendants, whether the agent finds it by the listener it still holds
// (kcmp) or, once it holds it no more, by the first call on it. Before,
// the handoff was refused and every call of the session with it.
func TestSessionWithoutPid(t *testing.T) {
	h := startHarness(t)
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skipf("needs nsenter (util-linux) to start a session in the container's PID namespace: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "go")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first := h.start(t, "np", fmt.Sprintf(`echo ready
while [ ! -e %s ]; do sleep 0.01; done`, gate), w, w)
	w.Close()
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	if line, err := bufio.NewReader(r).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the container did not start: %q, %v", line, err)
	}
	for _, c := range []struct{ mode, log string }{
		{"HARNESS_KEEP=1", "its first process holds the listener"},
		{"HARNESS_SPLIT_CLOSE=1", "a session without a pid placed by its first call"},
	} {
		before := len(h.logs.String())
		_, argv := reexec.Argv(harnessChild, h.socket, "np", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo session-lifeline=$?)
kill -0 1; echo probe=$?`)
		cmd := exec.Command(nsenter, append([]string{"-t", strconv.Itoa(first.Process.Pid), "-p", "--", self}, argv[1:]...)...)
		cmd.Env = append(os.Environ(), "HARNESS_PID=0", "HARNESS_STATUS=running", c.mode)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute): // a safety net, not a timing
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s: the session ran over a minute\n%s", c.mode, out.String())
		}
		o := out.String()
		for _, want := range []string{"own=0\n", "session-lifeline=1\n", "probe=0\n", "is a critical session lifeline"} {
			if !strings.Contains(o, want) {
				t.Errorf("%s: the session's output lacks %q\n%s\n%s", c.mode, want, o, h.logs.String()[before:])
			}
		}
		if !strings.Contains(h.logs.String()[before:], c.log) {
			t.Errorf("%s: the agent's log lacks %q\n%s", c.mode, c.log, h.logs.String()[before:])
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
