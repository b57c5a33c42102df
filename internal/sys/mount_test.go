package sys_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// TestMountMagic: for a file in a temporary directory, /proc/self/status
// and /dev/null, MemoOf's mount and MountMagic's magic are what statfs(2)
// and stat(2) say of them.
func TestMountMagic(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, "/proc/self/status", "/dev/null"} {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, ok, err := sys.MemoOf(fd)
		var fs unix.Statfs_t
		var st unix.Stat_t
		if ferr := unix.Fstatfs(fd, &fs); ferr != nil {
			t.Fatal(ferr)
		}
		if serr := unix.Stat(p, &st); serr != nil {
			t.Fatal(serr)
		}
		unix.Close(fd)
		if err != nil {
			t.Fatalf("MemoOf(%s): %v", p, err)
		}
		if !ok {
			t.Skipf("needs statx's STATX_MNT_ID_UNIQUE (Linux 6.8): not given for %s", p)
		}
		if m.Mode != st.Mode || m.RdevMajor != unix.Major(st.Rdev) || m.RdevMinor != unix.Minor(st.Rdev) {
			t.Errorf("MemoOf(%s) = %+v; stat says mode %o rdev %d:%d", p, m, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		magic, err := sys.MountMagic(m.Mount, 0)
		if errors.Is(err, unix.ENOSYS) {
			t.Skipf("needs statmount(2) (Linux 6.8): %v", err)
		}
		if err != nil || magic != int64(fs.Type) {
			t.Errorf("MountMagic of %s's mount = %#x, %v; statfs says %#x", p, magic, err, fs.Type)
		}
	}
	if _, err := sys.MountMagic(1<<62, 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("MountMagic of no such mount: %v; want ENOENT", err)
	}
}

// TestMountMagicInNamespace: a mount of a child's own mount namespace
// (unshare -m, a tmpfs mounted there) is not in this process's, and is
// found by that namespace's id (MountNSID).
func TestMountMagicInNamespace(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs none "+dir+" && touch "+dir+"/x && echo up && exec sleep 300")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("needs unshare -m: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, 3)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "up\n" {
		t.Skipf("needs a tmpfs mounted in a mount namespace of its own (unshare -m, as root): %q %v", line, err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	fd, err := unix.Open("/proc/"+pid+"/root"+dir+"/x", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	m, ok, err := sys.MemoOf(fd)
	if err != nil || !ok {
		t.Skipf("needs statx's STATX_MNT_ID_UNIQUE (Linux 6.8): %v", err)
	}
	if _, err := sys.MountMagic(m.Mount, 0); !errors.Is(err, unix.ENOENT) {
		t.Errorf("MountMagic of the child's mount in this namespace: %v; want ENOENT", err)
	}
	nsfd, err := unix.Open("/proc/"+pid+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(nsfd)
	ns, err := sys.MountNSID(nsfd)
	if err != nil {
		t.Skipf("needs NS_GET_MNTNS_ID (Linux 6.8): %v", err)
	}
	magic, err := sys.MountMagic(m.Mount, ns)
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("needs statmount's mnt_ns_id (Linux 6.11): %v", err)
	}
	if err != nil || magic != unix.TMPFS_MAGIC {
		t.Errorf("MountMagic in the child's namespace: %#x, %v; want tmpfs's %#x", magic, err, unix.TMPFS_MAGIC)
	}
}
