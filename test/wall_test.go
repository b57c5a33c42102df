package test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
)

// The default wall (docs/deputies.md): the seccomp backend's trapped unix
// connects and opens for writing. Agent and foreign processes all run as
// nobody: the desktop case.

// wallNobody skips unless the seccomp backend can run here as nobody, and
// returns nobody's directory.
func wallNobody(t *testing.T) string {
	t.Helper()
	featuretest.Require(t, features.IDUserNotif)
	return nobodyDir(t)
}

// needTool skips without program name.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("needs %s: %v", name, err)
	}
}

// asNobody runs NAME ARGS as nobody outside paddock and returns its
// combined output.
func asNobody(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// journalHas reports whether the session journal in dir holds a record of
// action whose message contains want.
func journalHas(t *testing.T, dir, action, want string) bool {
	t.Helper()
	return journalCount(t, dir, action, want) > 0
}

// journalCount counts the records of action in the session journal in
// dir that contain want.
func journalCount(t *testing.T, dir, action, want string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"action":"`+action+`"`) && strings.Contains(line, want) {
			n++
		}
	}
	return n
}

// TestWallProcWrites: a foreign process's oom_score_adj is unchanged after
// the agent's shell redirection and its open(2) of it for writing, each
// refused with paddock's message and journaled, and after an open with
// O_CREAT|O_EXCL (which the filter lets run: it fails on any name that
// exists, a symbolic link to the file too); the agent's own child's
// can be raised, and its own; unshare -m and bubblewrap still work in the
// session (no mount(2) restriction). Checked by turning the wall off
// (paddock built without Config.Wall): the foreign score changes.
func TestWallProcWrites(t *testing.T) {
	dir := wallNobody(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	script := `echo 700 > /proc/` + fp + `/oom_score_adj; echo redirect=$?
python3 -c 'import os; os.open("/proc/` + fp + `/oom_score_adj", os.O_WRONLY)' 2>/dev/null; echo open=$?
python3 -c '
import os, sys
l = os.environ["HOME"] + "/l"
os.symlink("/proc/` + fp + `/oom_score_adj", l)
for p in ("/proc/` + fp + `/oom_score_adj", l):
    try:
        os.open(p, os.O_RDWR|os.O_CREAT|os.O_EXCL)
        print("excl=opened")
    except FileExistsError:
        print("excl=EEXIST")
'
sleep 300 & c=$!
echo 500 > /proc/$c/oom_score_adj && echo own=$(cat /proc/$c/oom_score_adj)
kill $c
(echo 400 > /proc/self/oom_score_adj && echo self=$(cat /proc/self/oom_score_adj))
unshare -Urm sh -c 'echo in-ns > /dev/null' && echo unshare=ok
if command -v bwrap >/dev/null; then bwrap --ro-bind / / --dev /dev --proc /proc sh -c 'echo 9 > /dev/null' && echo bwrap=ok; else echo bwrap=ok; fi`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "redirect=1", "open=1", "own=500", "self=400", "unshare=ok", "bwrap=ok")
	if n := countLines(lines, "excl=EEXIST"); n != 2 || slices.Contains(lines, "excl=opened") {
		t.Errorf("%d of 2 opens with O_CREAT|O_EXCL failed with EEXIST\n%s", n, out)
	}
	b, err := os.ReadFile("/proc/" + fp + "/oom_score_adj")
	if err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("the foreign process's oom_score_adj is %q (%v); want 0", b, err)
	}
	msg := "paddock refused openat(/proc/" + fp + "/oom_score_adj, O_WRONLY) from pid "
	if n := strings.Count(out, msg); n != 2 {
		t.Errorf("%d refusal messages for the foreign oom_score_adj; want 2 (the redirection's and python's)\n%s", n, out)
	}
	if !journalHas(t, dir, "write_denied", "/proc/"+fp+"/oom_score_adj") {
		t.Errorf("the journal has no write_denied record for the foreign oom_score_adj")
	}
	if !f.Alive(t) {
		t.Error("the foreign process died")
	}
}

// TestWallProcSysInNamespace: a write to a sysctl of the agent's own
// network namespace (unshare -rn, as rootless containers' network setup
// does) reaches that namespace's sysctl: the default wall lets an open of
// a /proc file that is no process's run as its caller made it, since the
// kernel finds a sysctl in its opener's namespaces. Opened by paddock it
// was paddock's namespace's, the host's: refused to nobody here (EACCES),
// and for a root agent the host's value was the one written (seen by
// hand and put back; not tested as root, where a failure would change the
// machine).
func TestWallProcSysInNamespace(t *testing.T) {
	dir := wallNobody(t)
	host, err := os.ReadFile("/proc/sys/net/ipv4/ping_group_range")
	if err != nil {
		t.Skipf("needs /proc/sys/net/ipv4/ping_group_range: %v", err)
	}
	script := `unshare -rn true || { echo unshare=failed; exit 0; }
unshare -rn sh -c 'echo "0 0" > /proc/sys/net/ipv4/ping_group_range && echo set=$(tr "\t" " " < /proc/sys/net/ipv4/ping_group_range)' || echo set=failed`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	if slices.Contains(lines, "unshare=failed") {
		t.Skipf("needs unprivileged user and network namespaces (unshare -rn):\n%s", out)
	}
	wantLines(t, out, lines, "set=0 0")
	if now, err := os.ReadFile("/proc/sys/net/ipv4/ping_group_range"); err != nil || string(now) != string(host) {
		t.Errorf("the host's ping_group_range is %q (%v), was %q", now, err, host)
	}
}

// TestWallCallerWithLessPower: under a root paddock, a process of the
// agent's that dropped to another user (su, setpriv, a daemon) opens and
// connects with its own rights, not paddock's: its write into a root-only
// directory and its append to a root-only file fail with EACCES as bare,
// and its connect to a root-only socket too (checked: the opens went
// through, as root, before the credential check). A process with
// paddock's credentials (the root agent itself) is carried out as before.
func TestWallCallerWithLessPower(t *testing.T) {
	b := backend("seccomp")
	b.require(t)
	featuretest.Require(t, features.IDUserNotif)
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root paddock whose agent starts a process as nobody")
	}
	dir := filepath.Join(t.TempDir(), "root-only")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "root.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	r := b.sh(t, `setpriv --reuid=65534 --regid=65534 --clear-groups bash -c '
echo x > `+dir+`/new; echo new=$?
echo y >> `+existing+`; echo existing=$?
python3 -c "
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(\"`+sock+`\"); print(\"connect=ok\")
except OSError as e:
    print(\"connect=%d\" % e.errno)
"' 2>/dev/null
echo z > `+dir+`/roots; echo roots=$?`)
	for _, want := range []string{"new=1", "existing=1", "connect=13", "roots=0"} {
		if !slices.Contains(strings.Split(r.stdout, "\n"), want) {
			t.Errorf("output lacks the line %q\n%s", want, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("nobody's process made a file in a root-only directory")
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "root's\n" {
		t.Errorf("the root-only file holds %q (%v), want it as it was", b, err)
	}
}

// TestWallTerminalOpen: a session leader that opens a pty's slave gets it
// as its controlling terminal, as bare (script, expect and a pty's child
// that opens its slave after setsid depend on it): the default wall lets
// an open of a terminal run as its caller made it, where an open carried
// out by paddock would have made it nobody's (docs/deputies.md).
func TestWallTerminalOpen(t *testing.T) {
	dir := wallNobody(t)
	needTool(t, "python3")
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, `python3 -c '`+cttyByOpen+`'`)
	wantLines(t, out, lines, "ctty=yes")
}

// cttyByOpen opens a pty, and in a child of its own session opens the
// slave by its name; it prints ctty=yes when that made the slave the
// child's controlling terminal (/proc/self/stat's tty_nr), ctty=no if not.
const cttyByOpen = `
import os, pty
m, s = pty.openpty()
name = os.ttyname(s)
os.close(s)
pid = os.fork()
if pid == 0:
    os.setsid()
    fd = os.open(name, os.O_RDWR)
    tty = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4])
    print("ctty=" + ("yes" if tty == os.fstat(fd).st_rdev else "no"), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
`

// TestWallTmux: as an agent inside the user's tmux (TMUX set), against a
// tmux server of the same user started outside: tmux kill-server and
// send-keys into the user's pane are refused with paddock's message and
// the user's server is untouched; a tmux server the agent starts itself
// works, and the agent can kill it.
func TestWallTmux(t *testing.T) {
	dir := wallNobody(t)
	needTool(t, "tmux")
	// tmux runs a pane's command with $SHELL, else the user's login shell:
	// nobody's is nologin, whose pane would end at once, and the server
	// with it.
	env := []string{"TMUX_TMPDIR=" + dir, "TERM=xterm", "SHELL=/bin/sh"}
	if out, err := asNobody(t, env, "tmux", "-L", "user", "new-session", "-d", "-s", "main", "cat"); err != nil {
		t.Fatalf("start the user's tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = asNobody(t, env, "tmux", "-L", "user", "kill-server") })
	if out, err := asNobody(t, env, "tmux", "-L", "user", "has-session", "-t", "main"); err != nil {
		t.Fatalf("the user's tmux server did not stay up: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "tmux-65534", "user")
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	t.Setenv("TMUX", sock+",1,0")
	script := `tmux kill-server; echo kill=$?
tmux -L user send-keys -t main 'echo typed-by-agent' Enter; echo keys=$?
tmux -L mine new-session -d -s x 'sleep 300' && tmux -L mine has-session -t x && echo own=up
tmux -L mine kill-server && echo own=killed`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "kill=1", "keys=1", "own=up", "own=killed")
	if n := strings.Count(out, "paddock refused connect("+sock+") from pid "); n != 2 {
		t.Errorf("%d refusal messages naming the user's tmux socket; want 2\n%s", n, out)
	}
	if !strings.Contains(out, "a tmux server the agent did not start") {
		t.Errorf("the refusal does not say why\n%s", out)
	}
	if got, err := asNobody(t, env, "tmux", "-L", "user", "has-session", "-t", "main"); err != nil {
		t.Errorf("the user's tmux server is gone: %v\n%s", err, got)
	}
	if pane, _ := asNobody(t, env, "tmux", "-L", "user", "capture-pane", "-p", "-t", "main"); strings.Contains(pane, "typed-by-agent") {
		t.Errorf("the agent's keys reached the user's pane:\n%s", pane)
	}
	if !journalHas(t, dir, "deputy_denied", sock) {
		t.Errorf("the journal has no deputy_denied record for the user's tmux")
	}
}

// TestWallScreen: screen -X quit of a GNU screen session of the user's,
// started outside, is refused; the session lives.
func TestWallScreen(t *testing.T) {
	dir := wallNobody(t)
	needTool(t, "screen")
	sdir := filepath.Join(dir, "screens")
	if err := os.Mkdir(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sdir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"SCREENDIR=" + sdir, "TERM=xterm"}
	if out, err := asNobody(t, env, "screen", "-dmS", "usersess", "sleep", "300"); err != nil {
		t.Fatalf("start the user's screen: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = asNobody(t, env, "screen", "-S", "usersess", "-X", "quit") })
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, `screen -S usersess -X quit; echo quit=$?`)
	wantLines(t, out, lines, "quit=1")
	if !strings.Contains(out, "a screen server the agent did not start") {
		t.Errorf("no refusal naming the user's screen\n%s", out)
	}
	if got, err := asNobody(t, env, "screen", "-ls"); !strings.Contains(got, "usersess") {
		t.Errorf("the user's screen session is gone: %v\n%s", err, got)
	}
}

// TestWallHarmlessServer: unix socket servers of the user's started
// outside answer the agent, through the connects paddock makes for it: a
// dev server, and an ssh-agent (ssh-add asks it for its keys).
func TestWallHarmlessServer(t *testing.T) {
	dir := wallNobody(t)
	needTool(t, "socat")
	sock := filepath.Join(dir, "dev.sock")
	srv := nobodyStart(t, "socat", "UNIX-LISTEN:"+sock+",fork", "SYSTEM:echo served-by-user")
	waitForSocket(t, sock, srv)
	// socat waits for the server's answer after its own input ends: -t
	// bounds that wait (0.5 s by default, which a loaded machine's fork and
	// exec of the server's echo outlasted); it ends when the server closes.
	script := `echo hi | socat -t 60 - UNIX-CONNECT:` + sock
	if _, err := exec.LookPath("ssh-agent"); err == nil {
		agentSock := filepath.Join(dir, "ssh.sock")
		ag := nobodyStart(t, "ssh-agent", "-D", "-a", agentSock)
		waitForSocket(t, agentSock, ag)
		script += `
SSH_AUTH_SOCK=` + agentSock + ` ssh-add -l; echo ssh-add=$?`
	} else {
		t.Logf("no ssh-agent (%v): the dev server alone", err)
	}
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "served-by-user")
	if strings.Contains(script, "ssh-add") {
		// 1: the agent answered that it holds no identities; 2 would be
		// no agent reached.
		wantLines(t, out, lines, "The agent has no identities.", "ssh-add=1")
	}
}

// waitForSocket waits until a server has bound sock and listens on it:
// the socket file's creation (inotify), then its listener in
// /proc/net/unix, which follows bind(2) at once; it fails when the server
// exits first.
func waitForSocket(t *testing.T, sock string, srv *proc) {
	t.Helper()
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify_init: %v", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, filepath.Dir(sock), unix.IN_CREATE); err != nil {
		t.Fatalf("inotify_add_watch %s: %v", filepath.Dir(sock), err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := os.Lstat(sock); err == nil {
			break
		}
		if !srv.Alive(t) {
			t.Fatalf("the server of %s exited", sock)
		}
		if _, err := unix.Read(in, buf); err != nil && err != unix.EINTR {
			t.Fatalf("inotify read: %v", err)
		}
	}
	for !unixListening(sock) {
		if !srv.Alive(t) {
			t.Fatalf("the server of %s exited", sock)
		}
		runtime.Gosched()
	}
}

// unixListening reports whether /proc/net/unix lists a socket bound to path.
func unixListening(path string) bool {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), " "+path) {
			return true
		}
	}
	return false
}

// TestWallDockerSocket: the Docker API socket (DOCKER_HOST) is refused to
// the agent with a message that says how to allow it; a profile with
// deputies_allowed = ["docker"] opens it.
func TestWallDockerSocket(t *testing.T) {
	dir := wallNobody(t)
	needTool(t, "socat")
	sock := filepath.Join(dir, "docker.sock")
	srv := nobodyStart(t, "socat", "UNIX-LISTEN:"+sock+",fork", "SYSTEM:echo docker-answered")
	waitForSocket(t, sock, srv)
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	script := `echo ping | socat -t 60 - UNIX-CONNECT:` + sock + `; echo rc=$?` // -t: as in TestWallHarmlessServer
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	if containsLine(lines, "docker-answered") {
		t.Errorf("the Docker socket answered the agent\n%s", out)
	}
	if !strings.Contains(out, "it is the Docker API") || !strings.Contains(out, `deputies_allowed = ["docker"]`) {
		t.Errorf("no refusal naming the Docker API and the way to allow it\n%s", out)
	}
	prof := filepath.Join(dir, "profile.toml")
	if err := os.WriteFile(prof, []byte("deputies_allowed = [\"docker\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, lines = backend("seccomp").nobodyRun(t, bins.paddock, dir, script, "--profile", prof)
	wantLines(t, out, lines, "docker-answered", "rc=0")
}

// containsLine reports whether lines holds want as a whole line.
func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// TestWallCgroupFiles: cgroup.freeze of a cgroup holding a foreign
// process is refused (the process is not frozen), of an empty cgroup
// allowed; the cgroups are delegated to nobody, as systemd delegates a
// user's.
func TestWallCgroupFiles(t *testing.T) {
	dir := wallNobody(t)
	root := cgroup2Mount(t)
	base, err := os.MkdirTemp(root, "paddock-wall-")
	if err != nil {
		t.Skipf("needs a cgroup2 hierarchy paddock's test may write: %v", err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(filepath.Join(base, "foreign"))
		os.Remove(filepath.Join(base, "empty"))
		os.Remove(base)
	})
	for _, d := range []string{"foreign", "empty"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", "-R", "65534:65534", filepath.Join(base, d)).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	}
	f := nobodyStart(t, "sleep", "300")
	if err := os.WriteFile(filepath.Join(base, "foreign", "cgroup.procs"), []byte(itoa(f.Pid())), 0o644); err != nil {
		t.Skipf("needs to move a process into a test cgroup: %v", err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(itoa(f.Pid())), 0o644)
	})
	script := `echo 1 > ` + base + `/foreign/cgroup.freeze; echo foreign=$?
echo 1 > ` + base + `/empty/cgroup.freeze; echo empty=$?`
	out, lines := backend("seccomp").nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "foreign=1", "empty=0")
	if !strings.Contains(out, "which holds processes that are not the agent's") {
		t.Errorf("no refusal naming the cgroup's foreign process\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(base, "foreign", "cgroup.freeze")); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("the foreign process's cgroup is frozen: cgroup.freeze %q", b)
	}
	_ = os.WriteFile(filepath.Join(base, "empty", "cgroup.freeze"), []byte("0"), 0o644)
}

// countLines counts the lines equal to want.
func countLines(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}
