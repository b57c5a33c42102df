package test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/sys"
)

// requireStrictWall skips unless this kernel has the Landlock a strict
// wall needs (ABI 6, as for the wall without it).
func requireStrictWall(t *testing.T) {
	t.Helper()
	if abi, err := sys.LandlockABI(); err != nil || abi < 6 {
		t.Skipf("needs Landlock ABI 6 (Linux 6.12+, enabled in lsm=): ABI %d, %v", abi, err)
	}
}

// strictWallSealsProcFiles: with --strict-wall, an agent running as the
// same unprivileged user as a foreign process cannot raise that process's
// oom_score_adj (which would make it the OOM killer's first victim): the
// kernel refuses the open. Without the flag the same write goes through,
// the class docs/threat-model.md leaves open by default. What the strict
// wall costs is checked too: the agent's own /proc files are closed to it
// as well, and mount(2) is refused, while ordinary writes, truncation and
// a move across directories still work.
func strictWallSealsProcFiles(t *testing.T, b backend) {
	b.require(t)
	requireStrictWall(t)
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	adj := "/proc/" + fp + "/oom_score_adj"
	script := `echo 900 > ` + adj + ` 2>/dev/null && echo foreign-oom=written || echo foreign-oom=refused
echo 900 > /proc/self/oom_score_adj 2>/dev/null && echo own-oom=written || echo own-oom=refused
mkdir -p "$HOME/a" "$HOME/b" && echo data > "$HOME/a/f" && : > "$HOME/a/f" && echo data > "$HOME/a/f" && mv "$HOME/a/f" "$HOME/b/f" && echo files=ok
unshare -rm true 2>/dev/null && echo mount=ok || echo mount=refused`
	// Decisions forced to allow (a test build): the kernel's wall alone.
	out, lines := b.nobodyRun(t, bins.forceAllow, dir, script, "--strict-wall", "--log-level", "debug")
	wantLines(t, out, lines, "foreign-oom=refused", "own-oom=refused", "files=ok", "mount=refused")
	if got := readTrim(t, adj); got != "0" {
		t.Errorf("the foreign process's oom_score_adj is %s after the strict run, want 0\n%s", got, out)
	}
	if !strings.Contains(out, `kernel_wall="landlock, strict:`) {
		t.Errorf("the start's details do not say the strict wall is up\n%s", out)
	}
	// The profile's strict_wall = true does what the flag does.
	if err := os.MkdirAll(filepath.Join(dir, "paddock"), 0o755); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "paddock", "profile.toml")
	if err := os.WriteFile(prof, []byte("strict_wall = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, lines = b.nobodyRun(t, bins.paddock, dir, script)
	wantLines(t, out, lines, "foreign-oom=refused", "files=ok")
	if err := os.Remove(prof); err != nil {
		t.Fatal(err)
	}
	// With neither wall (decisions forced to allow, --keep-caps: no
	// Landlock domain), the write goes through (set back to 0 by root, who
	// alone may lower it): the test shows the kernel's wall.
	out, lines = b.nobodyRun(t, bins.forceAllow, dir, script, "--keep-caps")
	wantLines(t, out, lines, "foreign-oom=written", "files=ok")
	if got := readTrim(t, adj); got != "900" {
		t.Errorf("without --strict-wall the foreign oom_score_adj is %s, want 900 (the open class)\n%s", got, out)
	}
	if err := os.WriteFile(adj, []byte("0"), 0); err != nil {
		t.Fatalf("reset %s: %v", adj, err)
	}
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}

// strictWallSealsCgroups: with --strict-wall, an agent cannot freeze or
// kill a foreign process through a cgroup delegated to their common user
// (a systemd user session delegates the user's whole subtree this way):
// cgroup.freeze and cgroup.kill of the foreign process's cgroup are refused
// by the kernel. Without the flag the agent freezes it and then kills it.
// The cgroup is one this test makes on the cgroup2 hierarchy and removes.
func strictWallSealsCgroups(t *testing.T, b backend) {
	b.require(t)
	requireStrictWall(t)
	dir := nobodyDir(t)
	mnt := cgroup2Mount(t)
	cg, err := os.MkdirTemp(mnt, "paddock-test-")
	if err != nil {
		t.Skipf("needs a cgroup2 hierarchy root may write: %v", err)
	}
	victim := filepath.Join(cg, "victim")
	if err := os.Chmod(cg, 0o755); err != nil {
		os.Remove(cg)
		t.Fatal(err)
	}
	if err := os.Mkdir(victim, 0o755); err != nil {
		os.Remove(cg)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After the foreign process's own cleanup has reaped it.
		for i := 0; i < 200 && os.Remove(victim) != nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	// Delegated to nobody, as systemd delegates a user's subtree.
	for _, p := range []string{victim, filepath.Join(victim, "cgroup.procs"), filepath.Join(victim, "cgroup.kill"), filepath.Join(victim, "cgroup.freeze")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Skipf("needs cgroup.kill and cgroup.freeze (Linux 5.14+): %v", err)
		}
	}
	f := nobodyStart(t, "sleep", "300")
	if err := os.WriteFile(filepath.Join(victim, "cgroup.procs"), []byte(itoa(f.Pid())), 0); err != nil {
		t.Fatalf("move the foreign process into %s: %v", victim, err)
	}
	script := `echo 1 > ` + victim + `/cgroup.freeze 2>/dev/null && echo freeze=written || echo freeze=refused
echo 1 > ` + victim + `/cgroup.kill 2>/dev/null && echo kill=written || echo kill=refused`
	out, lines := b.nobodyRun(t, bins.forceAllow, dir, script, "--strict-wall")
	wantLines(t, out, lines, "freeze=refused", "kill=refused")
	if !f.Alive(t) {
		t.Fatalf("the foreign process died under the strict wall\n%s", out)
	}
	if frozen := cgroupEvent(t, victim, "frozen"); frozen != "0" {
		t.Errorf("the foreign process's cgroup is frozen (%s) after the strict run\n%s", frozen, out)
	}
	// Without --strict-wall and with --keep-caps (no Landlock domain) on a
	// build whose decisions are forced to allow, neither wall stands:
	// frozen, then killed. The test shows the kernel's wall.
	out, lines = b.nobodyRun(t, bins.forceAllow, dir, script, "--keep-caps")
	wantLines(t, out, lines, "freeze=written", "kill=written")
	select {
	case <-f.Exited():
	case <-time.After(10 * time.Second):
		t.Errorf("with no wall the foreign process survived cgroup.kill: the test shows nothing\n%s", out)
	}
}

// cgroup2Mount is where the cgroup2 hierarchy is mounted, or skips.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	fh, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("needs /proc/self/mountinfo: %v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	t.Skip("needs a cgroup2 hierarchy: none is mounted")
	return ""
}

// cgroupEvent is the value of key in cgroup's cgroup.events.
func cgroupEvent(t *testing.T, cgroup, key string) string {
	t.Helper()
	for _, line := range strings.Split(readTrim(t, filepath.Join(cgroup, "cgroup.events")), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return v
		}
	}
	t.Fatalf("%s/cgroup.events has no %s", cgroup, key)
	return ""
}

// readTrim is a file's contents without surrounding space.
func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
