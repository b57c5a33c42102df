package control

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mkdir makes dir with mode perm (umask aside; 0o1000 is the sticky bit)
// and, when uid >= 0, owner uid.
func mkdir(t *testing.T, dir string, perm uint32, uid int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Chown(dir, uid, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// A root paddock makes its directory only under a base no other user can
// write, or one with the sticky bit, that root owns; others only need a
// directory.
func TestCheckBase(t *testing.T) {
	root := t.TempDir()
	const nobody = 65534
	tests := []struct {
		name  string
		perm  uint32 // 0: not made by the row
		owner int    // -1: this process's
		path  string // "": root/name
		euid  int
		want  string // "" = allowed
	}{
		{"private", 0o700, -1, "", 0, ""},
		{"world-writable", 0o777, -1, "", 0, "is writable by other users and has no sticky bit"},
		{"world-writable, for a user", 0o777, -1, "", 1000, ""},
		{"group-writable", 0o770, -1, "", 0, "is writable by other users and has no sticky bit"},
		{"sticky", 0o1777, -1, "", 0, ""},
		{"another user's", 0o755, nobody, "", 0, "is owned by uid 65534"},
		{"another user's, sticky", 0o1777, nobody, "", 0, "is owned by uid 65534"},
		{"a symlink to a private directory", 0, -1, "link", 0, ""},
		{"a file", 0, -1, "file", 0, "is not a directory"},
		{"missing", 0, -1, "missing", 0, "no such file or directory"},
	}
	if err := os.Mkdir(filepath.Join(root, "target"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 && os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			if tc.euid == 0 && tc.want == "" && os.Geteuid() != 0 {
				t.Skipf("needs root: a root paddock accepts only a base root owns, and this test (uid %d) cannot make one", os.Geteuid())
			}
			base := filepath.Join(root, tc.path)
			if tc.perm != 0 {
				base = filepath.Join(root, fmt.Sprintf("d%d", i))
				mkdir(t, base, tc.perm, tc.owner)
			}
			err := checkBase(base, tc.euid)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), base)) {
				t.Fatalf("checkBase(%s, euid %d) = %v; want %q", base, tc.euid, err, tc.want)
			}
		})
	}
}

// The directory is checked through the descriptor paddock holds on it and
// by its name: a real directory, the one paddock made, its own, 0700; and
// the socket's path must lead to the socket in it.
func TestCheckDir(t *testing.T) {
	euid := os.Geteuid()
	tests := []struct {
		name  string
		perm  uint32 // of tmp/d, made for every row
		owner int    // of tmp/d; -1: this process's
		// move, when set, returns the name to check and the directory to
		// hold open; else both are tmp/d.
		move func(t *testing.T, tmp, d string) (name, open string)
		want string
	}{
		{"fresh", 0o700, -1, nil, ""},
		{"mode 0755", 0o755, -1, nil, "has mode 0755, want 0700"},
		{"another user's", 0o700, 65534, nil, "is owned by uid 65534"},
		{"a symlink to it", 0o700, -1, func(t *testing.T, tmp, d string) (string, string) {
			if err := os.Symlink(d, filepath.Join(tmp, "l")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(tmp, "l"), d
		}, "is not a real directory"},
		{"swapped for another", 0o700, -1, func(t *testing.T, tmp, d string) (string, string) {
			if err := os.Rename(d, filepath.Join(tmp, "moved")); err != nil {
				t.Fatal(err)
			}
			mkdir(t, d, 0o700, -1)
			return d, filepath.Join(tmp, "moved")
		}, "is no longer the directory paddock made"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 && euid != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			tmp := t.TempDir()
			d := filepath.Join(tmp, "d")
			mkdir(t, d, tc.perm, tc.owner)
			name, open := d, d
			if tc.move != nil {
				name, open = tc.move(t, tmp, d)
			}
			fd, err := unix.Open(open, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			err = checkDir(name, fd, euid)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkDir(%s) = %v; want %q", name, err, tc.want)
			}
		})
	}
}

// The socket's path must lead to the socket in the directory paddock holds:
// not to another socket, nor through a symlink to another directory's.
func TestCheckSocket(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the path clients would use; the directory held is tmp/d.
		setup func(t *testing.T, tmp string) string
		want  string
	}{
		{"its own", func(t *testing.T, tmp string) string { return filepath.Join(tmp, "d", socketName) }, ""},
		{"through a symlinked directory", func(t *testing.T, tmp string) string {
			if err := os.Symlink("d", filepath.Join(tmp, "l")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(tmp, "l", socketName)
		}, ""},
		{"another socket", func(t *testing.T, tmp string) string {
			mkdir(t, filepath.Join(tmp, "e"), 0o700, -1)
			bind(t, filepath.Join(tmp, "e", socketName))
			return filepath.Join(tmp, "e", socketName)
		}, "does not lead to the socket paddock made"},
		{"a symlink to another socket", func(t *testing.T, tmp string) string {
			mkdir(t, filepath.Join(tmp, "e"), 0o700, -1)
			bind(t, filepath.Join(tmp, "e", socketName))
			if err := os.Symlink(filepath.Join(tmp, "e", socketName), filepath.Join(tmp, "d", "alias")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(tmp, "d", "alias")
		}, "does not lead to the socket paddock made"},
		{"missing", func(t *testing.T, tmp string) string { return filepath.Join(tmp, "d", "gone") }, "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			d := filepath.Join(tmp, "d")
			mkdir(t, d, 0o700, -1)
			bind(t, filepath.Join(d, socketName))
			path := tc.setup(t, tmp)
			fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			err = checkSocket(path, fd)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkSocket(%s) = %v; want %q", path, err, tc.want)
			}
		})
	}
}

// bind makes a listening unix socket at path until the test ends.
func bind(t *testing.T, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

// A root paddock refuses a world-writable base without the sticky bit
// before it makes anything there, and says the rule.
func TestListenRefusesAnOpenBase(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is a root paddock's")
	}
	open := filepath.Join(t.TempDir(), "open")
	mkdir(t, open, 0o777, -1)
	t.Setenv("XDG_RUNTIME_DIR", open)
	s, err := Listen(Options{}, &recorder{})
	if err == nil {
		_ = s.Close()
		t.Fatal("Listen under a world-writable directory without the sticky bit succeeded")
	}
	if !strings.Contains(err.Error(), "writable by other users and has no sticky bit") {
		t.Errorf("error does not say the rule: %v", err)
	}
	if left, _ := os.ReadDir(open); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
