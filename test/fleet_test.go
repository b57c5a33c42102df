package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/agent"
)

// Fleet mode end to end: `paddock agent` served through Debian's runc
// (apt-get install runc busybox-static; .ci/run does) with containers of
// a static busybox. Each test runs its own agent on a socket in its
// temporary directory and its own runc state directory (runc --root), so
// nothing outside the test is touched.

// fleet is one test's agent and runc.
type fleet struct {
	t       *testing.T
	dir     string
	socket  string
	journal string
	state   string
	agent   *exec.Cmd
	logPath string
	// annotations go into the config.json of each bundle made after they
	// are set (runc sends them to the agent in the state).
	annotations map[string]string
	// shim, when set, is an init program (a static catatonit) copied into
	// each bundle made after it is set, and run as the container's first
	// process with sh as its child.
	shim string
}

// log is what the agents of the test logged so far.
func (f *fleet) log() string { return readFile(f.logPath) }

// newFleet skips without root, runc or a static busybox, and starts an
// agent.
func newFleet(t *testing.T) *fleet {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: the runtime hands listeners to root only, and runc creates containers")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skipf("needs runc (apt-get install runc): %v", err)
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skipf("needs a static busybox (apt-get install busybox-static): %v", err)
	}
	dir, err := os.MkdirTemp("", "pdf") // short: a unix socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fleet{t: t, dir: dir, socket: filepath.Join(dir, "agent.sock"), journal: filepath.Join(dir, "j.jsonl"),
		state: filepath.Join(dir, "runc"), logPath: filepath.Join(dir, "agent.log")}
	f.start()
	t.Cleanup(f.stop)
	return f
}

// start runs an agent on the fleet's socket (with flags) and waits for it
// to listen.
func (f *fleet) start(flags ...string) {
	f.t.Helper()
	logf, err := os.OpenFile(f.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer logf.Close()
	before := len(f.log())
	f.agent = exec.Command(bins.paddock, append([]string{"agent", "--socket", f.socket, "--journal", f.journal, "--log-format", "json"}, flags...)...)
	f.agent.Stdout, f.agent.Stderr = logf, logf
	if err := f.agent.Start(); err != nil {
		f.t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(f.log()[before:], "fleet agent listening") {
			return
		}
	}
	f.t.Fatalf("the agent did not listen in 10 s\n%s", f.log())
}

// stop ends the agent (SIGTERM) and every container of the test.
func (f *fleet) stop() {
	if f.agent != nil && f.agent.ProcessState == nil {
		_ = f.agent.Process.Signal(os.Interrupt)
		_ = f.agent.Wait()
	}
	out, _ := exec.Command("runc", "--root", f.state, "list", "-q").Output()
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command("runc", "--root", f.state, "delete", "-f", id).Run()
	}
}

// bundle writes a busybox bundle named id whose seccomp profile (the one
// `paddock agent profile` prints) hands its listener to the agent, running
// script with sh; hostPID shares the node's PID namespace.
func (f *fleet) bundle(id, script string, hostPID bool) string {
	f.t.Helper()
	b := filepath.Join(f.dir, id)
	f.rootfs(filepath.Join(b, "rootfs"))
	spec := exec.Command("runc", "spec", "--bundle", b)
	if out, err := spec.CombinedOutput(); err != nil {
		f.t.Fatalf("runc spec: %v\n%s", err, out)
	}
	var cfg map[string]any
	p := filepath.Join(b, "config.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		f.t.Fatal(err)
	}
	proc := cfg["process"].(map[string]any)
	proc["terminal"] = false
	proc["args"] = []string{"sh", "-c", script}
	if f.shim != "" {
		bin, err := os.ReadFile(f.shim)
		if err != nil {
			f.t.Fatal(err)
		}
		in := "/bin/" + filepath.Base(f.shim)
		if err := os.WriteFile(filepath.Join(b, "rootfs", in), bin, 0o755); err != nil {
			f.t.Fatal(err)
		}
		proc["args"] = []string{in, "--", "sh", "-c", script}
	}
	cfg["root"].(map[string]any)["readonly"] = false
	linux := cfg["linux"].(map[string]any)
	// The profile `paddock agent profile` prints.
	prof, err := agent.Profile(f.socket, "fleet-test")
	if err != nil {
		f.t.Fatal(err)
	}
	linux["seccomp"] = prof
	if f.annotations != nil {
		cfg["annotations"] = f.annotations
	}
	if hostPID {
		var ns []any
		for _, n := range linux["namespaces"].([]any) {
			if n.(map[string]any)["type"] != "pid" {
				ns = append(ns, n)
			}
		}
		linux["namespaces"] = ns
	}
	raw, err = json.MarshalIndent(cfg, "", " ")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		f.t.Fatal(err)
	}
	return b
}

// rootfs makes a container's root file system at dir: a static busybox
// and its commands.
func (f *fleet) rootfs(dir string) {
	f.t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		f.t.Fatal(err)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), bb, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for _, c := range []string{"sh", "sleep", "kill", "echo", "cat", "pgrep", "mv"} {
		if err := os.Symlink("busybox", filepath.Join(bin, c)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// run runs container id to completion (at most a minute) and returns its
// stdout and stderr.
func (f *fleet) run(id, script string, hostPID bool) (string, string) {
	f.t.Helper()
	b := f.bundle(id, script, hostPID)
	cmd := exec.Command("runc", "--root", f.state, "run", "--bundle", b, id)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = exec.Command("runc", "--root", f.state, "kill", id, "KILL").Run()
		<-done
		f.t.Errorf("container %s ran over a minute", id)
	}
	return out.String(), errb.String()
}

// detach starts container id in the background (runc run --detach), its
// standard descriptors on /dev/null: a pipe would be held open by the
// container until it ends.
func (f *fleet) detach(id, script string) {
	f.t.Helper()
	b := f.bundle(id, script, false)
	if err := exec.Command("runc", "--root", f.state, "run", "--detach", "--bundle", b, id).Run(); err != nil {
		f.t.Fatalf("runc run --detach %s: %v", id, err)
	}
}

// records are the agent's journal records.
func (f *fleet) records() []map[string]any {
	f.t.Helper()
	return result{journal: readFile(f.journal)}.records(f.t)
}

// fleetScript: pid 1 signals its own child; a descendant's kill -9 1 is
// refused; a probe of pid 1 works.
const fleetScript = `sleep 100 & kill $!; echo own=$?
(kill -9 1; echo lifeline=$?)
kill -0 1; echo probe=$?`

// TestFleetContainer: a container's process signals its own child; a
// descendant's `kill -9 1` of the container's first process is refused
// with paddock's message on that process's stderr; the journal record
// names the container and the profile's listenerMetadata.
func TestFleetContainer(t *testing.T) {
	f := newFleet(t)
	out, errOut := f.run("c1", fleetScript, false)
	lines := strings.Split(out, "\n")
	wantLines(t, out+errOut, lines, "own=0", "lifeline=1", "probe=0")
	if !strings.Contains(errOut, "paddock refused kill(SIGKILL) of pid 1 (sh)") || !strings.Contains(errOut, "it is the container's first process") {
		t.Errorf("the container's stderr lacks paddock's message naming the container's first process\n%s", errOut)
	}
	recs := f.records()
	if len(recs) != 1 || recs[0]["container"] != "c1" || recs[0]["listener_metadata"] != "fleet-test" || recs[0]["action"] != "signal_denied" {
		t.Errorf("want one signal_denied record naming c1, got %v", recs)
	}
}

// TestFleetHostPID: a container that shares the node's PID namespace (a
// hostPID pod) cannot signal a process of the node, which survives.
func TestFleetHostPID(t *testing.T) {
	f := newFleet(t)
	node := startForeign(t, "sleep", "300")
	out, errOut := f.run("hp", "kill -TERM "+itoa(node.Pid())+"; echo node=$?; sleep 100 & kill $!; echo own=$?", true)
	wantLines(t, out+errOut, strings.Split(out, "\n"), "node=1", "own=0")
	if !strings.Contains(errOut, "is not owned by this session") {
		t.Errorf("the container's stderr lacks paddock's message\n%s", errOut)
	}
	if !node.Alive(t) {
		t.Error("the node's process died")
	}
}

// TestFleetThreeContainers: three containers at once, each its own
// session: each may signal its own processes and none its first process
// from below, and the journal names each.
func TestFleetThreeContainers(t *testing.T) {
	f := newFleet(t)
	var wg sync.WaitGroup
	outs := make([]string, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, e := f.run(fmt.Sprintf("m%d", i), "sleep 0.5\n"+fleetScript, false)
			outs[i] = o + e
		}()
	}
	wg.Wait()
	for i, o := range outs {
		wantLines(t, o, strings.Split(o, "\n"), "own=0", "lifeline=1", "probe=0")
		if t.Failed() {
			t.Logf("container m%d", i)
		}
	}
	seen := map[any]bool{}
	for _, r := range f.records() {
		seen[r["container"]] = true
	}
	if len(seen) != 3 || !seen["m0"] || !seen["m1"] || !seen["m2"] {
		t.Errorf("want a record from each of m0, m1, m2, got %v", seen)
	}
}

// TestFleetExecSession: a `runc exec` session joins its container: its
// processes may signal the container's, its descendants may not signal
// its first process.
func TestFleetExecSession(t *testing.T) {
	f := newFleet(t)
	f.detach("ex", "sleep 60")
	ex := exec.Command("runc", "--root", f.state, "exec", "ex", "sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo exec-lifeline=$?)
kill -0 1; echo probe=$?`)
	var out, errb bytes.Buffer
	ex.Stdout, ex.Stderr = &out, &errb
	if err := ex.Run(); err != nil {
		t.Fatalf("runc exec: %v\n%s%s", err, out.String(), errb.String())
	}
	wantLines(t, out.String()+errb.String(), strings.Split(out.String(), "\n"), "own=0", "exec-lifeline=1", "probe=0")
	if !strings.Contains(f.log(), `"status":"running"`) {
		t.Errorf("the agent did not serve the exec session\n%s", f.log())
	}
}

// TestFleetAgentRestart: with the agent killed, a running container's
// trapped calls fail with ENOSYS and the runtime refuses a new session; a
// new agent on the same socket serves new containers.
func TestFleetAgentRestart(t *testing.T) {
	f := newFleet(t)
	f.detach("rs", `while [ ! -e /go ]; do sleep 0.05; done
sleep 100 & kill $! 2>/result.err; echo rc=$? >/result.tmp; mv /result.tmp /result
sleep 60`)
	_ = f.agent.Process.Kill()
	_ = f.agent.Wait()
	root := filepath.Join(f.dir, "rs", "rootfs")
	if err := os.WriteFile(filepath.Join(root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := waitFile(t, filepath.Join(root, "result")); got != "rc=1\n" || !strings.Contains(readFile(filepath.Join(root, "result.err")), "Function not implemented") {
		t.Errorf("with the agent gone, want kill to fail with ENOSYS: %q, %q", got, readFile(filepath.Join(root, "result.err")))
	}
	if out, err := exec.Command("runc", "--root", f.state, "exec", "rs", "true").CombinedOutput(); err == nil {
		t.Errorf("with the agent gone, runc exec started a session\n%s", out)
	}
	f.start()
	o, e := f.run("rs2", fleetScript, false)
	wantLines(t, o+e, strings.Split(o, "\n"), "own=0", "lifeline=1", "probe=0")
}

// TestFleetTakeover: a new agent started with --takeover takes every
// listener and the socket from the running one, which then serves nothing
// and exits on SIGTERM (so that an orchestrator does not restart it to take
// everything back); a container
// that makes trapped calls all through the switch sees none of them fail
// (they wait in the kernel's queue), and is served by the new agent
// afterwards, as are new containers.
func TestFleetTakeover(t *testing.T) {
	f := newFleet(t)
	f.detach("tk", `i=0; f=0
while [ ! -e /stop ]; do kill -CONT $$ 2>/dev/null || f=$((f+1)); i=$((i+1)); done
echo "calls=$i failed=$f" >/res.tmp; mv /res.tmp /res
(kill -9 1; echo lifeline=$? >/res2.tmp; mv /res2.tmp /res2)
sleep 60`)
	root := filepath.Join(f.dir, "tk", "rootfs")
	time.Sleep(300 * time.Millisecond) // calls under way before the switch; not a timing assertion
	old := f.agent
	f.start("--takeover")
	for end := time.Now().Add(10 * time.Second); !strings.Contains(f.log(), "handed over: serving nothing") && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	_ = old.Process.Signal(os.Interrupt)
	if err := old.Wait(); err != nil {
		t.Errorf("the old agent did not exit cleanly on SIGINT: %v\n%s", err, f.log())
	}
	time.Sleep(300 * time.Millisecond) // and after it
	if err := os.WriteFile(filepath.Join(root, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := waitFile(t, filepath.Join(root, "res"))
	var calls, failed int
	if _, err := fmt.Sscanf(res, "calls=%d failed=%d", &calls, &failed); err != nil || calls == 0 || failed != 0 {
		t.Errorf("through the switch: %q, want calls and none failed", res)
	}
	t.Logf("through the switch: %s", strings.TrimSpace(res))
	if got := waitFile(t, filepath.Join(root, "res2")); got != "lifeline=1\n" {
		t.Errorf("after the switch, the lifeline refusal: %q", got)
	}
	if !strings.Contains(f.log(), "handed over to a new agent") || !strings.Contains(f.log(), `"containers":1`) {
		t.Errorf("the agents' logs do not show the handover\n%s", f.log())
	}
	if !strings.Contains(f.log(), fmt.Sprintf(`"peer_pid":%d,"peer_uid":0,"peer_exe":%q,"peer_same_binary":true`, f.agent.Process.Pid, bins.paddock)) {
		t.Errorf("the old agent's log does not name the new agent (pid %d, %s)\n%s", f.agent.Process.Pid, bins.paddock, f.log())
	}
	o, e := f.run("tk2", fleetScript, false)
	wantLines(t, o+e, strings.Split(o, "\n"), "own=0", "lifeline=1", "probe=0")
}

// TestFleetLargeAnnotation: a container with a 40 KB annotation, whose
// state the kernel splits into parts on the way to the agent, is served
// (before, the agent read one part, refused the handoff, and runc ran the
// container unserved): its descendant's kill -9 1 is refused and
// journaled.
func TestFleetLargeAnnotation(t *testing.T) {
	f := newFleet(t)
	f.annotations = map[string]string{"example.com/large": strings.Repeat("a", 40000)}
	out, errOut := f.run("big", fleetScript, false)
	wantLines(t, out+errOut, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
	recs := f.records()
	if len(recs) != 1 || recs[0]["container"] != "big" || recs[0]["action"] != "signal_denied" {
		t.Errorf("want one signal_denied record naming big, got %v\n%s", recs, f.log())
	}
}

// TestFleetInitShim: a container whose first process is an init shim (a
// static catatonit, which runs sh as its first child; the agent knows it
// by config.json's process.args): a descendant's kill -9 of the program
// (the shim's first child) is refused like one of the shim; the program
// still signals its own children. Before, only the shim was protected.
func TestFleetInitShim(t *testing.T) {
	f := newFleet(t)
	shim, err := exec.LookPath("catatonit")
	if err != nil {
		t.Skipf("needs catatonit (apt-get install catatonit): %v", err)
	}
	if out, err := exec.Command("readelf", "-lW", shim).Output(); err != nil || strings.Contains(string(out), "INTERP") {
		t.Skipf("needs a static catatonit to copy into the container (%s: %v)", shim, err)
	}
	f.shim = shim
	out, errOut := f.run("shim", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo program=$?)
(kill -9 1; echo init=$?)
kill -0 1; echo probe=$?`, false)
	wantLines(t, out+errOut, strings.Split(out, "\n"), "own=0", "program=1", "init=1", "probe=0")
	if !regexp.MustCompile(`paddock refused kill\(SIGKILL\) of pid \d+ \(sh\).*init shim's first child`).MatchString(errOut) {
		t.Errorf("the container's stderr lacks paddock's message for the program\n%s", errOut)
	}
}

// TestFleetRuntimeWrapper: a bundle whose profile has the NOTIFY rules but
// no listenerPath, as Docker 20.10 hands it to its runtime, is refused by
// runc; through `paddock agent runtime-wrapper` (what Docker's daemon.json
// names as the runtime) it is served: a --pid=host container's kill of a
// node process is refused, its own child killed, the refusal journaled
// with the wrapper's metadata. Docker's engine itself is not run here.
func TestFleetRuntimeWrapper(t *testing.T) {
	f := newFleet(t)
	node := startForeign(t, "sleep", "300")
	strip := func(b string) {
		p := filepath.Join(b, "config.json")
		var cfg map[string]any
		if err := json.Unmarshal([]byte(readFile(p)), &cfg); err != nil {
			t.Fatal(err)
		}
		sc := cfg["linux"].(map[string]any)["seccomp"].(map[string]any)
		delete(sc, "listenerPath")
		delete(sc, "listenerMetadata")
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := "kill -TERM " + itoa(node.Pid()) + "; echo node=$?; sleep 100 & kill $!; echo own=$?"
	plain := f.bundle("plain", script, true)
	strip(plain)
	if out, err := exec.Command("runc", "--root", f.state, "run", "--bundle", plain, "plain").CombinedOutput(); err == nil {
		t.Errorf("runc ran a container with NOTIFY rules and no listenerPath (the wrapper's reason to be is gone?)\n%s", out)
	}
	b := f.bundle("wrapped", script, true)
	strip(b)
	cmd := exec.Command(bins.paddock, "agent", "runtime-wrapper", "--socket", f.socket, "--metadata", "docker", "--",
		"--root", f.state, "run", "--bundle", b, "wrapped")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a safety net, not a timing
		_ = exec.Command("runc", "--root", f.state, "kill", "wrapped", "KILL").Run()
		<-done
		t.Fatalf("the wrapped container ran over a minute\n%s%s", out.String(), errb.String())
	}
	wantLines(t, out.String()+errb.String(), strings.Split(out.String(), "\n"), "node=1", "own=0")
	if !node.Alive(t) {
		t.Error("the node's process died")
	}
	recs := f.records()
	if len(recs) != 1 || recs[0]["container"] != "wrapped" || recs[0]["listener_metadata"] != "docker" {
		t.Errorf("want one record of container wrapped with metadata docker, got %v", recs)
	}
}

// writeProfile writes the seccomp profile `paddock agent profile` prints
// for the agent at socket, with metadata, to path: what an engine's
// --security-opt seccomp= takes.
func writeProfile(t *testing.T, socket, metadata, path string) {
	t.Helper()
	prof, err := agent.Profile(socket, metadata)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
