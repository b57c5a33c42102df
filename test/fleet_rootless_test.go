package test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
)

// Fleet mode under rootless podman: the user's own `paddock agent` (run as
// the user, on its default socket under $XDG_RUNTIME_DIR) serves the
// containers the user's podman starts, with the profile `paddock agent
// profile` prints for that user. Rootless podman needs an unprivileged user
// with subordinate uid and gid ranges (/etc/subuid, /etc/subgid) and
// newuidmap/newgidmap (the uidmap package): the test uses the user
// $PADDOCK_ROOTLESS_USER names, else the first such user of /etc/subuid
// (.ci/run makes paddock-rootless where there is none). Everything of the
// user's podman lies under the test's directory (rootlessEnv).

// rootlessEnv is an unprivileged user's podman, everything of it under a
// test's directory of the user's: HOME, XDG_RUNTIME_DIR (podman's pause
// process's pid file and the runtime's state), storage (vfs), run and
// temporary directories, file locks (CONTAINERS_CONF), each container's
// --rootfs. The fleet tests run it through the user's agent, the wall's
// tests under the user's paddock run.
type rootlessEnv struct {
	t        *testing.T
	runtime  string
	uid, gid int
	dir      string // the user's: HOME, XDG_RUNTIME_DIR, podman's files
	xdg      string
	// pauses are the pause processes pause has seen: podman removes
	// pause.pid when it cannot join one, which runs on.
	pauses []int
}

// rootless is one test's unprivileged user, agent and podman.
type rootless struct {
	*rootlessEnv
	journal string
	logPath string
	profile string
	agent   *exec.Cmd
}

// subRanges lists the names and ids with a subordinate range in path
// (/etc/subuid or /etc/subgid).
func subRanges(path string) map[string]bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) == 3 && f[2] != "0" {
			m[f[0]] = true
		}
	}
	return m
}

// hasSubRanges reports whether u has subordinate uid and gid ranges, which
// podman then maps into its user namespace with newuidmap and newgidmap.
func hasSubRanges(u *user.User) bool {
	subuid, subgid := subRanges("/etc/subuid"), subRanges("/etc/subgid")
	return (subuid[u.Username] || subuid[u.Uid]) && (subgid[u.Username] || subgid[u.Gid])
}

// rootlessUser finds an unprivileged user with subordinate uid and gid
// ranges: $PADDOCK_ROOTLESS_USER, else the first of /etc/subuid that has
// a passwd entry and a range in /etc/subgid too.
func rootlessUser(t *testing.T) *user.User {
	t.Helper()
	if name := os.Getenv("PADDOCK_ROOTLESS_USER"); name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("PADDOCK_ROOTLESS_USER=%s: %v", name, err)
		}
		if u.Uid == "0" || !hasSubRanges(u) {
			t.Fatalf("PADDOCK_ROOTLESS_USER=%s: want an unprivileged user with ranges in /etc/subuid and /etc/subgid", name)
		}
		return u
	}
	b, _ := os.ReadFile("/etc/subuid")
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), ":")
		u, err := user.Lookup(name)
		if err != nil {
			u, err = user.LookupId(name)
		}
		if err == nil && u.Uid != "0" && hasSubRanges(u) {
			return u
		}
	}
	t.Skip("needs an unprivileged user with ranges in /etc/subuid and /etc/subgid for rootless podman (.ci/run makes paddock-rootless: useradd --create-home paddock-rootless; or name one in PADDOCK_ROOTLESS_USER)")
	return nil
}

// newRootlessEnv skips without root, setpriv, podman, runtime or a static
// busybox, and makes uid:gid's podman environment.
func newRootlessEnv(t *testing.T, runtime string, uid, gid int) *rootlessEnv {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: to run podman and the processes it is tested against as an unprivileged user")
	}
	for _, tool := range []string{"setpriv", "podman", runtime} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install podman %s): %v", tool, runtime, err)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skipf("needs a static busybox (apt-get install busybox-static): %v", err)
	}
	e := &rootlessEnv{t: t, runtime: runtime, uid: uid, gid: gid}
	dir, err := os.MkdirTemp("", "pdr") // short: the socket's path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	e.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	e.xdg = filepath.Join(dir, "xdg")
	for _, d := range []string{filepath.Join(dir, "home"), e.xdg} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	// The user runs the test's paddock.
	if st, err := os.Stat(bins.dir); err == nil && st.Mode().Perm()&0o005 != 0o005 {
		if err := os.Chmod(bins.dir, st.Mode().Perm()|0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := fmt.Sprintf("[engine]\nlock_type = \"file\"\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\n[network]\nnetwork_config_dir = %q\n", filepath.Join(dir, "net"))
	if err := os.WriteFile(filepath.Join(dir, "containers.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// newRootless skips without root, setpriv, podman, newuidmap/newgidmap,
// runtime or such a user, and starts the user's agent on its default
// socket.
func newRootless(t *testing.T, runtime string) *rootless {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: to run the agent, podman and a foreign process as an unprivileged user")
	}
	for _, tool := range []string{"newuidmap", "newgidmap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install uidmap): %v", tool, err)
		}
	}
	u := rootlessUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	r := &rootless{rootlessEnv: newRootlessEnv(t, runtime, uid, gid)}
	dir := r.dir
	r.journal, r.logPath, r.profile = filepath.Join(dir, "j.jsonl"), filepath.Join(dir, "agent.log"), filepath.Join(dir, "profile.json")
	r.startAgent()
	t.Cleanup(r.stop)

	// The profile the user's paddock prints without --socket names the
	// user's agent.
	if out, err := r.as(context.Background(), bins.paddock, "agent", "profile", "-o", r.profile).CombinedOutput(); err != nil {
		t.Fatalf("paddock agent profile as uid %d: %v\n%s", r.uid, err, out)
	}
	want := fmt.Sprintf("%q", filepath.Join(r.xdg, "paddock", "agent.sock"))
	if b := readFile(r.profile); !strings.Contains(b, `"listenerPath": `+want) {
		t.Fatalf("the user's profile does not name the user's agent's socket %s:\n%.400s", want, b)
	}
	return r
}

// env is the user's environment: everything of podman's and paddock's
// under the test's directory.
func (e *rootlessEnv) env() []string {
	home := filepath.Join(e.dir, "home")
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home,
		"XDG_RUNTIME_DIR=" + e.xdg, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"CONTAINERS_CONF=" + filepath.Join(e.dir, "containers.conf"), "LANG=C.UTF-8"}
}

// as is name args run as the user, with the user's environment.
func (e *rootlessEnv) as(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "setpriv", append([]string{"--reuid=" + itoa(e.uid), "--regid=" + itoa(e.gid), "--init-groups", name}, args...)...)
	cmd.Env = e.env()
	cmd.Dir = e.dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// startAgent runs `paddock agent` as the user, with no --socket: the
// user's default socket.
func (r *rootless) startAgent() {
	r.t.Helper()
	logf, err := os.OpenFile(r.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer logf.Close()
	r.agent = r.as(context.Background(), bins.paddock, "agent", "--journal", r.journal, "--log-format", "json")
	r.agent.Stdout, r.agent.Stderr = logf, logf
	if err := r.agent.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = r.agent.Wait(); close(exited) }()
	r.t.Cleanup(func() { <-exited })
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		select {
		case <-exited:
			r.t.Fatalf("the user's agent exited\n%s", readFile(r.logPath))
		default:
		}
		if strings.Contains(readFile(r.logPath), "fleet agent listening") {
			return
		}
	}
	r.t.Fatalf("the user's agent did not listen in 10 s\n%s", readFile(r.logPath))
}

// stop ends the agent and what podman left: its containers, conmon, and
// its pause process (which holds the user namespace).
func (r *rootless) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	_ = r.podman(ctx, "rm", "-a", "-f", "-t", "0").Run()
	if r.agent != nil && r.agent.Process != nil {
		_ = r.agent.Process.Signal(os.Interrupt)
	}
	reap(r.t, r.dir)
	r.endPause()
}

// pause is the pid of the user's podman's pause process, which holds its
// user namespace (0: none runs).
func (e *rootlessEnv) pause() int {
	b, err := os.ReadFile(filepath.Join(e.dir, "tmp", "pause.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 || !isPause(pid) {
		return 0
	}
	if !slices.Contains(e.pauses, pid) {
		e.pauses = append(e.pauses, pid)
	}
	return pid
}

// isPause reports whether pid is a pause process (podman's catatonit -P).
func isPause(pid int) bool {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return bytes.Contains(cmdline, []byte("catatonit"))
}

// endPause kills the user's podman's pause process, where one runs, and
// those pause saw before.
func (e *rootlessEnv) endPause() {
	e.pause()
	for _, pid := range e.pauses {
		if isPause(pid) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// podmanArgs are the user's podman's arguments for args: the test's
// directories, vfs storage and runtime.
func (e *rootlessEnv) podmanArgs(args ...string) []string {
	base := []string{"--root", filepath.Join(e.dir, "storage"), "--runroot", filepath.Join(e.dir, "run"),
		"--tmpdir", filepath.Join(e.dir, "tmp"), "--storage-driver", "vfs", "--runtime", e.runtime}
	return append(base, args...)
}

// command is name args run as the user, where the test's runtime can run:
// with crun under the hybrid cgroup layout, in a mount namespace of its
// own without /sys/fs/cgroup/unified (crun refuses that layout), made as
// root before name runs as the user.
func (e *rootlessEnv) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if e.runtime == "crun" && features.HybridCgroups() {
		cmd := exec.CommandContext(ctx, "unshare", append([]string{"-m", "--propagation", "private", "sh", "-c",
			`umount /sys/fs/cgroup/unified && u=$0 g=$1 && shift && exec setpriv --reuid="$u" --regid="$g" --init-groups "$@"`, itoa(e.uid), itoa(e.gid), name}, args...)...)
		cmd.Env, cmd.Dir, cmd.WaitDelay = e.env(), e.dir, 5*time.Second
		return cmd
	}
	return e.as(ctx, name, args...)
}

// podman is the user's podman with args and the test's runtime.
func (e *rootlessEnv) podman(ctx context.Context, args ...string) *exec.Cmd {
	return e.command(ctx, "podman", e.podmanArgs(args...)...)
}

// rootfs makes container name's root file system in the test's
// directory, a static busybox, the user's (podman makes /etc and its
// files in it), and returns its path.
func (e *rootlessEnv) rootfs(name string) string {
	e.t.Helper()
	rootfs := filepath.Join(e.dir, "rootfs-"+name)
	(&fleet{t: e.t}).rootfs(rootfs)
	if err := filepath.Walk(rootfs, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, e.uid, e.gid)
	}); err != nil {
		e.t.Fatal(err)
	}
	return rootfs
}

// output runs the user's podman with args and returns its stdout and
// stderr; a podman past podmanLimit fails the test.
func (r *rootless) output(args ...string) (string, string, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	cmd := r.podman(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		r.t.Fatalf("podman %s ran past %v (hung)\n%s%s\nagent:\n%s", args[0], podmanLimit, out.String(), errb.String(), readFile(r.logPath))
	}
	return out.String(), errb.String(), err
}

// run runs container name to completion, on a busybox root
// file system, with the user's profile and extra flags; it returns its
// stdout and stderr. A podman past podmanLimit fails the test.
func (r *rootless) run(name, script string, extra ...string) (string, string) {
	r.t.Helper()
	rootfs := r.rootfs(name)
	args := []string{"run", "--name", name, "--cidfile", filepath.Join(r.dir, name+".cid"), "--network", "none",
		"--security-opt", "seccomp=" + r.profile}
	args = append(append(args, extra...), "--rootfs", rootfs, "sh", "-c", script)
	out, errb, err := r.output(args...)
	if err != nil && !strings.Contains(out, "=") {
		r.t.Fatalf("podman run %s as uid %d: %v\n%s%s\nagent:\n%s", name, r.uid, err, out, errb, readFile(r.logPath))
	}
	return out, errb
}

// records counts the journal's records of container name with action
// aimed at target (any target: -1).
func (r *rootless) records(name, action string, target int) int {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name+".cid"))
	if err != nil {
		r.t.Fatal(err)
	}
	id := strings.TrimSpace(string(b))
	n := 0
	for _, rec := range (result{journal: readFile(r.journal)}).records(r.t) {
		if rec["container"] == id && rec["action"] == action && (target < 0 || rec["target"] == float64(target)) {
			n++
		}
	}
	return n
}

// TestFleetRootlessPodman: rootless podman, with runc and with crun,
// through the user's own agent. A container in a PID namespace of its own
// (podman's default) kills its own child, its descendant's kill -9 1 is
// refused with a journal record (so the user's agent serves it), and the
// user's process outside it, a sleep of the same user, cannot be reached:
// its pid names nothing in the container's namespace (ESRCH), and it
// lives. The same in a `podman exec` session (crun's is sent without a
// pid), and under --init the program, catatonit's child, is safe too. With --pid host (the container shares the node's PID namespace,
// and rootless podman on cgroup v1 makes no cgroup of its own: it is in
// the cgroup of podman's caller, with the user's processes), the kill of
// the user's sleep is refused by the agent (EPERM, the message, a
// journal record) and the sleep lives, and the container still kills its
// own child: its processes are its first process's descendants there.
func TestFleetRootlessPodman(t *testing.T) {
	for _, runtime := range []string{"runc", "crun"} {
		t.Run(runtime, func(t *testing.T) {
			r := newRootless(t, runtime)
			foreign := startForeign(t, "setpriv", "--reuid="+itoa(r.uid), "--regid="+itoa(r.gid), "--init-groups", "sleep", "300")
			t.Run("own", func(t *testing.T) {
				r.t = t
				out, errb := r.run("own", fleetScript+"\nkill -TERM "+itoa(foreign.Pid())+"; echo foreign=$?")
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0", "foreign=1")
				if !strings.Contains(errb, "it is the container's first process") {
					t.Errorf("the container's stderr lacks paddock's message\n%s\nagent:\n%s", errb, readFile(r.logPath))
				}
				if n := r.records("own", "signal_denied", -1); n != 1 {
					t.Errorf("want one signal_denied record of the container, got %d\n%s", n, readFile(r.journal))
				}
				if !foreign.Alive(t) {
					t.Error("the user's process outside the container died")
				}
			})
			t.Run("exec", func(t *testing.T) {
				r.t = t
				r.run("exec", "sleep 600", "-d")
				out, errb, err := r.output("exec", "exec", "sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo exec-lifeline=$?)
kill -TERM `+itoa(foreign.Pid())+`; echo foreign=$?`)
				if err != nil {
					t.Fatalf("podman exec: %v\n%s%s\nagent:\n%s", err, out, errb, readFile(r.logPath))
				}
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "exec-lifeline=1", "foreign=1")
				if n := r.records("exec", "signal_denied", -1); n != 1 {
					t.Errorf("want one signal_denied record of the exec session, got %d\n%s", n, readFile(r.journal))
				}
				if !foreign.Alive(t) {
					t.Error("the user's process outside the container died")
				}
			})
			t.Run("init", func(t *testing.T) {
				r.t = t
				if _, err := os.Stat("/usr/libexec/podman/catatonit"); err != nil {
					if _, err := exec.LookPath("catatonit"); err != nil {
						t.Skipf("needs catatonit (podman's --init; apt-get install catatonit): %v", err)
					}
				}
				out, errb := r.run("init", `sleep 100 & kill $!; echo own=$?
(kill -9 1; echo init=$?)
(kill -9 $$; echo program=$?)
kill -0 1; echo probe=$?`, "--init")
				// Not last: busybox sh runs a last subshell in its own
				// process, where kill -9 $$ is a kill of itself.
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "init=1", "program=1", "probe=0")
				if t.Failed() {
					t.Logf("agent:\n%s", readFile(r.logPath))
				}
			})
			t.Run("hostPIDexec", func(t *testing.T) {
				r.t = t
				r.run("hpexec", "sleep 600", "-d", "--pid", "host")
				out, errb, err := r.output("exec", "hpexec", "sh", "-c", `sleep 100 & echo child=$!; kill $!; echo own=$?
kill -TERM `+itoa(foreign.Pid())+`; echo foreign=$?`)
				if err != nil {
					t.Fatalf("podman exec: %v\n%s%s\nagent:\n%s", err, out, errb, readFile(r.logPath))
				}
				lines := strings.Split(out, "\n")
				// runc's exec session is a container of its own, its
				// processes its first process's descendants. crun's is sent
				// without a pid, and its first caller, not a descendant of
				// the container's first process, cannot be placed: its
				// calls are decided as from outside, and its own child's
				// kill is refused too (fail closed; docs/fleet.md).
				own := map[string]string{"runc": "own=0", "crun": "own=1"}[runtime]
				wantLines(t, out+errb, lines, own, "foreign=1")
				if !foreign.Alive(t) {
					t.Errorf("the user's process outside the container died\nagent:\n%s", readFile(r.logPath))
				}
				if t.Failed() {
					t.Logf("agent:\n%s", readFile(r.logPath))
				}
				// A child the session could not kill: the test's (it
				// started it through podman), and podman cannot end it (no
				// PID namespace, no cgroup of the container's).
				for _, l := range lines {
					if pid, err := strconv.Atoi(strings.TrimPrefix(l, "child=")); err == nil && strings.HasPrefix(l, "child=") && pidAlive(pid) {
						if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); string(cmdline) == "sleep\x00100\x00" {
							_ = unix.Kill(pid, unix.SIGKILL)
						}
					}
				}
			})
			t.Run("hostPID", func(t *testing.T) {
				r.t = t
				out, errb := r.run("hostpid", "kill -TERM "+itoa(foreign.Pid())+"; echo foreign=$?; sleep 100 & kill $!; echo own=$?", "--pid", "host")
				wantLines(t, out+errb, strings.Split(out, "\n"), "foreign=1", "own=0")
				if !foreign.Alive(t) {
					t.Errorf("the user's process outside the container died\nagent:\n%s", readFile(r.logPath))
				}
				if !strings.Contains(errb, "paddock refused") {
					t.Errorf("the container's stderr lacks paddock's message\n%s", errb)
				}
				if n := r.records("hostpid", "signal_denied", foreign.Pid()); n != 1 {
					t.Errorf("want one signal_denied record of the kill of pid %d, got %d\n%s", foreign.Pid(), n, readFile(r.journal))
				}
			})
		})
	}
}
