// Package harness drives the real agent harnesses (Claude Code, Codex CLI,
// Gemini CLI, opencode), installed at the versions pinned in pins.txt, under
// `paddock run`, each against a scripted model server written here that
// speaks the harness's own API with SSE streaming.
//
// A harness test uses the framework in this file like this:
//
//	u := newUser(t)                 // nobody's home and work dirs; skips unless root
//	dir := installed(t, "@google/gemini-cli") // the pinned package, installed when missing
//	f := u.startForeign(t)          // a sleep of the same user, outside paddock
//	srv := newModelServer(t, gemini{}, shell("kill -TERM "+itoa(f.Pid())), text("all done"))
//	o := u.run(t, session{backend: "seccomp", argv: []string{"node", dir + "/bundle/gemini.js", ...},
//		env: []string{"GOOGLE_GEMINI_BASE_URL=" + srv.url, ...}})
//	res := srv.conversed(t, o)      // the tool results the harness sent back, one per tool call
//	if !strings.Contains(res[0], refusal("SIGTERM", f.Pid())) { t.Errorf(...) }
//	requireAlive(t, f)
//
// A dialect (anthropic{}, gemini{}, ...) is the model API a server speaks:
// how it tells the conversation's requests from side requests, reads the
// tool results back, and writes a turn as the API streams it (sse_test.go).
// u.startOnPty runs a session on a pty instead, for a TUI; u.ownPattern
// gives a pkill pattern that matches this session's processes alone.
//
// The server answers each request with the turn of its script that the
// request's own tool results point at (a request carrying N tool results
// gets turn N), so a harness's retries and side requests (titles, quota
// checks) never shift the script; a request that offers no shell tool is a
// side request and gets a plain text. Every request is recorded.
//
// Everything runs as nobody (uid 65534), agent and foreign process alike,
// as the project's other end-to-end tests do; the harnesses' cache must be
// readable by nobody (install.sh makes it so). Waits are on events (a
// process's exit, a recorded request, terminal output), each with a safety
// limit that fails the test instead of hanging it.
package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/proctest"
	"github.com/paddock-dev/paddock/internal/ptytest"
)

// nobody is the unprivileged user the harnesses and the foreign process run as.
const nobody = 65534

// suite holds what TestMain sets up once for the package.
var suite struct {
	// paddock is the binary under test, built into a directory nobody can read.
	paddock string
	// cache is where install.sh puts the harnesses (cacheDir).
	cache string
	// installMu serializes the tests' runs of install.sh.
	installMu sync.Mutex
}

func TestMain(m *testing.M) {
	os.Exit(setUp(m))
}

func setUp(m *testing.M) int {
	suite.cache = cacheDir()
	dir, err := os.MkdirTemp("", "paddock-harness-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	suite.paddock = filepath.Join(dir, "paddock")
	cmd := exec.Command("go", "build", "-o", suite.paddock, "../../cmd/paddock")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build paddock: %v\n%s", err, b)
		return 1
	}
	return m.Run()
}

// cacheDir is install.sh's cache: $PADDOCK_HARNESS_CACHE, else
// /var/cache/paddock/harness for root (nobody cannot enter /root), else
// ${XDG_CACHE_HOME:-$HOME/.cache}/paddock/harness.
func cacheDir() string {
	if d := os.Getenv("PADDOCK_HARNESS_CACHE"); d != "" {
		return d
	}
	if os.Getuid() == 0 {
		return "/var/cache/paddock/harness"
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "paddock", "harness")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "paddock", "harness")
}

// pinned is the exact version pins.txt gives the npm package pkg.
func pinned(t *testing.T, pkg string) string {
	t.Helper()
	b, err := os.ReadFile("pins.txt")
	if err != nil {
		t.Fatalf("read the pins: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), pkg+"@"); ok {
			return v
		}
	}
	t.Fatalf("pins.txt pins no version of %s", pkg)
	return ""
}

// installed returns the directory of the npm package pkg (as in pins.txt:
// "@anthropic-ai/claude-code") installed at its pinned version, running
// install.sh when it is not in the cache yet. Without npm, or with the
// registry unreachable, the test skips with the reason.
func installed(t *testing.T, pkg string) string {
	t.Helper()
	spec := pkg + "@" + pinned(t, pkg)
	root := filepath.Join(suite.cache, spec)
	dir := filepath.Join(root, "node_modules", pkg)
	suite.installMu.Lock()
	defer suite.installMu.Unlock()
	nobodyEnters(t, filepath.Dir(suite.cache))
	if _, err := os.Stat(filepath.Join(root, ".installed")); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skipf("needs npm to install %s: %v", spec, err)
		}
		// The registry's answer tells an unreachable registry (skip) from a
		// failed install (a failure).
		if out, err := exec.Command("npm", "view", "--fetch-retries=1", spec, "version").CombinedOutput(); err != nil {
			t.Skipf("needs the npm registry to install %s: npm view: %v\n%s", spec, err, out)
		}
		cmd := exec.Command("bash", "install.sh", spec)
		cmd.Env = append(os.Environ(), "PADDOCK_HARNESS_CACHE="+suite.cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("install.sh %s: %v\n%s", spec, err, out)
		}
	}
	nobodyEnters(t, root)
	return dir
}

// nobodyEnters fails the test unless every user may read and enter dir
// and every directory above it that exists: nobody runs the harnesses
// from the cache.
func nobodyEnters(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil || fi.Mode().Perm()&0o005 != 0o005 {
			t.Fatalf("nobody cannot read the harness cache %s (%s: %v, mode %v): set PADDOCK_HARNESS_CACHE to a directory every user can read and enter", suite.cache, d, err, modeOf(fi))
		}
	}
}

// modeOf is fi's permission bits ("none" without fi).
func modeOf(fi os.FileInfo) string {
	if fi == nil {
		return "none"
	}
	return fi.Mode().Perm().String()
}

// requireBackend skips when the kernel cannot give paddock the backend.
func requireBackend(t *testing.T, backend string) {
	t.Helper()
	if backend == "ptrace" {
		featuretest.Require(t, features.IDRetTrace, features.IDPtrace)
		return
	}
	featuretest.Require(t, features.IDUserNotif)
}

// backends are the --backend values the scenarios run on.
var backends = []string{"seccomp", "ptrace"}

// user is the unprivileged user's side of one test: a home and a work
// directory of nobody's own, removed when the test ends.
type user struct {
	dir  string // holds the rest, and the journal
	home string // HOME, with XDG_CONFIG_HOME, XDG_CACHE_HOME and XDG_STATE_HOME under it
	work string // the harness's working directory
	tmp  string // TMPDIR: short, for paddock's control socket
}

// newUser skips unless the test runs as root with setpriv (to run the
// harness and the foreign process as nobody), and makes nobody's directories.
func newUser(t *testing.T) *user {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run the harnesses as an unprivileged user with setpriv")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("needs setpriv: %v", err)
	}
	dir, err := os.MkdirTemp("", "paddock-harness-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u := &user{dir: dir, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "t")}
	for _, d := range []string{dir, u.home, u.work, u.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// tag is a word unique to this test's user (its directory's name). A
// harness given it in its prompt carries it on its command line, and so
// do its launchers and paddock, which quote that command line.
func (u *user) tag() string { return filepath.Base(u.dir) }

// removeMadeDir removes dir when the test ends, if it was not there before
// and is empty then: a directory a harness makes outside the test's own
// (its daemons' sockets under /tmp, whatever TMPDIR says), so that the
// suite leaves nothing outside its temporary directories.
func removeMadeDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Lstat(dir); err == nil {
		return
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
}

// ownPattern is a `pkill -f` pattern for name that matches only command
// lines that carry the tag: the harness, its launchers and paddock of this
// test's session, never another test's or another user's process of that
// name (the machine is shared; paddock would refuse those, but a broad
// pkill is no test's to aim at them), and not the shell running the
// pkill, whose command line holds the pattern with a bracket the pattern
// does not match.
func (u *user) ownPattern(name string) string {
	tag := u.tag()
	return name + ".*" + tag[:len(tag)-1] + "[" + tag[len(tag)-1:] + "]"
}

// writeFile writes a file of nobody's under the user's home (a harness's
// settings), making its directories.
func (u *user) writeFile(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(u.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(p); strings.HasPrefix(d, u.home+"/"); d = filepath.Dir(d) {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// env is the environment every harness gets: nobody's home and XDG
// directories, a plain PATH (with node's), no terminal unless on a pty.
func (u *user) env() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + u.home,
		"USER=nobody",
		"LOGNAME=nobody",
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TMPDIR=" + u.tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(u.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(u.home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(u.home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(u.home, ".local", "share"),
		"NO_COLOR=1",
		"CI=", // some harnesses change their behaviour under CI=true, which .ci/run sets
	}
}

// asNobody is setpriv's prefix that runs a command as nobody.
func asNobody(argv ...string) []string {
	return append([]string{"setpriv", "--reuid=" + itoa(nobody), "--regid=" + itoa(nobody), "--clear-groups"}, argv...)
}

// startForeign starts `sleep 1000` as nobody outside paddock; the test kills it at the end.
func (u *user) startForeign(t *testing.T) *proctest.Proc {
	t.Helper()
	argv := asNobody("sleep", "1000")
	return proctest.Start(t, exec.Command(argv[0], argv[1:]...))
}

// saidAllDone fails the test unless the harness (named so in the error)
// exited 0 having printed the model's final text, "all done".
func saidAllDone(t *testing.T, harness string, o outcome) {
	t.Helper()
	if o.code != 0 || !strings.Contains(o.stdout, "all done") {
		t.Errorf("%s did not finish its conversation with the final text:\n%v", harness, o)
	}
}

// sandboxKills is the command of the scenarios with a harness's own
// sandbox on: it names its PID namespace, kills a child of its own, then
// the foreign process f, and says how each kill went.
func sandboxKills(f *proctest.Proc) string {
	return "readlink /proc/self/ns/pid; sleep 300 & kill $!; echo own=$?; kill -TERM " + itoa(f.Pid()) + "; echo foreign=$?"
}

// checkSandboxKills checks the tool result of sandboxKills in session o:
// the command ran in a PID namespace that is not the host's (the
// harness's sandbox was on), killed its own child and failed to kill the
// foreign process f, which lives.
func checkSandboxKills(t *testing.T, result string, o outcome, f *proctest.Proc) {
	t.Helper()
	host, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	ns := regexp.MustCompile(`pid:\[\d+\]`).FindString(result)
	if ns == "" || ns == host {
		t.Fatalf("the command did not run in a PID namespace of the sandbox's own (%q, the host's is %s): is the sandbox on?\n%s\n%v", ns, host, result, o)
	}
	for _, w := range []string{"\nown=0\n", "\nforeign=1"} {
		if !strings.Contains(result, w) {
			t.Errorf("the tool result lacks %q:\n%s", w, result)
		}
	}
	requireAlive(t, f)
}

// requireAlive fails the test when the foreign process f did not survive.
func requireAlive(t *testing.T, f *proctest.Proc) {
	t.Helper()
	if !f.Alive(t) {
		t.Errorf("the foreign sleep (pid %d) of the same user, started outside paddock, did not survive", f.Pid())
	}
}

// session is one `paddock run` of a harness as nobody.
type session struct {
	backend string
	argv    []string // the harness's command line
	env     []string // added to user.env()
	flags   []string // paddock run's own flags, before --
}

// outcome is what a finished session left.
type outcome struct {
	code           int
	stdout, stderr string
	journal        string
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

// command prepares `setpriv ... paddock run --backend B --journal J FLAGS -- ARGV`
// in the user's work directory, and returns it with the journal's path.
func (u *user) command(t *testing.T, s session) (*exec.Cmd, string) {
	t.Helper()
	requireBackend(t, s.backend)
	j, err := os.CreateTemp(u.dir, "journal-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := os.Chown(j.Name(), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	args := append([]string{suite.paddock, "run", "--backend", s.backend, "--journal", j.Name(), "--log-format", "json"}, s.flags...)
	argv := asNobody(append(append(args, "--"), s.argv...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = u.work
	cmd.Env = append(u.env(), s.env...)
	// What the harness left running may hold the pipes open.
	cmd.WaitDelay = 5 * time.Second
	return cmd, j.Name()
}

// sessionLimit is how long a session may run before the test gives up on
// it: a safety, far above what a scripted conversation takes.
const sessionLimit = 4 * time.Minute

// waitLimit is how long a test waits for one step of a session (a tool
// result, a line on its terminal) before it gives up: a safety, far above
// what a step takes (opencode's TUI took over a minute to its first tool
// call beside two busy loops and the other harnesses).
const waitLimit = 3 * time.Minute

// run runs the session to its end, without a terminal, stdin empty.
func (u *user) run(t *testing.T, s session) outcome {
	t.Helper()
	cmd, journal := u.command(t, s)
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
	case <-time.After(sessionLimit):
		ps := processes()
		stop(cmd, done)
		t.Fatalf("%q did not finish in %v\nstdout:\n%s\nstderr:\n%s\nnobody's processes:\n%s", s.argv, sessionLimit, out.String(), errb.String(), ps)
	}
	o := outcome{stdout: out.String(), stderr: errb.String(), code: exitCode(t, cmd, err)}
	o.journal = readFile(journal)
	return o
}

// stop ends a session that did not end: SIGTERM first, which paddock
// forwards to the harness and then ends what it left (a SIGKILL of paddock
// would leave the harness's own sessions running), SIGKILL if that does
// not do it in 10 s.
func stop(cmd *exec.Cmd, done <-chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// processes lists nobody's processes as a tree: what a session that did
// not end left running.
func processes() string {
	out, err := exec.Command("ps", "-o", "pid,ppid,stat,args", "--forest", "-u", itoa(nobody)).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ps: %v\n%s", err, out)
	}
	return string(out)
}

// exitCode is the exit status Wait reported (128+N for death by signal N).
func exitCode(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return cmd.ProcessState.ExitCode()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatalf("wait for %v: %v", cmd.Args, err)
	return -1
}

// records parses the journal's JSON lines.
func (o outcome) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(o.journal))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// denied reports whether the journal has a signal_denied record aimed at target.
func (o outcome) denied(t *testing.T, target int) bool {
	t.Helper()
	for _, rec := range o.records(t) {
		if rec["action"] == "signal_denied" && rec["target"] == float64(target) {
			return true
		}
	}
	return false
}

// refusals is the number of refusals the session's session_ended record
// counts (every kind: signals, execs, the rest).
func (o outcome) refusals(t *testing.T) int {
	t.Helper()
	for _, rec := range o.records(t) {
		if rec["action"] == "session_ended" {
			n, ok := rec["refusals"].(float64)
			if !ok {
				t.Fatalf("the session_ended record has no refusals count: %v", rec)
			}
			return int(n)
		}
	}
	t.Fatalf("the journal has no session_ended record:\n%s", o.journal)
	return 0
}

// refusal is the start of paddock's message to a process refused a
// signal to pid: the model must see it word for word in its tool result.
func refusal(sig string, pid int) string {
	return fmt.Sprintf("paddock refused kill(%s) of pid %d", sig, pid)
}

// onPty is a session on a pty of its own, read as a terminal emulator would.
type onPty struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	done   chan error

	mu      sync.Mutex
	out     bytes.Buffer
	more    chan struct{} // a token when out grew
	drained chan struct{} // closed when the last holder of the pty's slave closed it
}

// startOnPty starts the session leading a session of its own on a new pty
// of rows x cols, as a program in a terminal emulator.
func (u *user) startOnPty(t *testing.T, s session, rows, cols uint16) *onPty {
	t.Helper()
	master, slave := ptytest.Open(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatalf("set the pty's size: %v", err)
	}
	cmd, _ := u.command(t, s)
	cmd.Env = append(cmd.Env, "TERM=xterm-256color", "COLUMNS=", "LINES=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p := &onPty{t: t, master: master, cmd: cmd, done: make(chan error, 1), more: make(chan struct{}, 1), drained: make(chan struct{})}
	go p.read()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			stop(cmd, p.done)
		}
		if t.Failed() {
			t.Logf("the terminal showed (escape sequences removed):\n%s", plain(p.output()))
		}
	})
	return p
}

// read collects what is written on the terminal, until every holder of
// the slave has closed it.
func (p *onPty) read() {
	defer close(p.drained)
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// output is everything written on the terminal so far.
func (p *onPty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// send types s.
func (p *onPty) send(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatalf("type %q: %v", s, err)
	}
}

// expect waits until the terminal's text (escape sequences removed)
// matches re; waitLimit at most, as a safety.
func (p *onPty) expect(re string) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	safety := time.After(waitLimit)
	for !rx.MatchString(plain(p.output())) {
		select {
		case <-p.more:
		case <-safety:
			p.t.Fatalf("the terminal never showed %q:\n%s", re, plain(p.output()))
		}
	}
}

// wait waits for the session to end (a safety limit, sessionLimit) and
// for the terminal to be read to its end (what paddock wrote last can
// still be in the pty when it exits), and returns the exit status.
func (p *onPty) wait() int {
	p.t.Helper()
	var code int
	select {
	case err := <-p.done:
		code = exitCode(p.t, p.cmd, err)
	case <-time.After(sessionLimit):
		p.t.Fatalf("the session on the pty did not end in %v:\n%s", sessionLimit, plain(p.output()))
	}
	select {
	case <-p.drained:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("the pty's slave was still open 10 s after the session ended (a process left behind?):\n%s", processes())
	}
	return code
}

// escapes matches a terminal's control sequences (CSI, OSC, two-byte ESC).
var escapes = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-_]|\x1b[ -/][0-~]`)

// cursorForward is the sequence a TUI moves right with instead of writing spaces.
var cursorForward = regexp.MustCompile(`\x1b\[\d*C`)

// plain is terminal output without its control sequences (a move to the
// right is a space).
func plain(s string) string {
	return escapes.ReplaceAllString(cursorForward.ReplaceAllString(s, " "), "")
}

// paddockLine matches what paddock itself may not show on the agent's
// terminal: a line of its own ("paddock: ...", "paddock run ...") or a log
// line (JSON or console, at WRN or INF), anywhere in a line, as a TUI
// draws lines at any column. The refused process's message ("paddock
// refused ...") is not paddock's line but the harness's tool output.
var paddockLine = regexp.MustCompile(`(?m)(^|[^a-z ])paddock(:| run| \d)|"component":"paddock"|\b(WRN|INF)\b`)

// turn is one answer of a scripted model: a call of the harness's shell
// tool with a command, or a final text.
type turn struct {
	command string
	timeout time.Duration // the shell tool's own timeout, where it has one (0: none)
	text    string
}

// shell is a turn that calls the shell tool with command.
func shell(command string) turn { return turn{command: command} }

// text is a final turn: the model's text, which ends the conversation.
func text(s string) turn { return turn{text: s} }

// request is one request the model server got.
type request struct {
	path string
	body []byte
}

// dialect is one model API: how the server answers a request, and how it
// reads the tool results back from one.
type dialect interface {
	// conversation tells the conversation's requests (those offering the
	// shell tool) from side requests.
	conversation(body []byte) bool
	// results are the tool results a request carries, in order.
	results(body []byte) []string
	// answer writes the answer to a conversation request with turn, the
	// i-th of the script (its id is derived from i), or to a side request
	// (i < 0) a short text.
	answer(w http.ResponseWriter, r *http.Request, body []byte, i int, tr turn)
}

// modelServer is a scripted model on 127.0.0.1 speaking one dialect.
type modelServer struct {
	url     string
	dialect dialect
	script  []turn

	mu   sync.Mutex
	reqs []request
	more chan struct{} // a token when a request was recorded
}

// newModelServer starts a model server that plays script, closed when the test ends.
func newModelServer(t *testing.T, d dialect, script ...turn) *modelServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on loopback: %v", err)
	}
	s := &modelServer{url: "http://" + ln.Addr().String(), dialect: d, script: script, more: make(chan struct{}, 1)}
	hs := &http.Server{Handler: s}
	go hs.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() {
		hs.Close()
		if t.Failed() {
			t.Logf("the model server got %d requests; the tool results the harness sent back: %q", len(s.requests()), s.results())
		}
	})
	return s
}

// ServeHTTP records the request and answers it with its turn.
func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, request{path: r.URL.Path, body: body})
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
	if r.Method != http.MethodPost || !s.dialect.conversation(body) {
		s.dialect.answer(w, r, body, -1, text("ok"))
		return
	}
	i := len(s.dialect.results(body))
	tr := text("done")
	if i < len(s.script) {
		tr = s.script[i]
	}
	s.dialect.answer(w, r, body, i, tr)
}

// requests are the requests recorded so far.
func (s *modelServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

// results are the tool results of the conversation's furthest request:
// what the harness sent back for each tool call of the script, in order.
func (s *modelServer) results() []string {
	var best []string
	for _, r := range s.requests() {
		if !s.dialect.conversation(r.body) {
			continue
		}
		if res := s.dialect.results(r.body); len(res) > len(best) {
			best = res
		}
	}
	return best
}

// waitResults waits until the harness has sent back n tool results
// (waitLimit at most, as a safety) and returns them.
func (s *modelServer) waitResults(t *testing.T, n int) []string {
	t.Helper()
	safety := time.After(waitLimit)
	for {
		if res := s.results(); len(res) >= n {
			return res
		}
		select {
		case <-s.more:
		case <-safety:
			t.Fatalf("the harness sent back %d tool results in %v, not %d", len(s.results()), waitLimit, n)
		}
	}
}

// conversed checks that the harness went through the whole script: a
// request carried a tool result for every tool call of it, and returns them.
func (s *modelServer) conversed(t *testing.T, o fmt.Stringer) []string {
	t.Helper()
	res := s.results()
	calls := 0
	for _, tr := range s.script {
		if tr.command != "" {
			calls++
		}
	}
	if len(res) < calls {
		t.Fatalf("the harness sent back %d tool results, the script has %d tool calls; %d requests\n%v", len(res), calls, len(s.requests()), o)
	}
	return res
}

func itoa(n int) string { return strconv.Itoa(n) }

// readFile returns a file's contents ("" when it cannot be read).
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
