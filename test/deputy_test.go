package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/sys"
)

// siginfoReceiver is a Python program that blocks SIGUSR1, writes its pid
// to the file named by its first argument once it has, waits for the
// signal and writes "code=C pid=P uid=U" of its siginfo to the second.
const siginfoReceiver = `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
i = signal.sigwaitinfo({signal.SIGUSR1})
open(sys.argv[2] + ".tmp", "w").write("code=%d pid=%d uid=%d" % (i.si_code, i.si_pid, i.si_uid))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
`

// receiverScript writes siginfoReceiver into dir and returns the system's
// python3 (one that nobody may run too, not a per-user install) and the
// script's path, skipping without it.
func receiverScript(t *testing.T, dir string) (python, script string) {
	t.Helper()
	python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("needs the system's python3: %v", err)
	}
	script = filepath.Join(dir, "receiver.py")
	if err := os.WriteFile(script, []byte(siginfoReceiver), 0o644); err != nil {
		t.Fatal(err)
	}
	return python, script
}

// waitFile waits up to 10 s for path to exist and returns its contents.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
	}
	t.Fatalf("%s did not appear in 10 s", path)
	return ""
}

// adoptedBehindTheWall: the agent's Landlock domain scopes signals, so the
// kernel refuses any signal from the agent to a process outside it, and an
// adopted process lives outside it. The supervisor then delivers the
// signal itself, after deciding, through the pidfd it pinned: adoption
// keeps working. The receiver sees the caller's pid and uid, with si_code
// SI_QUEUE (-1). A probe of the adopted process works, and one of a
// process that has gone says ESRCH. A signal to an adopted process's group
// (the adopted leader and its children, all outside the domain) reaches
// every member. Agent and processes run as nobody.
func adoptedBehindTheWall(t *testing.T, b backend) {
	b.require(t)
	if abi, err := sys.LandlockABI(); err != nil || abi < 6 {
		t.Skipf("needs Landlock ABI 6 (Linux 6.12+, enabled in lsm=): ABI %d, %v", abi, err)
	}
	dir := nobodyDir(t)
	python, recv := receiverScript(t, dir)
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	r := nobodyStart(t, python, recv, ready, got)
	waitFile(t, ready)
	s := nobodyStart(t, "sleep", "300")
	// A group of its own: setsid makes sh lead it (no fork: it is no
	// group leader yet), and its two sleeps are in it.
	g := nobodyStart(t, "setsid", "sh", "-c", "sleep 300 & sleep 300 & wait")
	rp, sp, gp := itoa(r.Pid()), itoa(s.Pid()), itoa(g.Pid())
	script := `P=` + bins.paddock + `
$P adopt ` + rp + ` --reason "deputy test" >/dev/null && $P adopt ` + sp + ` --reason "deputy test" >/dev/null && echo adopted
echo "sender=$$"
echo "probe=$($AGENTHELPER kill ` + sp + ` 0)"
kill -USR1 ` + rp + ` && echo usr1=sent
echo "term=$($AGENTHELPER tgkill ` + sp + ` ` + sp + ` 15)"
for i in $(seq 1000); do kill -0 ` + sp + ` 2>/dev/null || break; sleep 0.01; done
echo "gone=$($AGENTHELPER kill ` + sp + ` 0)"
for i in $(seq 1000); do [ "$(pgrep -c -g ` + gp + `)" = 3 ] && break; sleep 0.01; done
$P adopt ` + gp + ` --reason "deputy test" >/dev/null && kill -TERM -- -` + gp + ` && echo group=sent
for i in $(seq 1000); do kill -0 -- -` + gp + ` 2>/dev/null || break; sleep 0.01; done
echo "group-gone=$($AGENTHELPER kill -` + gp + ` 0)"`
	out, lines := b.nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "adopted", "probe=ok", "usr1=sent", "term=ok", "gone=err ESRCH", "group=sent", "group-gone=err ESRCH")
	sender := ""
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "sender="); ok {
			sender = v
		}
	}
	if want := "code=-1 pid=" + sender + " uid=65534"; waitFile(t, got) != want || sender == "" {
		t.Errorf("the adopted receiver saw %q, want %q\n%s", readFile(got), want, out)
	}
}

// deputyChecksKillPermission: where the agent has no domain that scopes
// signals (here --keep-caps, which starts it outside one), the supervisor
// delivers every signal to another process itself, through its pin, so
// that no pid can be reused between decision and delivery. It then redoes
// the kernel's permission check for the caller: an owned process running
// as nobody may not signal an owned one running as root, though the
// supervisor (root) could; an owned receiver sees the caller's pid with
// si_code SI_QUEUE.
func deputyChecksKillPermission(t *testing.T, b backend) {
	b.require(t)
	if os.Getuid() != 0 {
		t.Skip("needs root, to run an owned process as nobody next to a root one")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("needs setpriv: %v", err)
	}
	dir := t.TempDir()
	python, recv := receiverScript(t, dir)
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	res := b.runPaddock(t, "--keep-caps", "--", "bash", "-c", `sleep 300 & a=$!
echo "nobody=$(setpriv --reuid=65534 --regid=65534 --clear-groups $AGENTHELPER kill $a 15)"
kill -0 $a && echo root-child=alive
`+python+` `+recv+` `+ready+` `+got+` & r=$!
while [ ! -e `+ready+` ]; do sleep 0.01; done
echo "sender=$$"
kill -USR1 $r && echo usr1=sent
wait $r
kill $a`)
	lines := strings.Split(res.stdout, "\n")
	wantLines(t, res.stdout+res.stderr, lines, "nobody=err EPERM", "root-child=alive", "usr1=sent")
	sender := ""
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "sender="); ok {
			sender = v
		}
	}
	if want := "code=-1 pid=" + sender + " uid=0"; readFile(got) != want || sender == "" {
		t.Errorf("the owned receiver saw %q, want %q\nstdout:\n%s\nstderr:\n%s", readFile(got), want, res.stdout, res.stderr)
	}
}
