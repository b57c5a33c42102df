package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
)

// containerScript is what the wall's rootless containers run: output, and
// a file written and read back inside the container.
const containerScript = "echo in-container; echo x > /tmp/f && cat /tmp/f"

// TestWallRootlessContainer: a rootless container runs in a session of
// `paddock run --backend seccomp`, the default wall on (its unix connects
// and opens for writing trapped and carried out by paddock), as an
// unprivileged user: `podman run --rm --rootfs DIR` of a static busybox
// prints, writes a file in the container and reads it back, paddock exits
// 0, says "no refusals", and its journal holds nothing but the session's
// start and end. Under runc, and crun where it can run (rootlessEnv).
//
// single: a user without subordinate ranges (nobody). podman maps only
// the user's uid ("rootless single mapping") and writes the maps of its
// user namespace itself: its own child's, allowed and run as made
// (docs/deputies.md). Its pause process, made in the session, is the
// agent's and ended with it.
//
// ranges: a user with subordinate ranges (rootlessUser), whose podman's
// pause process already runs, started outside the session (as on any
// machine where the user ran podman before): podman joins its user
// namespace. That needs --keep-caps (no Landlock domain): the kernel's
// wall refuses podman the open of the pause process's /proc/PID/ns/user
// (a ptrace-class access to a process outside the domain), and without
// the pause process podman runs newuidmap, whose setuid bit does nothing
// under no_new_privs (docs/limits.md, "Rootless containers"). The pause
// process, the user's, lives on after the session.
//
// Checked by building paddock from before the two policy fixes it came
// with: every run journaled libseccomp's probes of the listener flag as
// shadow_listener refusals (7 under runc, 4 under crun), and conmon's
// cgroup.event_control write as group_not_owned on this cgroup v1 host.
func TestWallRootlessContainer(t *testing.T) {
	featuretest.Require(t, features.IDUserNotif)
	for _, runtime := range []string{"runc", "crun"} {
		t.Run(runtime, func(t *testing.T) {
			t.Run("single", func(t *testing.T) {
				u, err := user.LookupId("65534")
				if err != nil {
					t.Skipf("needs the user nobody (65534): %v", err)
				}
				if hasSubRanges(u) {
					t.Skipf("needs a user without subordinate ranges: %s (65534) has ranges in /etc/subuid and /etc/subgid", u.Username)
				}
				e := newRootlessEnv(t, runtime, 65534, 65534)
				t.Cleanup(func() { reap(t, e.dir); e.endPause() })
				e.wallContainer(t)
			})
			t.Run("ranges", func(t *testing.T) {
				for _, tool := range []string{"newuidmap", "newgidmap"} {
					if _, err := exec.LookPath(tool); err != nil {
						t.Skipf("needs %s (apt-get install uidmap): %v", tool, err)
					}
				}
				if os.Getuid() != 0 {
					t.Skip("needs root: to run podman and the processes it is tested against as an unprivileged user")
				}
				u := rootlessUser(t)
				uid, _ := strconv.Atoi(u.Uid)
				gid, _ := strconv.Atoi(u.Gid)
				e := newRootlessEnv(t, runtime, uid, gid)
				t.Cleanup(func() { reap(t, e.dir); e.endPause() })
				// The user's pause process, outside the session.
				ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
				defer cancel()
				if out, err := e.podman(ctx, "unshare", "true").CombinedOutput(); err != nil {
					t.Fatalf("podman unshare true as uid %d: %v\n%s", uid, err, out)
				}
				pause := e.pause()
				if pause == 0 {
					t.Fatalf("podman unshare left no pause process (%s)", filepath.Join(e.dir, "tmp", "pause.pid"))
				}
				e.wallContainer(t, "--keep-caps")
				if !pidAlive(pause) || e.pause() != pause {
					t.Errorf("the user's pause process %d, started outside the session, is gone (pause.pid names %d)", pause, e.pause())
				}
			})
		})
	}
}

// wallContainer runs containerScript in a rootless container of e's
// user's podman, under the user's `paddock run --backend seccomp` with
// flags, and checks that it ran and nothing was refused.
func (e *rootlessEnv) wallContainer(t *testing.T, flags ...string) {
	t.Helper()
	rootfs := e.rootfs("wall")
	tmp := filepath.Join(rootfs, "tmp")
	if err := os.Mkdir(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Lchown(tmp, e.uid, e.gid); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(e.dir, "wall.jsonl")
	args := append([]string{"run", "--backend", "seccomp", "--journal", journal}, flags...)
	args = append(append(args, "--", "podman"), e.podmanArgs("run", "--rm", "--network", "none", "--rootfs", rootfs, "sh", "-c", containerScript)...)
	ctx, cancel := context.WithTimeout(context.Background(), podmanLimit)
	defer cancel()
	cmd := e.command(ctx, bins.paddock, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("paddock run -- podman run ran past %v (hung)\nstdout:\n%s\nstderr:\n%s", podmanLimit, out.String(), errb.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("paddock run -- podman run as uid %d: %v", e.uid, err)
	}
	r := result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode(), journal: readFile(journal)}
	if r.code != 0 {
		t.Errorf("paddock run -- podman run as uid %d exited %d; want 0\n%s", e.uid, r.code, r)
	}
	wantLines(t, r.String(), strings.Split(r.stdout, "\n"), "in-container", "x")
	if !strings.Contains(r.stderr, "no refusals") {
		t.Errorf("paddock's summary does not say \"no refusals\"\n%s", r)
	}
	var ended bool
	var others []string
	for _, rec := range r.records(t) {
		switch rec["action"] {
		case "session_started":
		case "session_ended":
			ended = true
			if rec["refusals"] != float64(0) {
				t.Errorf("the session ended with %v refusals; want 0", rec["refusals"])
			}
		default:
			others = append(others, fmt.Sprint(rec["action"], " ", rec["rule"]))
		}
	}
	if !ended {
		t.Error("the journal has no session_ended record")
	}
	if len(others) > 0 {
		t.Errorf("the journal records %s: want nothing but the session's start and end", strings.Join(others, ", "))
	}
	if t.Failed() {
		t.Logf("journal:\n%s\n%s", r.journal, r)
	}
}
