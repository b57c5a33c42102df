package callerpath

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sameFile reports whether fd is the object at path p (as this test sees it).
func sameFile(t *testing.T, fd int, p string) bool {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(p, &b); err != nil {
		t.Fatal(err)
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// TestResolve: paths resolved as a child process sees them (its working
// directory, its procfs "self"), against the real filesystem.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a", "x"), nil, 0o644))
	must(os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	must(os.Symlink("l2", filepath.Join(dir, "l1")))
	must(os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "l2")))
	must(os.Symlink("/proc/self/fd/1", filepath.Join(dir, "out")))
	must(os.Symlink("/proc/self", filepath.Join(dir, "me")))
	out, err := os.Create(filepath.Join(dir, "stdout"))
	must(err)
	defer out.Close()
	child := exec.Command("sleep", "300")
	child.Dir = filepath.Join(dir, "a", "b")
	child.Stdout = out
	must(child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	v, err := Open("/proc", pid, pid)
	must(err)
	defer v.Close()

	for _, tc := range []struct {
		name, path string
		follow     bool
		want       string // the object, as the test sees it
		missing    string // the directory of a missing last component
		err        error
		proc       string // ProcDir's path below /proc/PID
	}{
		{name: "absolute", path: filepath.Join(dir, "file"), follow: true, want: filepath.Join(dir, "file")},
		{name: "relative", path: "../x", follow: true, want: filepath.Join(dir, "a", "x")},
		{name: "relative above the start", path: "../../file", follow: true, want: filepath.Join(dir, "file")},
		{name: "symlink chain", path: filepath.Join(dir, "l1"), follow: true, want: filepath.Join(dir, "file")},
		{name: "symlink not followed", path: filepath.Join(dir, "l1"), follow: false, want: filepath.Join(dir, "l1")},
		{name: "dot dot at the root", path: "/../../" + dir[1:] + "/file", follow: true, want: filepath.Join(dir, "file")},
		{name: "missing", path: "../none", follow: true, missing: filepath.Join(dir, "a")},
		{name: "missing directory", path: "../none/x", follow: true, err: unix.ENOENT},
		{name: "trailing slash on a file", path: "../x/", follow: true, err: unix.ENOTDIR},
		{name: "procfs self is the caller", path: "/proc/self/status", follow: true, want: "/proc/" + strconv.Itoa(pid) + "/status", proc: "status"},
		{name: "a symlink to self", path: filepath.Join(dir, "me", "comm"), follow: true, want: "/proc/" + strconv.Itoa(pid) + "/comm", proc: "comm"},
		{name: "thread-self", path: "/proc/thread-self/comm", follow: true, want: "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/comm", proc: "task/" + strconv.Itoa(pid) + "/comm"},
		{name: "self's fd magic link is the caller's", path: filepath.Join(dir, "out"), follow: true, want: filepath.Join(dir, "stdout")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := v.Resolve(unix.AT_FDCWD, tc.path, tc.follow)
			defer r.Close()
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q): %v; want %v", tc.path, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if tc.missing != "" {
				if !r.Missing || r.Fd >= 0 || !sameFile(t, r.Dir, tc.missing) {
					t.Fatalf("Resolve(%q): %+v; want missing in %s", tc.path, r, tc.missing)
				}
				return
			}
			if r.Missing || r.Fd < 0 || !sameFile(t, r.Fd, tc.want) {
				t.Fatalf("Resolve(%q): %+v; want %s", tc.path, r, tc.want)
			}
			if r.FSType != 0 || tc.name == "absolute" {
				// Read by the one-lookup path (a plain file's): it must be
				// the file's own filesystem.
				var fs unix.Statfs_t
				if err := unix.Statfs(tc.want, &fs); err != nil || int64(fs.Type) != r.FSType {
					t.Errorf("Resolve(%q).FSType = %#x; want %#x (%v)", tc.path, r.FSType, fs.Type, err)
				}
			}
			if tc.proc != "" {
				n, below, ok, err := ProcDir(r.Dir, r.Name)
				if err != nil || !ok || n != pid || below != tc.proc {
					t.Errorf("ProcDir: %d %q %v %v; want %d %q", n, below, ok, err, pid, tc.proc)
				}
			}
		})
	}
	if _, err := v.Resolve(9999, "x", true); !errors.Is(err, unix.EBADF) {
		t.Errorf("a dirfd the caller does not have: %v; want EBADF", err)
	}
	if n, _, ok, err := ProcDir(v.root, "etc"); ok || err != nil {
		t.Errorf("ProcDir of a directory not on procfs: %d %v %v", n, ok, err)
	}
}

// TestSelfInNestedProc: in a /proc mounted for a nested PID namespace
// (unshare --pid --mount-proc), procfs's self names the caller by its
// number there, not paddock's.
func TestSelfInNestedProc(t *testing.T) {
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skipf("needs PID and mount namespaces (unshare --pid --fork --mount-proc, as root): %v", err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", "exec sleep 300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The sleep: unshare's child, pid 1 of the namespace.
	var pid int
	for pid == 0 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			pid, _ = strconv.Atoi(f[0])
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err != nil || strings.TrimSpace(string(b)) != "sleep" {
			pid = 0
		}
		runtime.Gosched()
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Open("/proc", pid, pid)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	v.NumbersBy(func() (int, []int, []int, uint64) { return pid, []int{pid, 1}, []int{pid, 1}, StartTime(stat) })
	r, err := v.Resolve(unix.AT_FDCWD, "/proc/self/stat", true)
	if err != nil {
		t.Fatalf("Resolve(/proc/self/stat): %v", err)
	}
	defer r.Close()
	var st unix.Stat_t
	if err := unix.Fstat(r.Dir, &st); err != nil {
		t.Fatal(err)
	}
	n, _, ok, err := ProcDir(r.Dir, r.Name)
	if err != nil || !ok || n != 1 {
		t.Errorf("self in the nested /proc is /proc/%d (ok %v, %v); want /proc/1", n, ok, err)
	}
}

// TestOnlyCached: in a view made OnlyCached, an existing file and a missing
// name in an existing directory resolve as they would otherwise, with the
// filesystem the gate told; a symlink, a directory descriptor, O_NOFOLLOW
// and an object the gate does not vouch for fail with ErrWouldWait.
func TestOnlyCached(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// Looked up once, so that the dentry cache holds every name below.
	for _, p := range []string{file, filepath.Join(dir, "none")} {
		_, _ = os.Stat(p)
	}
	v, err := Open("/proc", os.Getpid(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	vouch := true
	v.OnlyCached(func(fd int) (int64, bool) {
		var fs unix.Statfs_t
		if err := unix.Fstatfs(fd, &fs); err != nil {
			t.Fatal(err)
		}
		return int64(fs.Type), vouch
	})
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	r, err := v.Resolve(unix.AT_FDCWD, file, true)
	if err != nil || r.Fd < 0 || !sameFile(t, r.Fd, file) || r.FSType != int64(fs.Type) {
		t.Errorf("Resolve(%s): %+v %v; want the file, on %#x", file, r, err, fs.Type)
	}
	r.Close()
	r, err = v.Resolve(unix.AT_FDCWD, filepath.Join(dir, "none"), true)
	if err != nil || !r.Missing || !sameFile(t, r.Dir, dir) {
		t.Errorf("Resolve of a missing name: %+v %v; want missing in %s", r, err, dir)
	}
	r.Close()
	for _, tc := range []struct {
		name   string
		dirfd  int
		path   string
		follow bool
	}{
		{"a symlink", unix.AT_FDCWD, filepath.Join(dir, "link"), true},
		{"O_NOFOLLOW", unix.AT_FDCWD, file, false},
		{"a directory descriptor", 0, "file", true},
		{"a trailing slash", unix.AT_FDCWD, dir + "/", true},
	} {
		if r, err := v.Resolve(tc.dirfd, tc.path, tc.follow); !errors.Is(err, ErrWouldWait) {
			r.Close()
			t.Errorf("%s: Resolve(%d, %s): %v; want ErrWouldWait", tc.name, tc.dirfd, tc.path, err)
		}
	}
	vouch = false
	if r, err := v.Resolve(unix.AT_FDCWD, file, true); !errors.Is(err, ErrWouldWait) {
		r.Close()
		t.Errorf("a file the gate does not vouch for: %v; want ErrWouldWait", err)
	}
}
