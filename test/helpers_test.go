package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/proctest"
	"github.com/paddock-dev/paddock/journal"
)

// bins holds the binaries built once for the whole package.
var bins struct {
	dir, paddock, helper string
	// forceAllow is paddock built with the paddock_forceallow tag.
	forceAllow string
}

func TestMain(m *testing.M) {
	unignore()
	os.Exit(buildAndRun(m))
}

// unignore makes SIGHUP and SIGINT handled, not ignored, when the test
// binary was started with them ignored (under nohup, or as a background job
// of a script without job control). An ignored signal stays ignored across
// exec, so every paddock a test starts, and its agent, would inherit it, as
// paddock passes on what it inherits (tini's rule), and the scenarios that
// send them expect their default action; a handled one is reset to the
// default by exec. Go keeps only these two ignored when it starts (it
// handles every other signal itself). The test binary goes on dropping
// them, as it did while they were ignored.
func unignore() {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "paddock-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.dir = dir
	bins.paddock = filepath.Join(dir, "paddock")
	bins.helper = filepath.Join(dir, "agenthelper")
	bins.forceAllow = filepath.Join(dir, "paddock-forceallow")
	for out, pkg := range map[string]string{bins.paddock: "../cmd/paddock", bins.helper: "./agenthelper", bins.forceAllow: "../cmd/paddock"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if out == bins.forceAllow {
			// The supervisor allows everything: the kernel's wall alone.
			cmd = exec.Command("go", "build", "-tags", "paddock_forceallow", "-o", out, pkg)
		}
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if os.Getenv("PADDOCK_RACE") == "1" && out == bins.paddock {
			// paddock built with the race detector (needs cgo): a race
			// makes it exit 66, which the scenarios' status checks catch.
			cmd = exec.Command("go", "build", "-race", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}
	return runIsolated(m)
}

// runIsolated runs the tests in a home of their own: HOME, XDG_STATE_HOME
// and XDG_CONFIG_HOME point into a temporary directory and PADDOCK_JOURNAL
// and PADDOCK_PROFILE are unset, so that a paddock run naming no journal
// or profile finds them there, never the user's own. go keeps the user's
// caches and settings: GOCACHE, GOMODCACHE, GOPATH and GOENV stay what
// they were.
//
// It fails the run if paddock's files turn up in that HOME itself
// (.local/state/paddock, .config/paddock): a test ran paddock past the
// suite's XDG directories, which under the user's HOME would have written
// the user's journal. Only what the tests ran can write there, so the check
// does not blame the tests for what the user's own paddock, running
// meanwhile, writes to the user's journal.
func runIsolated(m *testing.M) int {
	dir, err := os.MkdirTemp("", "paddock-e2e-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	pinned := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	out, err := exec.Command("go", append([]string{"env"}, pinned...)...).Output()
	values := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if err != nil || len(values) != len(pinned) {
		fmt.Fprintf(os.Stderr, "go env %s: %v\n%s", strings.Join(pinned, " "), err, out)
		return 1
	}
	for i, k := range pinned {
		os.Setenv(k, values[i])
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	j, err := journal.DefaultPath("", nil, home)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	outside := []string{filepath.Dir(j), filepath.Join(home, ".config", "paddock")}
	os.Unsetenv("PADDOCK_JOURNAL")
	os.Unsetenv("PADDOCK_PROFILE")
	os.Setenv("HOME", home)
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	code := m.Run()
	for _, p := range outside {
		if _, err := os.Lstat(p); err == nil {
			fmt.Fprintf(os.Stderr, "FAIL: a test ran paddock past the suite's XDG directories: it made %s, which under the user's HOME is where their journal or profile lives\n", p)
			code = 1
		}
	}
	return code
}

// backend is the --backend every paddock run of a conformance scenario gets.
type backend string

// backends are the backends the conformance suite runs against.
var backends = []backend{"seccomp", "ptrace"}

// require skips when the kernel cannot give paddock this backend, and
// fails where the kernel must have what it needs (featuretest.Require).
func (b backend) require(t *testing.T) {
	t.Helper()
	if b == "ptrace" {
		featuretest.Require(t, features.IDRetTrace, features.IDPtrace)
		return
	}
	featuretest.Require(t, features.IDUserNotif)
}

// proc is a process the test started, with a way to tell whether it is
// still alive (proctest.Proc).
type proc = proctest.Proc

// startForeign starts a process outside paddock; the test kills it at the end.
func startForeign(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return proctest.Start(t, exec.Command(name, args...))
}

// result is what one paddock run produced.
type result struct {
	stdout, stderr string
	code           int
	journal        string
}

// paddockCmd prepares `paddock run --backend B --journal J ARGS...`.
func (b backend) paddockCmd(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return b.paddockCmdOf(t, bins.paddock, args...)
}

// paddockCmdOf is paddockCmd of the paddock binary bin (bins.forceAllow).
func (b backend) paddockCmdOf(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	full := append([]string{"run", "--backend", string(b), "--journal", journal, "--log-format", "json"}, args...)
	cmd := exec.Command(bin, full...)
	// TMPDIR holds the control socket's directory, which a paddock killed
	// with SIGKILL leaves behind. Not t.TempDir(): a test's name makes that
	// too long a path for a unix socket.
	tmp, err := os.MkdirTemp("", "pd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd.Env = append(os.Environ(), "AGENTHELPER="+bins.helper, "PADDOCK="+bins.paddock, "TMPDIR="+tmp)
	// Something the agent left running may hold the output pipes open.
	cmd.WaitDelay = 2 * time.Second
	return cmd, journal
}

// runPaddock runs paddock to completion (at most a minute).
func (b backend) runPaddock(t *testing.T, args ...string) result {
	t.Helper()
	return b.runPaddockOf(t, bins.paddock, args...)
}

// runPaddockOf is runPaddock of the paddock binary bin.
func (b backend) runPaddockOf(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd, journal := b.paddockCmdOf(t, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("paddock %q did not finish in a minute\nstdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrWaitDelay):
		// paddock exited; something it left running (--keep-orphans) holds the pipes.
		r.code = cmd.ProcessState.ExitCode()
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("paddock %q: %v", args, err)
	}
	if b, err := os.ReadFile(journal); err == nil {
		r.journal = string(b)
	}
	return r
}

// sh runs a shell script under paddock.
func (b backend) sh(t *testing.T, script string) result {
	t.Helper()
	return b.runPaddock(t, "--", "bash", "-c", script)
}

// records parses the journal's JSON lines.
func (r result) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.journal))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// denial finds the signal_denied record aimed at target.
func (r result) denial(t *testing.T, target int) map[string]any {
	t.Helper()
	for _, rec := range r.records(t) {
		if rec["action"] == "signal_denied" && rec["target"] == float64(target) {
			return rec
		}
	}
	t.Fatalf("journal has no signal_denied record for target %d:\n%s", target, r.journal)
	return nil
}

// callerStderr is the agent's own standard error: r.stderr without
// paddock's log records. The two share one pipe, and paddock's log line for
// a refusal carries the same message the caller is told, so a check of
// what the caller was told reads only this (paddockCmd's runs log JSON).
func (r result) callerStderr() string {
	var out []string
	for _, line := range strings.Split(r.stderr, "\n") {
		var rec struct {
			Component string `json:"component"`
		}
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.Component == "paddock" {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func itoa(n int) string { return strconv.Itoa(n) }

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	st := procState(pid)
	return st != 0 && st != 'Z'
}

// procState is the state letter of pid's /proc stat line (0: no such process).
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || len(b) <= i+2 {
		return 0
	}
	return b[i+2]
}

// readFile returns a file's contents ("" when it cannot be read).
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readAll reads a pty master until every slave is closed (EIO), for at
// most a minute.
func readAll(t *testing.T, master *os.File) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		_, _ = b.ReadFrom(master)
		done <- b.String()
	}()
	select {
	case out := <-done:
		return out
	case <-time.After(time.Minute):
		t.Fatal("the terminal was not released in a minute")
		return ""
	}
}

// nobodyStart starts NAME ARGS... as nobody, outside paddock (a foreign
// process of the same unprivileged user as a nobodyRun agent).
func nobodyStart(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startForeign(t, "setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", name}, args...)...)
}

// nobodyRun runs `BIN run --backend B [FLAGS] -- bash -c SCRIPT` as nobody,
// with paddock's defaults and the journal in dir (from nobodyDir), and
// returns its combined output and the output's lines; paddock failing
// fails the test.
func (b backend) nobodyRun(t *testing.T, bin, dir, script string, flags ...string) (string, []string) {
	t.Helper()
	args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", bin, "run", "--backend", string(b),
		"--journal", filepath.Join(dir, "j.jsonl")}
	args = append(append(args, flags...), "--", "bash", "-c", script)
	cmd := exec.Command("setpriv", args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR=",
		"AGENTHELPER="+bins.helper)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Whole lines: paddock's start line quotes the script.
	return string(out), strings.Split(string(out), "\n")
}

// wantLines reports each of want that is not a whole line of out (split
// into lines): a check that paddock's start line, which quotes the
// script, cannot pass.
func wantLines(t *testing.T, out string, lines []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("output lacks the line %q\n%s", w, out)
		}
	}
}

// nobodyDir skips unless the test runs as root with setpriv (to run paddock
// and the processes it is tested against as nobody), and returns a
// directory nobody may write, removed when the test ends; the test
// binaries' directory is opened to nobody too.
func nobodyDir(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user with setpriv")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("needs setpriv: %v", err)
	}
	dir, err := os.MkdirTemp("", "paddock-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{dir, bins.dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
