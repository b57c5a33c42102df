package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The strict wall grants every entry on the way to a sealed mount but the
// sealed mounts and symbolic links, and in a procfs what is not a process
// nor sysrq-trigger.
func TestStrictGrants(t *testing.T) {
	root := t.TempDir()
	dirs := []string{"a", "proc/1", "proc/23", "proc/sys", "sys/class", "sys/fs/cgroup/x", "sys/fs/ext4"}
	files := []string{"f", "proc/sysrq-trigger", "proc/meminfo", "proc/23/oom_score_adj", "sys/fs/cgroup/x/cgroup.kill"}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"l": "a", "proc/self": "23"} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	sealed := map[string]bool{filepath.Join(root, "proc"): true, filepath.Join(root, "sys/fs/cgroup"): false}
	grants, err := strictGrants(root, sealed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range grants {
		rel, _ := filepath.Rel(root, g.path)
		if g.dir {
			rel += "/"
		}
		got = append(got, rel)
	}
	want := []string{"a/", "f", "proc/meminfo", "proc/sys/", "sys/class/", "sys/fs/ext4/"}
	if !slices.Equal(got, want) {
		t.Errorf("strictGrants = %q, want %q", got, want)
	}
	if _, err := strictGrants(filepath.Join(root, "gone"), sealed); err == nil {
		t.Error("strictGrants of a missing root: no error")
	}
}

// sealedMounts finds procfs and cgroupfs (v1 and v2) in a mountinfo file,
// by their mount point (escapes undone), under root only.
func TestSealedMounts(t *testing.T) {
	info := `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 1 0:22 / /sys rw,nosuid shared:2 - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 1 0:40 / /srv/my\040proc rw - proc proc rw
51 1 0:41 / /run/x rw shared:3 master:1 - cgroup2 none rw
garbage line
`
	path := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root string
		want map[string]bool
	}{
		{"/", map[string]bool{"/proc": true, "/sys/fs/cgroup/cpu": false, "/sys/fs/cgroup/unified": false, "/srv/my proc": true, "/run/x": false}},
		{"/sys", map[string]bool{"/sys/fs/cgroup/cpu": false, "/sys/fs/cgroup/unified": false}},
	} {
		got, err := sealedMounts(path, tc.root)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("root %s: sealedMounts = %v, want %v", tc.root, got, tc.want)
		}
		for p, proc := range tc.want {
			if g, ok := got[p]; !ok || g != proc {
				t.Errorf("root %s: %s: got %v (listed %v), want %v", tc.root, p, g, ok, proc)
			}
		}
	}
	if _, err := sealedMounts(filepath.Join(t.TempDir(), "none"), "/"); err == nil {
		t.Error("sealedMounts of a missing file: no error")
	}
}
