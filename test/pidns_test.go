package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxes are the ways an agent's harness runs commands in a PID
// namespace of their own: plain unshare(1) (as `unshare -Urpf
// --mount-proc` reproduces it), and bubblewrap's --unshare-pid (Codex's
// sandbox, Claude Code's sandbox.enabled). Each is a command prefix; the
// user namespace lets an unprivileged agent make one.
var sandboxes = []struct {
	name string
	argv []string
}{
	{"unshare", []string{"unshare", "-Urpf", "--mount-proc"}},
	{"bwrap", []string{"bwrap", "--unshare-user", "--unshare-pid", "--dev-bind", "/", "/", "--proc", "/proc"}},
}

// requireSandbox skips unless the sandbox's tool is installed and makes a
// PID namespace here, outside paddock, as nobody.
func requireSandbox(t *testing.T, argv []string) {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Skipf("needs %s: %v", argv[0], err)
	}
	args := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	if out, err := exec.Command("setpriv", append(args, "true")...).CombinedOutput(); err != nil {
		t.Skipf("needs unprivileged user and PID namespaces (%s): %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// killInNestedPidNamespace: `sleep 30 & kill $!` inside a PID namespace
// the agent made names the sleep by its number there (2 or 3, which in
// paddock's namespace are kernel threads): paddock reads it there, and
// the kill succeeds; so does a kill of a process group by its number
// there (setsid makes the sleep lead one). As root (the issue's `paddock run -- unshare -Urpf
// --mount-proc ...`) and as nobody, with unshare and with bubblewrap.
func killInNestedPidNamespace(t *testing.T, b backend) {
	b.require(t)
	dir := nobodyDir(t)
	for _, sb := range sandboxes {
		t.Run(sb.name, func(t *testing.T) {
			requireSandbox(t, sb.argv)
			// A refused kill ends the namespace (its first process exits),
			// and the sleeps with it, rather than wait on them.
			inner := `sleep 30 & s=$!; kill $s; r=$?; echo kill=$r; [ $r = 0 ] || exit 1; wait $s; echo status=$?; ` +
				`setsid sleep 30 & g=$!; until [ "$(cut -d' ' -f5 /proc/$g/stat)" = $g ]; do :; done; ` +
				`kill -TERM -$g; r=$?; echo group=$r; [ $r = 0 ] || exit 1; wait $g; echo group-status=$?`
			file := filepath.Join(dir, "kill-"+sb.name+".sh")
			if err := os.WriteFile(file, []byte(inner), 0o644); err != nil {
				t.Fatal(err)
			}
			r := b.runPaddock(t, append(append([]string{"--"}, sb.argv...), "sh", "-c", inner)...)
			if r.code != 0 || !strings.Contains(r.stdout, "kill=0\nstatus=143\ngroup=0\ngroup-status=143") {
				t.Errorf("as root: want kill=0 and the sleep dead of SIGTERM, the same of its group, paddock exit 0\n%s", r)
			}
			q := strings.Join(sb.argv, " ")
			out, lines := b.nobodyRun(t, bins.paddock, dir, q+" sh "+file)
			wantLines(t, out, lines, "kill=0", "status=143", "group=0", "group-status=143")
		})
	}
}

// nestedPidNamesNoForeignProcess: a pid that names nothing in the
// caller's PID namespace is never taken for paddock's process of that
// number. A foreign process of the agent's own user (nobody) runs with
// host pid F; inside a PID namespace of its own, the agent asks to adopt
// F (the way out the old refusal named), signals, probes, traces, writes
// into, owns a descriptor for and renices F: the adoption is refused (nothing is journaled as adopted), the
// signals are ESRCH, as the kernel says there, and the foreign process
// lives. Before the translation, the adoption took the user's process
// and the supervisor, delivering to an adopted process itself, killed it.
func nestedPidNamesNoForeignProcess(t *testing.T, b backend) {
	b.require(t)
	dir := nobodyDir(t)
	for _, sb := range sandboxes {
		t.Run(sb.name, func(t *testing.T) {
			requireSandbox(t, sb.argv)
			f := nobodyStart(t, "sleep", "300")
			fp := itoa(f.Pid())
			inner := filepath.Join(dir, "inner-"+sb.name+".sh")
			script := `P=` + bins.paddock + `
$P adopt ` + fp + ` --reason "nested namespace test"; echo adopt=$?
echo "term=$($AGENTHELPER kill ` + fp + ` 15)"
echo "probe=$($AGENTHELPER kill ` + fp + ` 0)"
echo "tgkill=$($AGENTHELPER tgkill ` + fp + ` ` + fp + ` 9)"
echo "ptrace=$($AGENTHELPER ptrace-attach ` + fp + `)"
echo "vmwrite=$($AGENTHELPER vmwrite ` + fp + `)"
echo "setown-ex=$($AGENTHELPER setown-ex ` + fp + ` 9)"
renice -n 5 -p ` + fp + ` >/dev/null 2>&1; echo renice=$?
kill -9 ` + fp + ` 2>/dev/null; echo kill=$?
`
			if err := os.WriteFile(inner, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			out, lines := b.nobodyRun(t, bins.paddock, dir, strings.Join(sb.argv, " ")+" sh "+inner)
			wantLines(t, out, lines, "adopt=1", "term=err ESRCH", "probe=err ESRCH", "tgkill=err ESRCH", "ptrace=err ESRCH",
				"vmwrite=err ESRCH", "setown-ex=err ESRCH", "renice=1", "kill=1")
			if !strings.Contains(out, "no process has pid "+fp+" in the client's PID namespace") {
				t.Errorf("the adoption's refusal does not say why\n%s", out)
			}
			if !f.Alive(t) {
				t.Errorf("the foreign process %s died\n%s", fp, out)
			}
			if j := readFile(filepath.Join(dir, "j.jsonl")); strings.Contains(j, `"action":"adopted"`) {
				t.Errorf("the journal records an adoption:\n%s", j)
			}
		})
	}
}
