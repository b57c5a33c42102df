package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/llaudit/llaudittest"
)

// The kernel's wall seen: a refusal paddock's Landlock domain makes, which
// the supervisor never decides, is read from the kernel's audit records
// (Landlock ABI 7, a root paddock, auditing on) and reported like the
// supervisor's own: journaled as wall_denied (rule kernel_wall) with what
// refused and the target, counted in the --report summary, and failing
// --strict. The agent runs as nobody inside a root paddock (setpriv), the
// foreign process is a sleep of nobody's started outside paddock. Checked
// by not starting the reader (Session.startWallAudit): the calls fail the
// same, and the journal has no wall_denied record, the report counts no
// refusal and --strict exits 0.

// wallRecords are the journal's wall_denied records.
func (r result) wallRecords(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range r.records(t) {
		if rec["action"] == "wall_denied" {
			out = append(out, rec)
		}
	}
	return out
}

// wallRun runs SCRIPT as nobody inside a root paddock (bin) with --strict,
// --report and FLAGS, and returns the result, the agent's output lines
// and the report's summary.
func wallRun(t *testing.T, b backend, bin, script string, flags ...string) (result, []string, map[string]any) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	args := append([]string{"--strict", "--report", report}, flags...)
	args = append(args, "--", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script)
	r := b.runPaddockOf(t, bin, args...)
	var rep map[string]any
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("paddock wrote no report: %v\n%s", err, r)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report %s: %v", raw, err)
	}
	return r, strings.Split(r.stdout, "\n"), rep
}

// wantCounted checks that the report counts at least n refusals, at least
// n of them under kernel_wall, and that --strict made paddock exit 1.
func wantCounted(t *testing.T, r result, rep map[string]any, n int) {
	t.Helper()
	byRule, _ := rep["by_rule"].(map[string]any)
	if got, _ := rep["refusals"].(float64); int(got) < n {
		t.Errorf("the report counts %v refusals, want at least %d: %v\n%s", rep["refusals"], n, rep, r)
	}
	if got, _ := byRule["kernel_wall"].(float64); int(got) < n {
		t.Errorf("the report counts %v kernel_wall refusals, want at least %d: %v", byRule["kernel_wall"], n, rep)
	}
	if r.code != 1 {
		t.Errorf("paddock --strict exited %d, want 1: the agent succeeded, but the kernel refused it\n%s", r.code, r)
	}
}

// kernelWallRefusalsSeen: the agent's open of a foreign process's
// /proc/PID/mem for reading and writing fails with EACCES (Landlock's
// ptrace check), and the refusal is journaled, counted and fails
// --strict; a caller still running when the record comes (the shell
// itself, here) is told on its stderr, which it then reads back. With the
// supervisor's decisions forced to allow (the paddock_forceallow test
// build), its kill of the foreign process reaches the kernel, whose signal
// scope refuses it: journaled the same way. Both run with the supervisor's
// decisions forced to allow, so that the kernel's wall is what refuses
// (the default wall would refuse the open of the foreign mem first).
func kernelWallRefusalsSeen(t *testing.T, b backend) {
	b.require(t)
	llaudittest.Require(t)
	dir := nobodyDir(t) // and the test binaries opened to nobody
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())

	told := filepath.Join(dir, "told")
	script := `echo "mem=$($AGENTHELPER open-mem ` + fp + `)"
exec 2>>` + told + `
true 3<>/proc/` + fp + `/mem || echo sh-mem=refused
i=0
until grep -q "paddock: the kernel refused" ` + told + ` || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done
grep -q "paddock: the kernel refused pid $$ (sh) ptrace-class access to pid ` + fp + ` (sleep)" ` + told + ` && echo told=yes`
	r, lines, rep := wallRun(t, b, bins.forceAllow, script)
	if !slices.Contains(lines, "mem=err EACCES") || !slices.Contains(lines, "sh-mem=refused") {
		t.Errorf("the agent's opens of the foreign mem: want err EACCES, and the shell's refused\n%s", r)
	}
	if !slices.Contains(lines, "told=yes") {
		t.Errorf("the shell was not told of its refusal on its stderr; it has:\n%s\n%s", readFile(told), r)
	}
	var seen bool
	for _, rec := range r.wallRecords(t) {
		if rec["target"] == float64(f.Pid()) && rec["blockers"] == "ptrace" && rec["rule"] == "kernel_wall" && rec["wall"] == "landlock" && rec["target_comm"] == "sleep" {
			seen = true
		}
	}
	if !seen {
		t.Errorf("the journal has no wall_denied record of the ptrace refusal aimed at %d:\n%s\n%s", f.Pid(), r.journal, r)
	}
	wantCounted(t, r, rep, 1)

	r, lines, rep = wallRun(t, b, bins.forceAllow, `echo "kill=$($AGENTHELPER kill `+fp+` 15)"`)
	if !slices.Contains(lines, "kill=err EPERM") {
		t.Errorf("the agent's kill of the foreign process with decisions forced to allow: want the kernel's err EPERM\n%s", r)
	}
	seen = false
	for _, rec := range r.wallRecords(t) {
		if rec["target"] == float64(f.Pid()) && rec["blockers"] == "scope.signal" {
			seen = true
		}
	}
	if !seen {
		t.Errorf("the journal has no wall_denied record of the signal scope's refusal aimed at %d:\n%s\n%s", f.Pid(), r.journal, r)
	}
	wantCounted(t, r, rep, 1)
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}

// strictWallRefusalsSeen: under --strict-wall the agent's writes to the
// foreign process's oom_score_adj and to its own fail, and each refusal
// is journaled with the file it aimed at, counted and fails --strict;
// the foreign value is unchanged. The supervisor's decisions are forced to
// allow (a test build): the default wall would refuse both writes first.
func strictWallRefusalsSeen(t *testing.T, b backend) {
	b.require(t)
	requireStrictWall(t)
	llaudittest.Require(t)
	nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	adj := "/proc/" + fp + "/oom_score_adj"
	script := `echo 900 > ` + adj + ` 2>/dev/null && echo foreign-oom=written || echo foreign-oom=refused
echo 900 > /proc/self/oom_score_adj 2>/dev/null && echo own-oom=written || echo own-oom=refused`
	r, lines, rep := wallRun(t, b, bins.forceAllow, script, "--strict-wall")
	for _, w := range []string{"foreign-oom=refused", "own-oom=refused"} {
		if !slices.Contains(lines, w) {
			t.Errorf("output lacks the line %q\n%s", w, r)
		}
	}
	var foreign, own bool
	for _, rec := range r.wallRecords(t) {
		obj, _ := rec["object"].(string)
		if rec["blockers"] != "fs.write_file" || rec["wall"] != "landlock, strict" || !strings.HasSuffix(obj, "/oom_score_adj") {
			continue
		}
		if obj == adj {
			foreign = true
		} else {
			own = true
		}
	}
	if !foreign || !own {
		t.Errorf("the journal lacks a wall_denied record of the refused write (foreign %v, own %v):\n%s\n%s", foreign, own, r.journal, r)
	}
	wantCounted(t, r, rep, 2)
	if got := readTrim(t, adj); got != "0" {
		t.Errorf("the foreign process's oom_score_adj is %s, want 0", got)
	}
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}
