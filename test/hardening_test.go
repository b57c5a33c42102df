package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// signalsThroughDescriptors: the signal paths that go through a file
// descriptor instead of a signal syscall. Making a foreign process the owner
// of a descriptor (F_SETOWN, F_SETOWN_EX, FIOSETOWN) would have the kernel
// send it a signal of the agent's choosing (F_SETSIG, here SIGKILL) on the
// next I/O; each is refused with EPERM and the foreign process lives.
// Owning one's own child still works. TIOCSTI (typing into a terminal) is
// refused; TIOCSIG on a pty whose foreground group is the agent's own works.
func signalsThroughDescriptors(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	F := itoa(f.Pid())
	r := b.sh(t, `for how in setown setown-ex fiosetown; do echo "$how: $($AGENTHELPER $how `+F+` 9)"; done
sleep 300 & c=$!
$AGENTHELPER setown $c 15; wait $c; echo owned=$?
echo "tiocsti: $($AGENTHELPER tiocsti 0)"
$AGENTHELPER tiocsig-own-pty 2
`)
	if !f.Alive(t) {
		t.Fatalf("foreign process %d died: a descriptor owner let a signal through\n%s", f.Pid(), r)
	}
	for _, want := range []string{"setown: err EPERM", "setown-ex: err EPERM", "fiosetown: err EPERM", "owned=143",
		"tiocsti: err EPERM", "child: signal: interrupt"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agent output lacks %q\n%s", want, r)
		}
	}
	for _, want := range []string{"fcntl(F_SETOWN) of pid " + F, "fcntl(F_SETOWN_EX) of pid " + F, "ioctl(FIOSETOWN) of pid " + F, "ioctl(TIOCSTI)"} {
		if !strings.Contains(r.callerStderr(), want) {
			t.Errorf("the agent's stderr lacks the refusal %q\n%s", want, r)
		}
	}
	n := 0
	for _, rec := range r.records(t) {
		if rec["action"] == "signal_denied" && rec["target"] == float64(f.Pid()) && (rec["syscall"] == "fcntl" || rec["syscall"] == "ioctl") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("want 3 journal records of descriptor-owner refusals aimed at %d, got %d:\n%s", f.Pid(), n, r.journal)
	}
}

// forkStormWhileSignalling: an agent that forks processes as fast as it can
// and signals each one, interleaved with a foreign kill per child: every
// owned signal is delivered, every foreign one refused, nothing is lost or
// mis-answered. 1,000 children by default; PADDOCK_LONG_TESTS=1 runs the
// issue's 10,000 (docs/fuzz.md lists the long variants).
func forkStormWhileSignalling(t *testing.T, b backend) {
	b.require(t)
	n := 1000
	if os.Getenv("PADDOCK_LONG_TESTS") == "1" {
		n = 10000
	}
	f := startForeign(t, "sleep", "300")
	r := b.runPaddock(t, "--no-notify-stderr", "--", "bash", "-c", `ok=0 bad=0 refused=0 wrong=0
for ((i = 0; i < `+itoa(n)+`; i++)); do
	sleep 30 &
	if kill -TERM $! 2>/dev/null; then ok=$((ok+1)); else bad=$((bad+1)); fi
	if kill -TERM `+itoa(f.Pid())+` 2>/dev/null; then wrong=$((wrong+1)); else refused=$((refused+1)); fi
done
wait
echo "ok=$ok bad=$bad refused=$refused wrong=$wrong"`)
	if !f.Alive(t) {
		t.Fatalf("foreign process died during the storm\n%s", r)
	}
	want := "ok=" + itoa(n) + " bad=0 refused=" + itoa(n) + " wrong=0"
	if !strings.Contains(r.stdout, want) {
		t.Fatalf("want %q\n%s", want, r)
	}
	denied := 0
	for _, rec := range r.records(t) {
		if rec["action"] == "signal_denied" && rec["target"] == float64(f.Pid()) {
			denied++
		}
	}
	if !strings.Contains(r.stderr, `"message":"`+itoa(n)+` refusals (not_owned `+itoa(n)+`)`) && denied != n {
		t.Errorf("want %d refusals counted (journal has %d)\n%s", n, denied, r.stderr)
	}
}

// targetsExitingMidDecision: signals aimed at children that exit at once,
// so that many targets are gone (or zombies) between the notification and
// the decision, or between the decision and the kernel's delivery. Each
// call must end as the kernel would end it (delivered, or ESRCH), never as
// a refusal, and paddock must not stumble.
func targetsExitingMidDecision(t *testing.T, b backend) {
	b.require(t)
	r := b.sh(t, `ok=0 gone=0 other=0
for ((i = 0; i < 300; i++)); do
	/bin/true &
	err=$(kill -TERM $! 2>&1) && ok=$((ok+1)) || case $err in *"No such process"*) gone=$((gone+1));; *) other=$((other+1)); echo "$err";; esac
done
wait
echo "total=$((ok+gone)) other=$other"`)
	if r.code != 0 || !strings.Contains(r.stdout, "total=300 other=0") {
		t.Fatalf("want every kill delivered or ESRCH\n%s", r)
	}
	if strings.Contains(r.stderr, "paddock refused") || strings.Contains(r.journal, "signal_denied") {
		t.Fatalf("a vanishing owned target was reported as a refusal\n%s\njournal:\n%s", r, r.journal)
	}
}

// journalReadOnlyStopsBeforeStart: a --journal on a read-only file system
// stops paddock before the agent runs, naming the file and the reason.
func journalReadOnlyStopsBeforeStart(t *testing.T, b backend) {
	b.require(t)
	requireUnsharePid(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount")
	}
	dir, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	journal := filepath.Join(dir, "j.jsonl")
	out, err := exec.Command("unshare", "--mount", "sh", "-c", `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
exec "$2" run --backend "$3" --journal "$4" -- touch "$5"`, "sh", dir, bins.paddock, string(b), journal, marker).CombinedOutput()
	if exitCode(err) == 0 {
		t.Fatalf("paddock started with a read-only journal:\n%s", out)
	}
	if !strings.Contains(string(out), journal) || !strings.Contains(string(out), "read-only file system") {
		t.Errorf("want an error naming %s and the read-only file system:\n%s", journal, out)
	}
	if fileExists(marker) {
		t.Error("the agent ran without its journal")
	}
}

// pidReusedAfterCachedDecision: the supervisor keeps a pin (a pidfd) on a
// process it has decided about, to decide the next signal to it without
// reading /proc again. Here the agent signals its own child (owned, pinned),
// kills and reaps it, and the test then has a foreign process take the same
// pid (through ns_last_pid); the agent's next signal to that pid must be
// refused: the pin says its process is gone, and the pid is decided afresh.
func pidReusedAfterCachedDecision(t *testing.T, b backend) {
	b.require(t)
	const lastPid = "/proc/sys/kernel/ns_last_pid"
	if err := unix.Access(lastPid, unix.W_OK); err != nil {
		t.Skipf("needs a writable %s (root in the PID namespace's owner) to reuse a pid on purpose: %v", lastPid, err)
	}
	dir := t.TempDir()
	fifo, pidFile := filepath.Join(dir, "go"), filepath.Join(dir, "pid")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// No command in the agent forks between the reap and the last kill, so
	// that nothing of the agent's takes the pid first.
	cmd, journal := b.paddockCmd(t, "--", "bash", "-c", `sleep 1000 & c=$!
kill -CONT $c || exit 10
kill -KILL $c; wait $c
echo $c > `+pidFile+`.new && mv `+pidFile+`.new `+pidFile+`
read -r _ < `+fifo+`
kill -TERM $c; echo "rc=$?"`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			_ = os.WriteFile(fifo, []byte("go\n"), 0)
		}
	}
	defer func() { release(); _ = cmd.Wait() }()
	waitFor(t, "the agent's reaped child pid", func() bool { return fileExists(pidFile) })
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(pidFile)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var f *proc
	for try := 0; try < 50 && f == nil; try++ {
		if err := os.WriteFile(lastPid, []byte(itoa(pid-1)), 0); err != nil {
			t.Skipf("needs to write %s to reuse a pid on purpose: %v", lastPid, err)
		}
		p := startForeign(t, "sleep", "300")
		if p.Pid() == pid {
			f = p
		}
	}
	if f == nil {
		t.Skipf("needs pid %d reused by a foreign process; other processes took it in 50 tries", pid)
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("paddock: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	if !f.Alive(t) {
		t.Fatalf("foreign process %d, which reused the pid of the agent's reaped child, was killed\nstdout:\n%s\nstderr:\n%s", pid, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "rc=1") || !strings.Contains(errb.String(), "paddock refused kill(SIGTERM) of pid "+itoa(pid)) {
		t.Errorf("want the kill refused (rc=1) with a message\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if !strings.Contains(readFile(journal), `"target":`+itoa(pid)) {
		t.Errorf("journal has no refusal aimed at %d:\n%s", pid, readFile(journal))
	}
}
