package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// nobody is the uid and gid the tests give files and directories that are
// not paddock's.
const nobody = 65534

func TestOpenRefusesPlantedFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chowns files to another user, and checks root's directory rule")
	}
	tests := []struct {
		name string
		// setup prepares dir and returns the journal path to open
		setup func(t *testing.T, dir, target string) string
		want  string // words of the error; "" means Open must succeed
	}{
		{"symlink to a root-owned file", func(t *testing.T, dir, target string) string {
			must(t, os.Symlink(target, filepath.Join(dir, "j.jsonl")))
			return filepath.Join(dir, "j.jsonl")
		}, "is a symbolic link; paddock never follows one"},
		{"dangling symlink", func(t *testing.T, dir, target string) string {
			must(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "j.jsonl")))
			return filepath.Join(dir, "j.jsonl")
		}, "is a symbolic link"},
		{"hard link to a root-owned file", func(t *testing.T, dir, target string) string {
			must(t, os.Link(target, filepath.Join(dir, "j.jsonl")))
			return filepath.Join(dir, "j.jsonl")
		}, "has 2 hard links"},
		{"file owned by another user", func(t *testing.T, dir, target string) string {
			p := filepath.Join(dir, "j.jsonl")
			must(t, os.WriteFile(p, nil, 0o666))
			must(t, os.Chown(p, nobody, nobody))
			return p
		}, "owned by uid 65534, not by paddock's effective uid 0"},
		{"directory owned by another user", func(t *testing.T, dir, target string) string {
			must(t, os.Chown(dir, nobody, nobody))
			return filepath.Join(dir, "j.jsonl")
		}, "is owned by uid 65534, not root"},
		{"world-writable directory", func(t *testing.T, dir, target string) string {
			must(t, os.Chmod(dir, 0o777))
			return filepath.Join(dir, "j.jsonl")
		}, "has mode 0777: group- or world-writable without the sticky bit"},
		{"group-writable directory", func(t *testing.T, dir, target string) string {
			must(t, os.Chmod(dir, 0o770))
			return filepath.Join(dir, "j.jsonl")
		}, "has mode 0770: group- or world-writable without the sticky bit"},
		{"sticky world-writable directory (as /tmp)", func(t *testing.T, dir, target string) string {
			must(t, os.Chmod(dir, os.ModeSticky|0o777))
			return filepath.Join(dir, "j.jsonl")
		}, ""},
		{"own directory and file", func(t *testing.T, dir, target string) string {
			return filepath.Join(dir, "j.jsonl")
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			target := filepath.Join(base, "target")
			must(t, os.WriteFile(target, []byte("root's\n"), 0o600))
			dir := filepath.Join(base, "dir")
			must(t, os.Mkdir(dir, 0o700))
			path := tt.setup(t, dir, target)
			j, err := Open(path, Options{})
			if err == nil {
				err = j.Append(seqRecord(0, 0))
				j.Close()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Open(%s): %v", path, err)
			case tt.want != "" && err == nil:
				t.Fatalf("Open(%s) succeeded; want an error with %q", path, tt.want)
			case tt.want != "" && (!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), filepath.Base(path))):
				t.Errorf("error %q; want it to name %s and say %q", err, path, tt.want)
			}
			if b, _ := os.ReadFile(target); string(b) != "root's\n" {
				t.Errorf("target changed: %q", b)
			}
		})
	}
}

// TestReopenRefusesPlantedSymlink: a symlink planted where the journal was,
// after it was moved away, is found when the journal reopens its path (as
// after a rotation) and refused; nothing is written through it.
func TestReopenRefusesPlantedSymlink(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path, target string)
		want  string
	}{
		{"symlink", func(t *testing.T, path, target string) { must(t, os.Symlink(target, path)) }, "is a symbolic link"},
		{"hard link", func(t *testing.T, path, target string) { must(t, os.Link(target, path)) }, "has 2 hard links"},
		{"FIFO", func(t *testing.T, path, target string) { must(t, mkfifo(path)) }, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, path := openTemp(t)
			must(t, j.Append(seqRecord(0, 0)))
			target := filepath.Join(t.TempDir(), "target")
			must(t, os.WriteFile(target, []byte("precious\n"), 0o600))
			must(t, os.Rename(path, path+".moved"))
			tt.plant(t, path, target)
			err := j.Append(seqRecord(0, 1))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Append after the swap: %v; want an error naming %s with %q", err, path, tt.want)
			}
			if b, _ := os.ReadFile(target); string(b) != "precious\n" {
				t.Errorf("target changed: %q", b)
			}
		})
	}
}

func TestOpenOwned(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	must(t, os.WriteFile(target, []byte("x"), 0o600))
	must(t, os.Symlink(target, filepath.Join(dir, "link")))
	tests := []struct {
		name, path string
		flag       int
		want       string
	}{
		{"new file", filepath.Join(dir, "new"), os.O_WRONLY | os.O_CREATE, ""},
		{"symlink", filepath.Join(dir, "link"), os.O_WRONLY | os.O_CREATE, "is a symbolic link"},
		{"O_TRUNC refused", filepath.Join(dir, "new2"), os.O_WRONLY | os.O_CREATE | os.O_TRUNC, "O_TRUNC"},
		{"directory", dir, os.O_RDONLY, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := OpenOwned(tt.path, tt.flag, 0o600)
			if f != nil {
				f.Close()
			}
			if (tt.want == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)) {
				t.Errorf("OpenOwned(%s): %v; want %q", tt.path, err, tt.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mkfifo(path string) error { return unix.Mkfifo(path, 0o600) }
