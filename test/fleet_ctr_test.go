package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/features"
)

// Fleet mode through containerd and ctr (Debian's containerd 1.6, its
// runc shim), with runc and with crun (--runc-binary). containerd keeps its
// shims' sockets, fifos and runc state under /run/containerd whatever its
// configuration says, so the test's containerd runs in a mount namespace
// of its own with a tmpfs on /run (and, for crun under the hybrid cgroup
// layout, without /sys/fs/cgroup/unified); its root, state and sockets lie
// in the test's directory.

// ctrRun is one test's containerd and ctr, with one OCI runtime.
type ctrRun struct {
	f       *fleet
	t       *testing.T
	runtime string
	dir     string
	sock    string
	profile string
	daemon  *exec.Cmd
	done    chan error
}

// newCtr skips without containerd, ctr, the runc shim or the runtime, and
// starts the test's containerd.
func newCtr(t *testing.T, f *fleet, runtime string) *ctrRun {
	t.Helper()
	for _, tool := range []string{"containerd", "ctr", "containerd-shim-runc-v2", runtime} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install containerd crun): %v", tool, err)
		}
	}
	dir := filepath.Join(f.dir, "cd-"+runtime)
	if err := os.MkdirAll(filepath.Join(dir, "fifo"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := &ctrRun{f: f, t: t, runtime: runtime, dir: dir, sock: filepath.Join(dir, "c.sock"), profile: filepath.Join(dir, "profile.json"), done: make(chan error, 1)}
	writeProfile(t, f.socket, "fleet-test", c.profile)
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = %q
[ttrpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.sock, filepath.Join(dir, "t.sock"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := "mount -t tmpfs tmpfs /run"
	if runtime == "crun" && features.HybridCgroups() {
		setup += " && umount /sys/fs/cgroup/unified"
		t.Log("crun cannot run under this machine's hybrid cgroup layout (cgroup v1 with /sys/fs/cgroup/unified): containerd, its shims and crun run in a mount namespace without that mount")
	}
	logPath := filepath.Join(dir, "containerd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c.daemon = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", setup+` && exec containerd --config "$1"`, "containerd", filepath.Join(dir, "config.toml"))
	c.daemon.Stdout, c.daemon.Stderr = logf, logf
	if err := c.daemon.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.daemon.Wait() }()
	t.Cleanup(func() { c.stop(t) })
	for end := time.Now().Add(podmanLimit); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(readFile(logPath), "containerd successfully booted") {
			break
		}
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("containerd ended: %v\n%s", err, readFile(logPath))
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("containerd did not start\n%s", readFile(logPath))
		}
	}
	return c
}

// stop removes the test's containers, ends containerd, and kills a shim
// or runtime process it left (one that a hung trapped call keeps alive);
// t is the test that started it.
func (c *ctrRun) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	if out, err := c.cmd(ctx, "containers", "list", "-q").Output(); err == nil {
		for _, id := range strings.Fields(string(out)) {
			_ = c.cmd(ctx, "tasks", "kill", "-s", "KILL", id).Run()
			_ = c.cmd(ctx, "tasks", "delete", "-f", id).Run()
			_ = c.cmd(ctx, "containers", "delete", id).Run()
		}
	}
	_ = c.daemon.Process.Signal(os.Interrupt)
	<-c.done
	reap(t, c.dir)
}

// cmd is ctr with args, on the test's containerd and namespace.
func (c *ctrRun) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.sock, "--namespace", "paddock-test"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs ctr with args and returns its stdout and stderr; a command
// that runs past podmanLimit fails the test.
func (c *ctrRun) output(args ...string) (string, string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	cmd := c.cmd(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("ctr %s ran past %v (hung)\n%s%s\nagent:\n%s", args[0], podmanLimit, out.String(), errb.String(), c.f.log())
	}
	return out.String(), errb.String(), err
}

// runArgs are `ctr run`'s arguments for container id running script, with
// extra flags: the agent's profile, a root file system of its own.
func (c *ctrRun) runArgs(id, script string, extra ...string) []string {
	rootfs := filepath.Join(c.dir, "rootfs-"+id)
	c.f.rootfs(rootfs)
	args := []string{"run", "--fifo-dir", filepath.Join(c.dir, "fifo"), "--seccomp", "--seccomp-profile", c.profile}
	if c.runtime != "runc" {
		path, _ := exec.LookPath(c.runtime)
		args = append(args, "--runc-binary", path)
	}
	return append(append(args, extra...), "--rootfs", rootfs, id, "/bin/sh", "-c", script)
}

// TestFleetCtr drives containerd's ctr with runc and with crun: a
// container's own child signalled and its first process safe from a
// descendant, with a journal record; a `ctr task exec` session (crun sends
// its handoff with pid 0); a 40 KB annotation.
func TestFleetCtr(t *testing.T) {
	f := newFleet(t)
	for _, runtime := range []string{"runc", "crun"} {
		t.Run(runtime, func(t *testing.T) {
			c := newCtr(t, f, runtime)
			records := func(id, action string) int {
				n := 0
				for _, r := range f.records() {
					if r["container"] == id && r["action"] == action {
						n++
					}
				}
				return n
			}
			t.Run("create", func(t *testing.T) {
				c.t = t
				id := runtime + "-create"
				out, errb, err := c.output(c.runArgs(id, fleetScript, "--rm")...)
				if err != nil && !strings.Contains(out, "=") {
					t.Fatalf("ctr run: %v\n%s%s", err, out, errb)
				}
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
				if n := records(id, "signal_denied"); n != 1 {
					t.Errorf("want one signal_denied record of the container, got %d\n%s", n, readFile(f.journal))
				}
			})
			t.Run("exec", func(t *testing.T) {
				c.t = t
				id := runtime + "-exec"
				if out, errb, err := c.output(c.runArgs(id, "sleep 600", "-d")...); err != nil {
					t.Fatalf("ctr run -d: %v\n%s%s", err, out, errb)
				}
				out, errb, err := c.output("task", "exec", "--fifo-dir", filepath.Join(c.dir, "fifo"), "--exec-id", "e1", id, "/bin/sh", "-c", `sleep 100 & kill $!; echo own=$?
(kill -9 $$; echo exec-lifeline=$?)
kill -0 1; echo probe=$?`)
				if err != nil {
					t.Fatalf("ctr task exec: %v\n%s%s\nagent:\n%s", err, out, errb, f.log())
				}
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "exec-lifeline=1", "probe=0")
				if n := records(id, "signal_denied"); n != 1 {
					t.Errorf("want one signal_denied record of the exec session, got %d\n%s", n, readFile(f.journal))
				}
			})
			t.Run("annotation", func(t *testing.T) {
				c.t = t
				id := runtime + "-annotated"
				out, errb, err := c.output(c.runArgs(id, fleetScript, "--rm", "--annotation", "example.com/large="+strings.Repeat("a", 40000))...)
				if err != nil && !strings.Contains(out, "=") {
					t.Fatalf("ctr run: %v\n%s%s", err, out, errb)
				}
				wantLines(t, out+errb, strings.Split(out, "\n"), "own=0", "lifeline=1", "probe=0")
			})
		})
	}
}
