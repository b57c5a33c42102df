package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
)

// Fleet mode through podman (Debian's podman 4.3 with conmon; .ci/run
// installs podman and crun), with runc and with crun: podman passes the
// profile's listenerPath and metadata to the runtime unchanged, and the
// runtime hands each container's listener, and each exec session's, to the
// test's agent. Each podman keeps everything under the test's directory:
// its storage, run and temporary directories, the runtime's state
// (--runtime-flag root=), file locks (CONTAINERS_CONF), and each
// container's root file system (--rootfs, a static busybox).

// podmanRun is one test's podman with one OCI runtime.
type podmanRun struct {
	f       *fleet
	t       *testing.T
	runtime string
	dir     string
	profile string
	// private runs podman (and so the runtime) in a mount namespace of its
	// own without the hybrid layout's /sys/fs/cgroup/unified, which crun
	// refuses ("cgroups in hybrid mode not supported").
	private bool
}

// podmanLimit bounds each podman command: a safety net that fails the
// test, never a timing.
const podmanLimit = 2 * time.Minute

// newPodman skips without podman, conmon or the runtime, and makes the
// test's podman with runtime.
func newPodman(t *testing.T, f *fleet, runtime string) *podmanRun {
	t.Helper()
	for _, tool := range []string{"podman", "conmon", runtime} {
		if _, err := exec.LookPath(tool); err != nil {
			if tool == "conmon" {
				if _, err2 := os.Stat("/usr/libexec/podman/conmon"); err2 == nil {
					continue
				}
			}
			t.Skipf("needs %s (apt-get install podman crun): %v", tool, err)
		}
	}
	dir := filepath.Join(f.dir, "pm-"+runtime)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &podmanRun{f: f, t: t, runtime: runtime, dir: dir, profile: filepath.Join(dir, "profile.json")}
	writeProfile(t, f.socket, "fleet-test", p.profile)
	conf := fmt.Sprintf("[engine]\nlock_type = \"file\"\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\n[network]\nnetwork_config_dir = %q\n", filepath.Join(dir, "net"))
	if err := os.WriteFile(filepath.Join(dir, "containers.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if runtime == "crun" && features.HybridCgroups() {
		p.private = true
		t.Log("crun cannot run under this machine's hybrid cgroup layout (cgroup v1 with /sys/fs/cgroup/unified): podman and crun run in a private mount namespace without that mount")
	}
	// Podman 4.3 as root makes /run/containers/networks whatever its
	// configuration says, and crun makes /run/crun when asked its version:
	// removed again if the test made them (and they are empty).
	var made []string
	for _, d := range []string{"/run/containers/networks", "/run/containers", "/run/crun"} {
		if _, err := os.Stat(d); err != nil {
			made = append(made, d)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
		defer cancel()
		_ = p.cmd(ctx, "rm", "-a", "-f", "-t", "0").Run()
		reap(t, p.dir)
		// Podman's overlay storage bind-mounts its directory onto itself
		// (to make it private) and leaves it mounted: the test's
		// directory could not be removed.
		for _, m := range mountsUnder(p.dir) {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s, left by podman: %v", m, err)
			}
		}
		for _, d := range made {
			_ = os.Remove(d)
		}
	})
	return p
}

// left lists what an engine started for a test and is still running: the
// processes whose command line names dir, the engine's directory in the
// test's.
func left(dir string) map[int]string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmdline, []byte(dir+"/")) {
			procs[pid] = string(bytes.ReplaceAll(cmdline[:min(len(cmdline), 200)], []byte{0}, []byte{' '}))
		}
	}
	return procs
}

// reap waits for what an engine started for a test in dir to end (conmon's
// exit commands, containerd's shims run on after their containers), for
// at most podmanLimit, and kills what is still there then, or at once
// where the test failed (a runtime process blocked in a trapped call
// outlives `podman rm -f`).
func reap(t *testing.T, dir string) {
	for end := time.Now().Add(podmanLimit); !t.Failed() && len(left(dir)) > 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
	}
	for pid, cmdline := range left(dir) {
		t.Logf("killing pid %d, left by the engine: %s", pid, cmdline)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// cmd is podman with args, on the test's directories and runtime.
func (p *podmanRun) cmd(ctx context.Context, args ...string) *exec.Cmd {
	base := []string{"--root", filepath.Join(p.dir, "storage"), "--runroot", filepath.Join(p.dir, "run"),
		"--tmpdir", filepath.Join(p.dir, "tmp"), "--runtime", p.runtime, "--runtime-flag", "root=" + filepath.Join(p.dir, "rt")}
	args = append(base, args...)
	var cmd *exec.Cmd
	if p.private {
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"-m", "--propagation", "private", "sh", "-c",
			`umount /sys/fs/cgroup/unified && exec podman "$@"`, "podman"}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, "podman", args...)
	}
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(p.dir, "containers.conf"))
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runArgs are `podman run`'s arguments for container name running script
// with extra flags: no network, the agent's profile, a root file system of
// its own (returned), and open-file and process limits no higher than the
// test's (podman raises them by default, which needs CAP_SYS_RESOURCE).
func (p *podmanRun) runArgs(name, script string, extra ...string) ([]string, string) {
	rootfs := filepath.Join(p.dir, "rootfs-"+name)
	p.f.rootfs(rootfs)
	limit := func(res int, name string) string {
		var l unix.Rlimit
		n := uint64(4096)
		if unix.Getrlimit(res, &l) == nil && l.Max < n {
			n = l.Max
		}
		return fmt.Sprintf("%s=%d:%d", name, n, n)
	}
	args := []string{"run", "--name", name, "--cidfile", filepath.Join(p.dir, name+".cid"), "--network", "none",
		"--ulimit", limit(unix.RLIMIT_NOFILE, "nofile"), "--ulimit", limit(unix.RLIMIT_NPROC, "nproc"),
		"--security-opt", "seccomp=" + p.profile}
	args = append(append(args, extra...), "--rootfs", rootfs, "sh", "-c", script)
	return args, rootfs
}

// output runs podman with args and returns its stdout and stderr; a
// command that runs past podmanLimit fails the test.
func (p *podmanRun) output(args ...string) (string, string, error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	cmd := p.cmd(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		said := strings.Join(args, " ")
		if len(said) > 300 {
			said = said[:300] + "..."
		}
		p.t.Fatalf("podman %s ran past %v (hung)\n%s%s\nagent:\n%s", said, podmanLimit, out.String(), errb.String(), p.f.log())
	}
	return out.String(), errb.String(), err
}

// run runs container name to completion and returns its output.
func (p *podmanRun) run(name, script string, extra ...string) (string, string) {
	p.t.Helper()
	args, _ := p.runArgs(name, script, extra...)
	out, errb, err := p.output(args...)
	if err != nil && !strings.Contains(out, "=") {
		p.t.Fatalf("podman run %s: %v\n%s%s", name, err, out, errb)
	}
	return out, errb
}

// detach starts container name in the background and returns its root
// file system.
func (p *podmanRun) detach(name, script string, extra ...string) string {
	p.t.Helper()
	args, rootfs := p.runArgs(name, script, append([]string{"-d"}, extra...)...)
	if out, errb, err := p.output(args...); err != nil {
		p.t.Fatalf("podman run -d %s: %v\n%s%s", name, err, out, errb)
	}
	return rootfs
}

// id is container name's id, as the agent's journal names it.
func (p *podmanRun) id(name string) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, name+".cid"))
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// refusals counts the journal's records of container name with action.
func (p *podmanRun) refusals(name, action string) int {
	n := 0
	for _, r := range p.f.records() {
		if r["container"] == p.id(name) && r["action"] == action {
			n++
		}
	}
	return n
}

// waitResult waits for file name in rootfs, written whole (mv) by the
// container, for at most podmanLimit (a safety net).
func (p *podmanRun) waitResult(rootfs, name string) string {
	p.t.Helper()
	path := filepath.Join(rootfs, name)
	for end := time.Now().Add(podmanLimit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
	}
	p.t.Fatalf("%s did not appear\nagent:\n%s", path, p.f.log())
	return ""
}

// TestFleetPodman drives podman with runc and with crun: a container's
// own child signalled and its first process safe from a descendant, with
// a journal record; a `podman exec` session (crun sends its handoff with
// pid 0: it hung for ever before); a --pid=host container that cannot kill
// a node process; `podman restart`, whose new container reuses the id
// (each start's descendant's kill -9 1 refused); a 40 KB annotation; and
// --init (catatonit as the container's first process).
func TestFleetPodman(t *testing.T) {
	f := newFleet(t)
	for _, runtime := range []string{"runc", "crun"} {
		t.Run(runtime, func(t *testing.T) {
			p := newPodman(t, f, runtime)
			t.Run("create", func(t *testing.T) {
				p.t = t
				out, errb := p.run("create", fleetScript)
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
				if !strings.Contains(errb, "it is the container's first process") {
					t.Errorf("the container's stderr lacks paddock's message\n%s", errb)
				}
				if n := p.refusals("create", "signal_denied"); n != 1 {
					t.Errorf("want one signal_denied record of the container, got %d\n%s", n, readFile(f.journal))
				}
			})
			t.Run("exec", func(t *testing.T) {
				p.t = t
				p.detach("exec", "sleep 600")
				out, errb, err := p.output("exec", "exec", "sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo exec-lifeline=$?)
kill -0 1; echo probe=$?`)
				if err != nil {
					t.Fatalf("podman exec: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
				}
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "exec-lifeline=1", "probe=0")
				if n := p.refusals("exec", "signal_denied"); n != 1 {
					t.Errorf("want one signal_denied record of the exec session, got %d\n%s", n, readFile(f.journal))
				}
			})
			t.Run("hostPID", func(t *testing.T) {
				p.t = t
				node := startForeign(t, "sleep", "300")
				out, errb := p.run("hostpid", "kill -TERM "+itoa(node.Pid())+"; echo node=$?; sleep 100 & kill $!; echo own=$?", "--pid", "host")
				wantLines(t, out+errb, strings.Split(out, "\n"), "node=1", "own=0")
				if !node.Alive(t) {
					t.Error("the node's process died")
				}
			})
			t.Run("restart", func(t *testing.T) {
				p.t = t
				rootfs := p.detach("restart", `n=$(cat /starts 2>/dev/null || echo 0); n=$((n+1)); echo $n >/starts
(kill -9 1; echo lifeline=$?) >/r.tmp 2>&1; mv /r.tmp /r$n
sleep 600`)
				for n := 1; n <= 3; n++ {
					if n > 1 {
						out, errb, err := p.output("restart", "-t", "0", "restart")
						if err != nil && strings.Contains(errb, "already exists") {
							// podman 4.3 with crun: the old container's
							// runtime state is sometimes still there when
							// the restart creates it again (no paddock
							// part in it); podman start creates it then.
							t.Logf("podman restart: %v: %s; podman start", err, strings.TrimSpace(errb))
							out, errb, err = p.output("start", "restart")
						}
						if err != nil {
							t.Fatalf("podman restart: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
						}
					}
					if got := p.waitResult(rootfs, fmt.Sprintf("r%d", n)); !strings.Contains(got, "lifeline=1") {
						t.Errorf("start %d: a descendant's kill -9 1 was not refused: %q\nagent:\n%s", n, got, f.log())
					}
				}
			})
			t.Run("annotation", func(t *testing.T) {
				p.t = t
				out, errb := p.run("annotated", fleetScript, "--annotation", "example.com/large="+strings.Repeat("a", 40000))
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
				if n := p.refusals("annotated", "signal_denied"); n != 1 {
					t.Errorf("want one signal_denied record, got %d\nagent:\n%s", n, f.log())
				}
			})
			t.Run("init", func(t *testing.T) {
				p.t = t
				if _, err := os.Stat("/usr/libexec/podman/catatonit"); err != nil {
					if _, err := exec.LookPath("catatonit"); err != nil {
						t.Skipf("needs catatonit (podman's --init; apt-get install catatonit): %v", err)
					}
				}
				out, errb := p.run("init", `sleep 100 & kill $!; echo own=$?
(kill -9 1; echo init=$?)
(kill -9 $$; echo program=$?)
kill -0 1; echo probe=$?`, "--init")
				// The program, sh, is catatonit's first child: a lifeline too.
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "init=1", "program=1", "probe=0")
			})
		})
	}
}
