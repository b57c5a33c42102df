package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/callerpath"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/policy"
)

// needMountIDs skips without the kernel's unique mount ids and statmount(2)
// (Linux 6.8), without which the loop vouches for no filesystem.
func needMountIDs(t *testing.T) {
	t.Helper()
	fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	m, ok, err := sys.MemoOf(fd)
	if err != nil || !ok {
		t.Skipf("needs statx's STATX_MNT_ID_UNIQUE (Linux 6.8): %v", err)
	}
	if _, err := sys.MountMagic(m.Mount, 0); err != nil {
		t.Skipf("needs statmount(2) (Linux 6.8): %v", err)
	}
}

// TestMountMemoLocal: the loop vouches for a regular file, a directory and
// /dev/null on a disk's or memory's filesystem, and for nothing on procfs,
// for no FIFO and no other device; what it found is remembered by mount.
func TestMountMemoLocal(t *testing.T) {
	needMountIDs(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	fifo := filepath.Join(dir, "p")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	onDisk := localMagics[int64(fs.Type)] // the temporary directory's filesystem (an overlay is not vouched for)
	m := make(mountMemo)
	for _, tc := range []struct {
		path string
		want bool
	}{
		{file, onDisk}, {dir, onDisk}, {fifo, false},
		{"/dev/null", localMagicOf(t, "/dev/null")}, {"/dev/zero", false},
		{"/proc/self/status", false}, {"/proc/self", false},
	} {
		fd, err := unix.Open(tc.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		magic, ok := m.local(fd, "/proc", os.Getpid())
		unix.Close(fd)
		if ok != tc.want {
			t.Errorf("local(%s) = %#x, %v; want %v", tc.path, magic, ok, tc.want)
		}
	}
	if onDisk && len(m) == 0 {
		t.Errorf("no mount remembered")
	}
}

// localMagicOf reports whether p's filesystem is one of localMagics.
func localMagicOf(t *testing.T, p string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil {
		t.Fatal(err)
	}
	return localMagics[int64(fs.Type)]
}

// TestOpenOnBehalfMadeMeanwhile: a name the wall resolved as missing that
// exists by the time paddock makes it (here a symlink to a file the
// decision never saw) is not opened: errMadeMeanwhile, the call decided
// again. The file behind the link stays untouched.
func TestOpenOnBehalfMadeMeanwhile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := callerpath.Open("/proc", os.Getpid(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	res, err := v.Resolve(unix.AT_FDCWD, filepath.Join(dir, "new"), true)
	if err != nil || !res.Missing {
		t.Fatalf("Resolve: %+v %v; want missing", res, err)
	}
	defer res.Close()
	if err := os.Symlink(secret, filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	w, _, _ := pinWorld(t)
	c := w.begin(policy.Request{Tid: os.Getpid()}, -1, 0)
	c.wall = wallCall{flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC, mode: 0o644}
	fd, err := c.openOnBehalf(&res)
	if err == nil {
		unix.Close(fd)
	}
	if !errors.Is(err, errMadeMeanwhile) {
		t.Errorf("openOnBehalf of a name made meanwhile: %v; want errMadeMeanwhile", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "keep" {
		t.Errorf("the file behind the link holds %q", b)
	}
}
