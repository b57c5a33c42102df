package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
)

// Fleet mode through Docker (Debian's docker.io 20.10 with its containerd
// and runc; .ci/run installs it), which drops the profile's listenerPath:
// the test's dockerd names `paddock agent runtime-wrapper` as a runtime in
// its daemon.json, as docs/fleet.md says. The dockerd keeps its data root,
// exec root, socket, pid file and key in the test's directory, and runs in
// a mount namespace of its own with a tmpfs on /run (Docker makes
// /run/docker and its containerd's shims /run/containerd whatever its
// configuration says): its mounts and those directories go when it ends.
// The image is the test's static busybox, imported (no registry needed).
// With crun installed, daemon.json names it too, through the wrapper and
// without; under the hybrid cgroup layout, which crun refuses, dockerd's
// mount namespace has no /sys/fs/cgroup/unified (runc does not need it).

// dockerRun is one test's dockerd.
type dockerRun struct {
	f       *fleet
	t       *testing.T
	dir     string
	sock    string
	profile string
	logPath string
	// crun is crun's path, where it is installed (daemon.json names it
	// as crun, and through the wrapper as dockerCrun).
	crun   string
	daemon *exec.Cmd
	done   chan error
}

// dockerImage is the image the test imports: the fleet's busybox rootfs.
const dockerImage = "paddock-test/busybox"

// dockerRuntime is the name daemon.json gives the wrapper (to runc);
// dockerCrun the wrapper's to crun.
const (
	dockerRuntime = "paddock-runc"
	dockerCrun    = "paddock-crun"
)

// hostPaths are where a dockerd run with its defaults leaves things on
// the host; the test's must leave none of them.
var hostPaths = []string{"/run/docker", "/run/docker.sock", "/run/docker.pid", "/run/containerd", "/var/run/docker", "/var/lib/docker", "/var/lib/containerd", "/etc/docker", "/etc/docker/key.json"}

// newDocker skips without dockerd, docker, containerd or its runc shim, or
// where the test's dockerd does not come up; it starts the test's dockerd
// with the wrapper as runtime dockerRuntime, and imports dockerImage.
func newDocker(t *testing.T, f *fleet) *dockerRun {
	t.Helper()
	for _, tool := range []string{"dockerd", "docker", "containerd", "containerd-shim-runc-v2", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install docker.io): %v", tool, err)
		}
	}
	dir := filepath.Join(f.dir, "dk")
	if err := os.MkdirAll(filepath.Join(dir, "client"), 0o700); err != nil {
		t.Fatal(err)
	}
	d := &dockerRun{f: f, t: t, dir: dir, sock: filepath.Join(dir, "d.sock"), profile: filepath.Join(dir, "profile.json"),
		logPath: filepath.Join(dir, "dockerd.log"), done: make(chan error, 1)}
	// The profile's listenerPath and metadata are dropped by Docker 20.10;
	// the wrapper's --metadata is what the journal gets.
	writeProfile(t, f.socket, "dropped-by-docker", d.profile)
	// docs/fleet.md's daemon.json, with the test's binary and socket.
	// Its trust key (/etc/docker/key.json by default) in the test's
	// directory too.
	wrapper := func(runtime string) map[string]any {
		return map[string]any{"path": bins.paddock,
			"runtimeArgs": []string{"agent", "runtime-wrapper", "--socket", f.socket, "--metadata", "docker", "--runtime", runtime, "--"}}
	}
	runtimes := map[string]any{dockerRuntime: wrapper("runc")}
	setup := "mount -t tmpfs tmpfs /run"
	if path, err := exec.LookPath("crun"); err == nil {
		d.crun = path
		runtimes[dockerCrun] = wrapper(path)
		runtimes["crun"] = map[string]any{"path": path}
		if features.HybridCgroups() {
			setup += " && umount /sys/fs/cgroup/unified"
			t.Log("crun cannot run under this machine's hybrid cgroup layout (cgroup v1 with /sys/fs/cgroup/unified): dockerd, its shims and the runtimes run in a mount namespace without that mount")
		}
	}
	conf := map[string]any{"runtimes": runtimes, "deprecated-key-path": filepath.Join(dir, "key.json")}
	raw, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, p := range hostPaths {
		before[p] = pathExists(p)
	}
	logf, err := os.Create(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d.daemon = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", setup+` && exec dockerd "$@"`, "dockerd",
		"--config-file", filepath.Join(dir, "daemon.json"), "--data-root", filepath.Join(dir, "root"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "d.pid"), "-H", "unix://"+d.sock,
		"--iptables=false", "--ip6tables=false", "--bridge=none")
	d.daemon.Stdout, d.daemon.Stderr = logf, logf
	if err := d.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.daemon.Wait() }()
	t.Cleanup(func() { d.stop(t, before) })
	for end := time.Now().Add(podmanLimit); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(readFile(d.logPath), "Daemon has completed initialization") {
			break
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Skipf("dockerd does not come up here (%v):\n%s", err, tail(readFile(d.logPath), 20))
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("dockerd did not complete its initialization in %v\n%s", podmanLimit, tail(readFile(d.logPath), 20))
		}
	}
	rootfs := filepath.Join(dir, "rootfs")
	f.rootfs(rootfs)
	tarball := filepath.Join(dir, "rootfs.tar")
	if out, err := exec.Command("tar", "-C", rootfs, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if out, errb, err := d.output("import", tarball, dockerImage); err != nil {
		t.Fatalf("docker import: %v\n%s%s", err, out, errb)
	}
	return d
}

// stop removes the test's containers, ends dockerd (and so its containerd)
// and waits for it, kills what of the engine is still there (a shim left),
// and checks that nothing is left mounted under the test's directory or in
// the host's /run, /var/lib or /etc/docker (before says what was there
// before the test; what the test made is removed).
func (d *dockerRun) stop(t *testing.T, before map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	if out, err := d.cmd(ctx, "ps", "-aq").Output(); err == nil {
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = d.cmd(ctx, append([]string{"rm", "-f"}, ids...)...).Run()
		}
	}
	_ = d.daemon.Process.Signal(unix.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(podmanLimit): // a safety net, not a timing
		t.Errorf("dockerd did not end in %v after SIGTERM: killed", podmanLimit)
		_ = d.daemon.Process.Kill()
		<-d.done
	}
	reap(t, d.dir)
	for _, m := range mountsUnder(d.f.dir) {
		t.Errorf("left mounted by the test's dockerd: %s (unmounted)", m)
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	for _, p := range hostPaths {
		if !before[p] && pathExists(p) {
			t.Errorf("the test's dockerd made %s on the host (removed)", p)
			_ = os.RemoveAll(p)
		}
	}
}

// pathExists reports whether path names anything (a dangling link too).
func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// mountsUnder lists the mount points of the test's mount namespace under
// dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			ms = append(ms, fields[4])
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return len(b) - len(a) })
	return ms
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cmd is the docker client with args, on the test's dockerd, with a
// configuration directory of the test's.
func (d *dockerRun) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+d.sock, "DOCKER_CONFIG="+filepath.Join(d.dir, "client"))
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs docker with args and returns its stdout and stderr; a
// command that runs past podmanLimit fails the test.
func (d *dockerRun) output(args ...string) (string, string, error) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	cmd := d.cmd(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		d.t.Fatalf("docker %s ran past %v (hung)\n%s%s\nagent:\n%s", args[0], podmanLimit, out.String(), errb.String(), d.f.log())
	}
	return out.String(), errb.String(), err
}

// runArgs are `docker run`'s arguments for a container with the agent's
// profile, no network, and its id written to cidfile, with extra flags
// and then the image and command.
func (d *dockerRun) runArgs(cidfile string, extra ...string) []string {
	return append([]string{"run", "--network", "none", "--security-opt", "seccomp=" + d.profile, "--cidfile", cidfile}, extra...)
}

// id is the container id docker wrote to cidfile.
func (d *dockerRun) id(cidfile string) string {
	d.t.Helper()
	id := strings.TrimSpace(readFile(cidfile))
	if id == "" {
		d.t.Fatalf("docker wrote no container id to %s", cidfile)
	}
	return id
}

// TestFleetDocker drives Docker 20.10 through `paddock agent
// runtime-wrapper`, registered in daemon.json as docs/fleet.md says: a
// --pid=host container's kill -9 of a node process is refused, with
// paddock's message on its stderr and a journal record carrying the
// wrapper's metadata, and it kills its own child; without the wrapper
// (plain runc) Docker, having dropped listenerPath, cannot start the
// container; `docker exec` into a served container is served; under
// --init (tini) the program is safe from its descendants; crun through
// the wrapper is served as runc is, and without it runs the container
// unserved (every trapped call ENOSYS).
func TestFleetDocker(t *testing.T) {
	f := newFleet(t)
	d := newDocker(t, f)
	node := startForeign(t, "sleep", "300")
	nodePid := itoa(node.Pid())
	recordsOf := func(id string) []map[string]any {
		var rs []map[string]any
		for _, r := range f.records() {
			if r["container"] == id {
				rs = append(rs, r)
			}
		}
		return rs
	}
	// served: through the wrapper to runtime (as daemon.json names it),
	// a --pid=host container's kill -9 of the node's process is refused
	// and its own child killed.
	served := func(t *testing.T, runtime string) {
		d.t = t
		cid := filepath.Join(d.dir, runtime+".cid")
		script := "kill -9 " + nodePid + "; echo rc=$?; sleep 300 & c=$!; kill $c; wait $c; echo own=$?"
		out, errb, err := d.output(append(d.runArgs(cid, "--rm", "--runtime", runtime, "--pid=host"), dockerImage, "sh", "-c", script)...)
		if err != nil {
			t.Fatalf("docker run --runtime %s: %v\n%s%s\nagent:\n%s", runtime, err, out, errb, f.log())
		}
		// own=143: wait's status for a child killed by SIGTERM.
		wantLines(t, out+errb, strings.Split(out, "\n"), "rc=1", "own=143")
		if want := "paddock refused kill(SIGKILL) of pid " + nodePid + " (sleep)"; !strings.Contains(errb, want) {
			t.Errorf("docker's stderr lacks paddock's message %q\n%s", want, errb)
		}
		if !node.Alive(t) {
			t.Fatal("the node's process died")
		}
		id := d.id(cid)
		rs := recordsOf(id)
		if len(rs) != 1 || rs[0]["action"] != "signal_denied" || fmt.Sprint(rs[0]["target"]) != nodePid || rs[0]["listener_metadata"] != "docker" {
			t.Errorf("want one signal_denied record of container %s against pid %s with the wrapper's metadata (docker), got %v", id, nodePid, rs)
		}
	}
	t.Run("wrapper", func(t *testing.T) { served(t, dockerRuntime) })
	t.Run("without-wrapper", func(t *testing.T) {
		d.t = t
		cid := filepath.Join(d.dir, "plain.cid")
		out, errb, err := d.output(append(d.runArgs(cid, "--rm", "--runtime", "runc", "--pid=host"), dockerImage, "sh", "-c", "kill -9 "+nodePid+"; echo ran")...)
		t.Logf("docker run --runtime runc (Docker %s), exit %v:\n%s%s", d.version(), err, out, errb)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 {
			t.Errorf("want docker run to fail with exit status 125 (runc refusing NOTIFY rules without a listener), got %v", err)
		}
		if !strings.Contains(errb, "listenerPath is not set") {
			t.Errorf("want runc's \"listenerPath is not set\" on docker's stderr (did Docker start passing listenerPath? then the wrapper is not needed)\n%s", errb)
		}
		if strings.Contains(out, "ran") || !node.Alive(t) {
			t.Errorf("the container ran, or the node's process died\n%s", out)
		}
	})
	t.Run("exec", func(t *testing.T) {
		d.t = t
		cid := filepath.Join(d.dir, "served.cid")
		if out, errb, err := d.output(append(d.runArgs(cid, "-d", "--name", "served", "--runtime", dockerRuntime), dockerImage, "sleep", "600")...); err != nil {
			t.Fatalf("docker run -d: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
		}
		id := d.id(cid)
		out, errb, err := d.output("exec", "served", "sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 1; echo lifeline=$?)
kill -0 1; echo probe=$?`)
		if err != nil {
			t.Fatalf("docker exec: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
		}
		wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
		if !strings.Contains(errb, "paddock refused kill(SIGKILL) of pid 1 (sleep)") {
			t.Errorf("docker exec's stderr lacks paddock's message\n%s", errb)
		}
		if rs := recordsOf(id); len(rs) != 1 || rs[0]["action"] != "signal_denied" || fmt.Sprint(rs[0]["target"]) != "1" {
			t.Errorf("want one signal_denied record of the exec session in container %s against pid 1, got %v", id, rs)
		}
		if out, errb, err := d.output("rm", "-f", "served"); err != nil {
			t.Errorf("docker rm -f: %v\n%s%s", err, out, errb)
		}
	})
	t.Run("init", func(t *testing.T) {
		d.t = t
		cid := filepath.Join(d.dir, "init.cid")
		out, errb, err := d.output(append(d.runArgs(cid, "--rm", "--init", "--runtime", dockerRuntime), dockerImage, "sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo program=$?)
echo survived`)...)
		if err != nil {
			t.Fatalf("docker run --init: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
		}
		wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "program=1", "survived")
		id := d.id(cid)
		if rs := recordsOf(id); len(rs) != 1 || rs[0]["action"] != "signal_denied" || rs[0]["rule"] != "lifeline" {
			t.Errorf("want one lifeline record of container %s (tini's child, the program, refused to its descendant), got %v\n%s", id, rs, errb)
		}
	})
	t.Run("crun", func(t *testing.T) {
		if d.crun == "" {
			t.Skip("needs crun (apt-get install crun)")
		}
		served(t, dockerCrun)
	})
	t.Run("crun-without-wrapper", func(t *testing.T) {
		if d.crun == "" {
			t.Skip("needs crun (apt-get install crun)")
		}
		d.t = t
		// Its own PID namespace: the child it cannot kill dies with it.
		cid := filepath.Join(d.dir, "crun-plain.cid")
		out, errb, err := d.output(append(d.runArgs(cid, "--rm", "--runtime", "crun"), dockerImage, "sh", "-c", "sleep 300 & kill $!; echo own=$?")...)
		t.Logf("docker run --runtime crun, exit %v:\n%s%s", err, out, errb)
		if err != nil {
			t.Fatalf("docker run --runtime crun: %v", err)
		}
		// Unserved: the NOTIFY rules with no listener answer ENOSYS.
		wantLines(t, out+errb, strings.Split(out, "\n"), "own=1")
		if !strings.Contains(errb, "Function not implemented") {
			t.Errorf("want the container's kill to fail with ENOSYS (crun ran it without a listener)\n%s", errb)
		}
		if rs := recordsOf(d.id(cid)); len(rs) != 0 {
			t.Errorf("the agent journaled calls of a container it was never handed: %v", rs)
		}
	})
}

// version is the server version of the test's dockerd.
func (d *dockerRun) version() string {
	out, _, err := d.output("version", "--format", "{{.Server.Version}}")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(out)
}
