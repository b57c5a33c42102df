package test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/internal/proctest"
)

// adoptThenSignal: a process the test started outside paddock is refused
// until the agent adopts it with a reason; then the agent may signal it, the
// journal holds the adoption with its reason, and paddock ps lists it.
func adoptThenSignal(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	F := itoa(f.Pid())
	r := b.sh(t, `kill -TERM `+F+` 2>/dev/null; echo before=$?
$PADDOCK_BIN adopt `+F+` --reason "private daemon test subject in tmux"; echo adopt=$?
$PADDOCK_BIN ps --json > /dev/null; echo ps=$?
kill -TERM `+F+`; echo after=$?`)
	for _, want := range []string{"before=1", "adopted pid " + F + " (sleep): private daemon test subject in tmux", "adopt=0", "after=0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r)
		}
	}
	waitFor(t, "the adopted process to die", func() bool { return !f.Alive(t) })
	var adopted map[string]any
	for _, rec := range r.records(t) {
		if rec["action"] == "adopted" {
			adopted = rec
		}
	}
	if adopted == nil || adopted["pid"] != float64(f.Pid()) || adopted["reason"] != "private daemon test subject in tmux" || adopted["adopted_by"] == nil {
		t.Fatalf("journal adoption record = %v\n%s", adopted, r.journal)
	}
}

// adoptPsJSON pins paddock ps --json: the adopted process with its reason
// and adoption time, the agent with owned_by tree.
func adoptPsJSON(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	F := itoa(f.Pid())
	r := b.sh(t, `$PADDOCK_BIN adopt `+F+` --reason "subject" > /dev/null && $PADDOCK_BIN ps --json`)
	var ps []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, r)
	}
	var sawAdopted, sawAgent bool
	for _, p := range ps {
		for _, k := range []string{"pid", "comm", "start_time", "owned_by"} {
			if _, ok := p[k]; !ok {
				t.Errorf("ps entry lacks %q: %v", k, p)
			}
		}
		if p["pid"] == float64(f.Pid()) {
			sawAdopted = p["owned_by"] == "adopted" && p["reason"] == "subject" && p["adopted_at"] != nil
		}
		if p["agent"] == true {
			sawAgent = p["owned_by"] == "tree"
		}
	}
	if !sawAdopted || !sawAgent {
		t.Fatalf("ps --json lacks the adopted process or the agent:\n%s", r.stdout)
	}
}

// adoptRefusals: blank reasons, invalid pids, kernel threads and
// lifelines are refused with messages that say what would be accepted.
func adoptRefusals(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	kthread := kernelThread(t)
	tests := []struct {
		name, args, want string
		rc               int
	}{
		// A missing or blank reason is a usage error (exit 2), caught
		// before the supervisor is asked; the rest are its refusals.
		{"empty reason", itoa(f.Pid()) + ` --reason ""`, "non-empty reason", 2},
		{"blank reason", itoa(f.Pid()) + ` --reason " "`, "non-empty reason", 2},
		{"no reason", itoa(f.Pid()), "non-empty reason", 2},
		{"pid 1", `1 --reason "cannot adopt init"`, "valid non-system PID", 1},
		{"negative pid", `--reason "invalid negative pid" -- -5`, "valid non-system PID", 1},
		{"nonexistent pid", `999999999 --reason x`, "valid non-system PID", 1},
		{"kernel thread", kthread + ` --reason x`, "valid non-system PID", 1},
		{"supervisor", `$PPID --reason "attempt ppid adopt"`, "critical session lifeline", 1},
		{"agent root", `$$ --reason "attempt self adopt"`, "--lifeline-ok", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := b.sh(t, `$PADDOCK_BIN adopt `+tc.args+`; echo rc=$?`)
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stdout, "rc="+itoa(tc.rc)+"\n") {
				t.Fatalf("want exit %d and %q\n%s", tc.rc, tc.want, r)
			}
			for _, rec := range r.records(t) {
				if rec["action"] == "adopted" {
					t.Fatalf("a refused adoption was journaled: %v", rec)
				}
			}
		})
	}
}

// kernelThread returns the pid of some kernel thread (PF_KTHREAD), or skips.
func kernelThread(t *testing.T) string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		if len(f) > 6 {
			if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&0x00200000 != 0 {
				return e.Name()
			}
		}
	}
	t.Skip("needs a kernel thread visible in /proc")
	return ""
}

// lifelineOverrideAudited: --lifeline-ok adopts the supervisor, and the
// journal gets a self_lifeline_override record with self_lifeline_opt_in.
func lifelineOverrideAudited(t *testing.T, b backend) {
	b.require(t)
	r := b.sh(t, `$PADDOCK_BIN adopt $PPID --reason "explicit supervisor restart" --lifeline-ok; echo rc=$?`)
	if !strings.Contains(r.stdout, "rc=0") {
		t.Fatalf("override refused\n%s", r)
	}
	var override, adopted bool
	for _, rec := range r.records(t) {
		if rec["action"] == "self_lifeline_override" && rec["self_lifeline_opt_in"] == true && rec["reason"] == "explicit supervisor restart" {
			override = true
		}
		if rec["action"] == "adopted" && rec["self_lifeline_opt_in"] == true {
			adopted = true
		}
	}
	if !override || !adopted {
		t.Fatalf("journal lacks the audited override:\n%s", r.journal)
	}
}

// leaseExpiresWhenProcessDies: a lease on a process that exits expires on
// its own (the supervisor's sweep journals lease_expired with nobody asking),
// authorizes nothing and disappears from paddock ps.
func leaseExpiresWhenProcessDies(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	F := itoa(f.Pid())
	// The test kills its foreign process from outside while the agent
	// waits for a line on its input, sent once the sweep has journaled the
	// expiry.
	cmd, journal := b.paddockCmd(t, "--", "bash", "-c", `$PADDOCK_BIN adopt `+F+` --reason "short-lived" >/dev/null
echo adopted
read go
$PADDOCK_BIN ps --json
$PADDOCK_BIN kill `+F+`; echo kill=$?`)
	// Output to files, read while paddock writes (a shared buffer would race).
	outPath, errPath := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "err")
	outF, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF
	input, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer input.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the adoption", func() bool { return strings.Contains(readFile(outPath), "adopted") })
	_ = f.Cmd.Process.Signal(syscall.SIGTERM)
	<-f.Exited()
	expired := `"action":"lease_expired","pid":` + F
	waitFor(t, "the sweep to journal the expired lease", func() bool { return strings.Contains(readFile(journal), expired) })
	if _, err := io.WriteString(input, "go\n"); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	out, errb := readFile(outPath), readFile(errPath)
	if !strings.Contains(out, `"agent": true`) || strings.Contains(out, `"pid": `+F) {
		t.Errorf("paddock ps did not list the session, or still lists the dead adopted process:\n%s", out)
	}
	if !strings.Contains(out, "kill=1") || !strings.Contains(errb, "not owned by this session") {
		t.Errorf("paddock kill of the dead pid was not refused as not owned\nstdout:\n%s\nstderr:\n%s", out, errb)
	}
	if n := strings.Count(readFile(journal), expired); n != 1 {
		t.Errorf("journal holds %d lease_expired records for %s, want 1:\n%s", n, F, readFile(journal))
	}
}

// paddockKillGroupOnlyWhenWhollyOwned: paddock kill signals an adopted
// group leader alone when its group holds a foreign member, and the whole
// group when every member is owned.
func paddockKillGroupOnlyWhenWhollyOwned(t *testing.T, b backend) {
	b.require(t)
	leader := exec.Command("sleep", "300")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	lp := proctest.Start(t, leader)
	member := exec.Command("sleep", "300")
	member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: leader.Process.Pid}
	mp := proctest.Start(t, member)

	L := itoa(leader.Process.Pid)
	r := b.sh(t, `$PADDOCK_BIN adopt `+L+` --reason "test adoption" >/dev/null && $PADDOCK_BIN kill `+L)
	if !strings.Contains(r.stdout, "signalled pid "+L+" (sleep) with SIGTERM") {
		t.Fatalf("want the adopted leader signalled alone\n%s", r)
	}
	waitFor(t, "the adopted leader to die", func() bool { return !lp.Alive(t) })
	if !mp.Alive(t) {
		t.Fatal("the foreign member of the adopted process's group died")
	}

	// Wholly owned: the agent's own job in its own group (set -m gives each job a group).
	r = b.sh(t, `set -m; sh -c 'sleep 300 & sleep 300' & g=$!
until [ "$(pgrep -c -g $g)" = 3 ]; do sleep 0.01; done
$PADDOCK_BIN kill $g; wait $g; echo job=$?`)
	if !strings.Contains(r.stdout, "signalled process group") || !strings.Contains(r.stdout, "3 processes") || !strings.Contains(r.stdout, "job=143") {
		t.Fatalf("want the wholly owned group signalled\n%s", r)
	}
}

// controlSocketFromOutside: the same user can use the session's socket
// from outside the agent; without a socket the clients say no supervisor is
// reachable (exit 3).
func controlSocketFromOutside(t *testing.T, b backend) {
	b.require(t)
	out, err := exec.Command(bins.paddock, "ps").CombinedOutput()
	if code := exitCode(err); code != 3 || !strings.Contains(string(out), "no paddock supervisor is reachable") {
		t.Fatalf("paddock ps outside a session: exit %d\n%s", code, out)
	}
	cmd, _ := b.paddockCmd(t, "--", "bash", "-c", `echo "$PADDOCK_SOCKET"; exec sleep 300`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	buf := make([]byte, 512)
	n, _ := stdout.Read(buf)
	socket := strings.TrimSpace(string(buf[:n]))
	out, err = exec.Command(bins.paddock, "ps", "--socket", socket, "--json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"agent": true`) {
		t.Fatalf("paddock ps --socket %s from outside: %v\n%s", socket, err, out)
	}
	st, err := os.Stat(socket[:strings.LastIndexByte(socket, '/')])
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory mode = %v, %v; want 0700", st.Mode(), err)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// journalFailureStillRefuses: when the journal cannot be written (here
// the file size limit stops it after the first records, and the adoption's
// record is too long to fit), refusals still
// refuse, paddock says so loudly, and an adoption, which must be journaled,
// is refused rather than granted unaudited.
func journalFailureStillRefuses(t *testing.T, b backend) {
	b.require(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skipf("needs prlimit: %v", err)
	}
	f := startForeign(t, "sleep", "300")
	F := itoa(f.Pid())
	journal := t.TempDir() + "/j.jsonl"
	cmd := exec.Command("prlimit", "--fsize=1500", bins.paddock, "run", "--backend", string(b), "--log-format", "json", "--journal", journal, "--",
		"bash", "-c", `for i in 1 2 3 4 5 6 7 8; do kill -TERM `+F+` 2>/dev/null; echo rc=$?; done
$PADDOCK_BIN adopt `+F+` --reason "`+strings.Repeat("unaudited ", 60)+`"; echo adopt=$?`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Count(string(out), "rc=1") != 8 || !strings.Contains(string(out), "adopt=1") {
		t.Fatalf("want 8 refused kills and a refused adoption:\n%s", out)
	}
	if !f.Alive(t) {
		t.Fatal("the foreign process died while the journal was failing")
	}
	for _, want := range []string{"could not write the audit journal", "the audit journal could not be written"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// adoptionModes: the profile's adoption key. "outside": the agent's own
// paddock adopt is refused with a message saying who may, and the user's,
// from outside the session, goes through; "off": neither adopts.
func adoptionModes(t *testing.T, b backend) {
	b.require(t)
	for _, mode := range []string{"outside", "off"} {
		t.Run(mode, func(t *testing.T) {
			f := startForeign(t, "sleep", "300")
			F := itoa(f.Pid())
			dir := t.TempDir()
			prof, sock, out := filepath.Join(dir, "profile.toml"), filepath.Join(dir, "socket"), filepath.Join(dir, "out")
			if err := os.WriteFile(prof, []byte("adoption = \""+mode+"\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, _ := b.paddockCmd(t, "--profile", prof, "--", "bash", "-c",
				`$PADDOCK_BIN adopt `+F+` --reason "from inside" > `+out+` 2>&1; echo "inside=$?" >> `+out+`
echo $PADDOCK_SOCKET > `+sock+`; exec sleep 60`)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
			waitFor(t, "the agent's adoption attempt", func() bool { return strings.Contains(readFile(sock), "/") })
			inside := readFile(out)
			if !strings.Contains(inside, "inside=1") || !strings.Contains(inside, "adoption refused") || !strings.Contains(inside, `adoption = "`+mode+`"`) {
				t.Fatalf("the agent's own adopt was not refused as the profile says:\n%s", inside)
			}
			outside, err := exec.Command(bins.paddock, "adopt", F, "--reason", "from the user's terminal", "--socket", strings.TrimSpace(readFile(sock))).CombinedOutput()
			switch {
			case mode == "outside" && err != nil:
				t.Fatalf("the user's adopt from outside: %v\n%s", err, outside)
			case mode == "off" && (err == nil || !strings.Contains(string(outside), "adoption is off")):
				t.Fatalf("the user's adopt with adoption off: %v\n%s", err, outside)
			}
		})
	}
}

// paddockOnPathInSession: inside a session `paddock` is callable by name,
// the binary that supervises it, so the commands refusal messages name
// work as written.
func paddockOnPathInSession(t *testing.T, b backend) {
	b.require(t)
	r := b.sh(t, `p=$(command -v paddock) && echo "found=$p"
test "$(readlink -f "$p")" = "$(readlink -f "$PADDOCK_BIN")" && echo same-binary
paddock version | head -c 8; echo
paddock ps --json > /dev/null && echo ps=ok`)
	for _, want := range []string{"found=", "same-binary", "paddock ", "ps=ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q\n%s", want, r)
		}
	}
}
