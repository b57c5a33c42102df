package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/sockettest"
)

// unprivileged is how a test runs paddock, its agent and the foreign
// process as one unprivileged user: as nobody when the test runs as root
// (setpriv), else as the test's own user, which is unprivileged then.
type unprivileged struct {
	prefix []string // setpriv and its flags, or nothing
	dir    string   // a directory that user may write: HOME, the journal
	uid    int
}

// asUnprivileged sets up an unprivileged user for the test.
func asUnprivileged(t *testing.T) unprivileged {
	t.Helper()
	if os.Geteuid() != 0 {
		return unprivileged{dir: t.TempDir(), uid: os.Geteuid()}
	}
	return unprivileged{prefix: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, dir: nobodyDir(t), uid: 65534}
}

// sessionBase is a directory for session directories (paddock's TMPDIR):
// short enough for a socket path, root's, sticky and open to everyone, as
// /tmp, so that root's and nobody's paddocks both make theirs there.
func sessionBase(t *testing.T) string {
	t.Helper()
	base := sockettest.ShortDir(t)
	if err := os.Chmod(base, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	return base
}

// paddockIn prepares BIN ARGS (paddock's) as u (nil: as the test's user),
// with its session directories under base, its defaults in dir.
func paddockIn(u *unprivileged, base, dir string, args ...string) *exec.Cmd {
	full := append([]string{bins.paddock}, args...)
	if u != nil {
		full = append(slices.Clone(u.prefix), full...)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+base, "XDG_RUNTIME_DIR=", "HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	return cmd
}

// sessionDirs lists the session directories (paddock-*) under base.
func sessionDirs(t *testing.T, base string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(base, "paddock-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mark gives cmd, a paddock run, an environment variable of its own, which
// its agent inherits, and returns it ("KEY=VALUE"): procsMarked finds every
// process of that session by it, the agent's child before its exec (whose
// environment is still paddock's) included.
func mark(cmd *exec.Cmd) string {
	kv := "PADDOCK_TEST_RUN=" + strconv.FormatUint(rand.Uint64(), 36)
	cmd.Env = append(cmd.Env, kv)
	return kv
}

// procsMarked lists the live processes (not zombies) whose environment holds kv.
func procsMarked(kv string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !pidAlive(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(env, []byte{0}) {
			if string(v) == kv && pidAlive(pid) {
				out = append(out, e.Name()+" "+strings.ReplaceAll(readFile("/proc/"+e.Name()+"/cmdline"), "\x00", " "))
			}
		}
	}
	return out
}

// killMarked kills what procsMarked finds (processes of the test's own
// paddock runs), when a check has failed.
func killMarked(kv string) {
	for _, p := range procsMarked(kv) {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// noneLeft waits for every process of the session marked kv to end, and
// fails the test (killing them) if one is left after 10 s.
func noneLeft(t *testing.T, kv, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := procsMarked(kv)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			killMarked(kv)
			t.Fatalf("%s: processes of the session outlived their paddock by 10 s:\n%s", what, strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// outputFile points cmd's stdout and stderr at a file of the test's and
// returns its path: a file, not a pipe, so that Wait does not wait for
// whatever else holds it.
func outputFile(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd.Stdout, cmd.Stderr = f, f
	return f.Name()
}

// killAtFork returns as paddock, started, forks its agent: a moment after
// (a random spin of up to 400 us, to spread the kills over the fork) its
// session directory holds the paddock link, which the launch makes for the
// agent's PATH shortly before the fork. It looks without pause.
func killAtFork(t *testing.T, base string, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, d := range sessionDirs(t, base) {
			if _, err := os.Lstat(filepath.Join(d, "paddock")); err != nil {
				continue
			}
			if owner, _ := os.ReadFile(filepath.Join(d, "owner")); strings.Contains(string(owner), `"pid":`+itoa(cmd.Process.Pid)+`,`) {
				for until := time.Now().Add(rand.N(400 * time.Microsecond)); time.Now().Before(until); {
				}
				return
			}
		}
	}
	t.Fatal("paddock made no session directory with its paddock link in 10 s")
}

// startRecordOf reports whether the journal at path holds the
// session_started record of the paddock with that pid, and its session.
func startRecordOf(path string, pid int) (string, bool) {
	for _, line := range strings.Split(readFile(path), "\n") {
		var rec struct {
			Action  string `json:"action"`
			Pid     int    `json:"pid"`
			Session string `json:"session"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Action == "session_started" && rec.Pid == pid {
			return rec.Session, true
		}
	}
	return "", false
}

// TestKilledSessionsLeaveNothing: 21 paddock runs killed with SIGKILL at
// random points (an OOM kill, a CI runner cancelling its job), under each
// backend in turn, their agent and a foreign process running as the same
// unprivileged user. A third are killed at a random moment from their exec
// (before or after they journal their start, make their directory, start
// their agent), a third as their agent is forked (killAtFork), and a third
// at a random moment once their start record is journaled, while their
// agent has its kills refused and journaled. Each time the foreign process
// survives and no process of the session's outlives its paddock for long:
// the agent root is killed with it; what it started is killed too under
// ptrace, and under seccomp ends its sleep of a few milliseconds, its
// trapped calls failing. The next `paddock run` removes every directory
// they left; the shared journal verifies; and `paddock journal` lists every
// session that journaled its start as ended abnormally, and none other.
func TestKilledSessionsLeaveNothing(t *testing.T) {
	for _, b := range backends {
		b.require(t)
	}
	u := asUnprivileged(t)
	base := sessionBase(t)
	journal := filepath.Join(u.dir, "j.jsonl")
	var f *proc
	if len(u.prefix) > 0 {
		f = nobodyStart(t, "sleep", "300")
	} else {
		f = startForeign(t, "sleep", "300")
	}
	agent := `while :; do kill -TERM ` + itoa(f.Pid()) + ` 2>/dev/null; sleep 0.0$((RANDOM % 5 + 1)); done`
	const runs = 21
	killed := map[int]bool{} // paddock's pid: whether it was killed after its start record was journaled
	for i := range runs {
		b := backends[i%len(backends)]
		cmd := paddockIn(&u, base, u.dir, "run", "--backend", string(b), "--journal", journal, "--log-level", "error", "--", "bash", "-c", agent)
		kv := mark(cmd)
		out := outputFile(t, cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		how := (i / len(backends)) % 3 // each backend gets each kind
		switch how {
		case 0:
			time.Sleep(rand.N(80 * time.Millisecond))
		case 1:
			killAtFork(t, base, cmd)
		case 2:
			waitFor(t, "paddock's session_started record", func() bool {
				_, ok := startRecordOf(journal, pid)
				return ok
			})
			time.Sleep(rand.N(300 * time.Millisecond))
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: paddock (%s) was not killed by the SIGKILL: %v\n%s", i, b, err, readFile(out))
		}
		killed[pid] = how != 0 // those two kinds come after the start record
		if !f.Alive(t) {
			t.Fatalf("run %d (%s): the foreign process died", i, b)
		}
		noneLeft(t, kv, fmt.Sprintf("run %d (%s, killed %s)", i, b, []string{"at random", "at its agent's fork", "after its start record"}[how]))
	}
	left := sessionDirs(t, base)
	if len(left) == 0 {
		t.Fatal("no killed paddock left a session directory: the sweep below would prove nothing")
	}
	// Each run's sweep removed what the runs killed before it left; the
	// last ones' are left for the next run.
	t.Logf("%d session directories left by the %d killed runs", len(left), runs)

	out, err := paddockIn(&u, base, u.dir, "run", "--journal", journal, "--", "true").CombinedOutput()
	if err != nil {
		t.Fatalf("the next paddock run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "removed the session directories of paddock runs that are gone") {
		t.Errorf("the next paddock run did not say it removed the directories:\n%s", out)
	}
	if now, _ := os.ReadDir(base); len(now) != 0 {
		t.Errorf("left in %s after the next paddock run: %v", base, now)
	}
	if !f.Alive(t) {
		t.Fatal("the foreign process died")
	}

	if out, err := paddockIn(&u, base, u.dir, "journal", "--verify", "--journal", journal).CombinedOutput(); err != nil || !strings.Contains(string(out), "chain intact") {
		t.Errorf("paddock journal --verify: %v\n%s", err, out)
	}
	table, err := paddockIn(&u, base, u.dir, "journal", "--journal", journal).Output()
	if err != nil {
		t.Fatalf("paddock journal: %v\n%s", err, table)
	}
	rows := regexp.MustCompile(`(?m)^\S+  ended abnormally +(\d+)  session ([0-9a-f]+): its paddock`).FindAllStringSubmatch(string(table), -1)
	abnormal := map[string]string{}
	for _, r := range rows {
		abnormal[r[2]] = r[1]
	}
	started := 0
	for pid, afterStart := range killed {
		id, ok := startRecordOf(journal, pid)
		if !ok {
			if afterStart {
				t.Errorf("paddock %d was killed after its start record, which is not in the journal", pid)
			}
			continue
		}
		started++
		if abnormal[id] != itoa(pid) {
			t.Errorf("session %s (paddock %d, killed) is not listed as ended abnormally", id, pid)
		}
	}
	if len(rows) != started || started < runs/2 {
		t.Errorf("%d sessions listed as ended abnormally; %d killed sessions journaled their start (want all, at least %d)\n%s", len(rows), started, runs/2, table)
	}
}

// TestKilledAtTheAgentsFork: paddock killed with SIGKILL as it forks its
// agent (seccomp backend: from a thread that carries the filter), 60
// times. Nothing of the session may be left: the agent's process, between
// its fork and its exec, must not be left waiting on the listener. (It
// was, one time in a dozen or so, before the listener was kept out of the
// launching thread's descriptor table: supervisor/fdtable.go.)
func TestKilledAtTheAgentsFork(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	u := asUnprivileged(t)
	base := sessionBase(t)
	journal := filepath.Join(u.dir, "j.jsonl")
	for i := range 60 {
		cmd := paddockIn(&u, base, u.dir, "run", "--backend", string(b), "--journal", journal, "--log-level", "error", "--", "sleep", "60")
		kv := mark(cmd)
		outputFile(t, cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAtFork(t, base, cmd)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		noneLeft(t, kv, fmt.Sprintf("run %d", i))
	}
}

// TestSweepLeavesOthersAlone: the sweep of a root paddock run removes the
// directories root's killed sessions left, and leaves untouched the
// directory of a live session, a directory of another user's killed
// session, and a planted symlink named like a session directory that
// leads to a killed session's directory elsewhere; then nobody's
// `paddock doctor` removes nobody's own, says so, and leaves root's live
// session alone.
func TestSweepLeavesOthersAlone(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	u := asUnprivileged(t)
	if len(u.prefix) == 0 {
		t.Skip("needs root: a session of root's beside one of another user's")
	}
	base := sessionBase(t)
	// Root's defaults and journal go where only root may write (a root
	// paddock refuses a journal directory others may change).
	rootDir := t.TempDir()
	in := func(who *unprivileged) (dir, journal string) {
		if who == nil {
			return rootDir, filepath.Join(rootDir, "j.jsonl")
		}
		return u.dir, filepath.Join(u.dir, "j.jsonl")
	}
	// killedIn kills a paddock of u's (nil: root's) once its directory and
	// socket are there, and returns its directory.
	killedIn := func(who *unprivileged) string {
		dir, journal := in(who)
		cmd, sd, wait, kv := startedIn(t, who, base, dir, journal)
		_ = cmd.Process.Kill()
		_ = wait()
		noneLeft(t, kv, "a paddock killed as its agent started")
		return sd
	}
	nobodys := killedIn(&u)
	roots := killedIn(nil)
	elsewhere := filepath.Join(t.TempDir(), "paddock-77")
	if err := os.Rename(killedIn(nil), elsewhere); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(base, "paddock-78")
	if err := os.Symlink(elsewhere, planted); err != nil {
		t.Fatal(err)
	}
	// Left long enough ago that, were the sweep to ignore whose they are,
	// its rule for directories whose owner it cannot judge would take them.
	long := time.Now().Add(-time.Hour)
	for _, d := range []string{nobodys, elsewhere} {
		if err := os.Chtimes(d, long, long); err != nil {
			t.Fatal(err)
		}
	}
	rdir, rjournal := in(nil)
	live, liveDir, liveWait, _ := startedIn(t, nil, base, rdir, rjournal)
	before := tree(t, nobodys, planted, elsewhere, liveDir)

	out, err := paddockIn(nil, base, rdir, "run", "--journal", rjournal, "--", "true").CombinedOutput()
	if err != nil {
		t.Fatalf("root's paddock run: %v\n%s", err, out)
	}
	if fileExists(roots) {
		t.Errorf("root's killed session's directory %s is still there\n%s", roots, out)
	}
	if after := tree(t, nobodys, planted, elsewhere, liveDir); after != before {
		t.Errorf("the sweep touched what is not root's stale own:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	ps := func() {
		t.Helper()
		if out, err := paddockIn(nil, base, rdir, "ps", "--socket", filepath.Join(liveDir, "control.sock")).CombinedOutput(); err != nil || !strings.Contains(string(out), "sleep") {
			t.Errorf("the live session does not answer on its socket: %v\n%s", err, out)
		}
	}
	ps()

	out, err = paddockIn(&u, base, u.dir, "doctor").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^ok +stale session directories +found 1, removed 1 under `+regexp.QuoteMeta(base)+` -- `).Match(out) {
		t.Errorf("nobody's paddock doctor: %v\n%s", err, out)
	}
	if fileExists(nobodys) {
		t.Errorf("nobody's killed session's directory %s is still there after nobody's doctor", nobodys)
	}
	if !fileExists(filepath.Join(liveDir, "control.sock")) || !fileExists(filepath.Join(elsewhere, "control.sock")) {
		t.Error("nobody's doctor touched root's live session or the planted link's target")
	}
	ps()
	_ = live.Process.Signal(syscall.SIGTERM)
	_ = liveWait()
	if fileExists(liveDir) {
		t.Errorf("the live session's directory %s outlived its session", liveDir)
	}
}

// startedIn starts `paddock run -- sleep 60` as who (nil: the test's
// user) with its session directory under base, waits for its directory
// with its socket and paddock link, and returns it running, its directory,
// what waits for it, and its mark (see mark). It is killed, with all of
// its session, when the test ends.
func startedIn(t *testing.T, who *unprivileged, base, dir, journal string) (*exec.Cmd, string, func() error, string) {
	t.Helper()
	known := sessionDirs(t, base)
	cmd := paddockIn(who, base, dir, "run", "--journal", journal, "--log-level", "error", "--", "sleep", "60")
	kv := mark(cmd)
	out := outputFile(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := sync.OnceValue(func() error { return <-exited })
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = wait(); killMarked(kv) })
	var made string
	waitFor(t, "the session's directory, socket and link", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("paddock exited (%v) before its session was made:\n%s", err, readFile(out))
		default:
		}
		for _, d := range sessionDirs(t, base) {
			if !slices.Contains(known, d) && fileExists(filepath.Join(d, "control.sock")) && fileExists(filepath.Join(d, "paddock")) {
				made = d
				return true
			}
		}
		return false
	})
	return cmd, made, wait, kv
}

// tree lists every path under the roots with its type, mode and owner, never
// following a symlink.
func tree(t *testing.T, roots ...string) string {
	t.Helper()
	var b strings.Builder
	for _, r := range roots {
		err := filepath.Walk(r, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			b.WriteString(p + " " + fi.Mode().String() + " " + itoa(int(st.Uid)) + " " + strconv.FormatUint(st.Ino, 10) + "\n")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
