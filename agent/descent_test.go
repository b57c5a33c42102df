package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// fakeTask is one process of a fake /proc: its parent, start time and
// /proc/PID/cgroup.
type fakeTask struct {
	pid, ppid int
	start     uint64
	cgroup    string
}

// fakeProcFS lays tasks out like /proc in a temporary directory: a stat
// line in the kernel's format and a cgroup file per process.
func fakeProcFS(t *testing.T, tasks ...fakeTask) procfs.FS {
	t.Helper()
	root := t.TempDir()
	for _, p := range tasks {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Fields 1-22 as the kernel writes them (22: starttime), the
		// rest zeros, 52 in all.
		f := []string{strconv.Itoa(p.pid), fmt.Sprintf("(p%d)", p.pid), "S", strconv.Itoa(p.ppid), strconv.Itoa(p.pid),
			strconv.Itoa(p.pid), "0", "-1", "4194560", "0", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1", "0",
			strconv.FormatUint(p.start, 10)}
		for len(f) < 52 {
			f = append(f, "0")
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(strings.Join(f, " ")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(p.cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs.FS{Root: root}
}

// TestDescent: a container that shares the node's PID namespace and whose
// cgroup holds other processes (rootless podman --pid host on cgroup v1:
// conmon, the user's shell and the user's other processes are in it) is
// told so (cgroupShared), and then owns its first process's descendants
// only: not the user's process in its cgroup, not conmon, not a process
// reparented out of its tree, and not one whose parent pid names a process
// younger than itself (a parent's pid reused). A container alone in its
// cgroup is not.
func TestDescent(t *testing.T) {
	const user, own = "9:memory:/user\n", "9:memory:/container\n"
	tasks := []fakeTask{
		{pid: 1, start: 1, cgroup: "9:memory:/\n"},
		{pid: 100, ppid: 1, start: 10, cgroup: user},   // conmon
		{pid: 101, ppid: 100, start: 20, cgroup: user}, // the container's first process
		{pid: 102, ppid: 101, start: 30, cgroup: user}, // its child
		{pid: 103, ppid: 102, start: 40, cgroup: user}, // its grandchild
		{pid: 200, ppid: 1, start: 15, cgroup: user},   // the user's sleep
		{pid: 300, ppid: 100, start: 35, cgroup: user}, // an orphan of the container, now conmon's
		{pid: 401, ppid: 101, start: 5, cgroup: user},  // older than its "parent": 101 is a reused pid
	}
	c := &container{fs: fakeProcFS(t, tasks...), id: "c", shared: true, cgroup: user,
		lifelines: map[int]uint64{101: 20}, hosts: map[int]int{}}
	shared, err := c.cgroupShared()
	if err != nil || !shared {
		t.Fatalf("cgroupShared = %v, %v: want true (conmon and the user's sleep are in the container's cgroup)", shared, err)
	}
	c.byDescent = true
	for _, row := range []struct {
		pid  int
		want bool
	}{
		{101, true}, {102, true}, {103, true},
		{200, false}, {100, false}, {300, false}, {401, false}, {1, false}, {999, false},
	} {
		if got := c.descends(row.pid); got != row.want {
			t.Errorf("descends(%d) = %v, want %v", row.pid, got, row.want)
		}
		if got := c.inGroup(row.pid); got != row.want {
			t.Errorf("inGroup(%d) = %v, want %v", row.pid, got, row.want)
		}
	}
	// The lifeline's start time must match: a reused pid 101 is not it.
	c.lifelines = map[int]uint64{101: 21}
	if c.descends(102) {
		t.Error("descends(102) with the lifeline's start time wrong: want false")
	}

	// A container alone in its cgroup (root runc's) keeps the cgroup rule.
	alone := []fakeTask{
		{pid: 1, start: 1, cgroup: "9:memory:/\n"},
		{pid: 100, ppid: 1, start: 10, cgroup: user},
		{pid: 101, ppid: 100, start: 20, cgroup: own},
		{pid: 102, ppid: 101, start: 30, cgroup: own},
		{pid: 200, ppid: 1, start: 15, cgroup: user},
	}
	c = &container{fs: fakeProcFS(t, alone...), id: "c", shared: true, cgroup: own,
		lifelines: map[int]uint64{101: 20}, hosts: map[int]int{}}
	if shared, err := c.cgroupShared(); err != nil || shared {
		t.Errorf("cgroupShared of a container alone in its cgroup = %v, %v: want false", shared, err)
	}
}
