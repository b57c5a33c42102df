package control

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddock-dev/paddock/internal/sockettest"
)

// Sessions lists the directories of running sessions (made by listenIn,
// their socket listening) and nothing else: not a session whose socket
// refuses, a symlink to a live one, a directory of another mode, a staging
// directory, or a base that does not exist.
func TestSessions(t *testing.T) {
	self := selfIdentity(t)
	base := sockettest.ShortDir(t)
	elsewhere := sockettest.ShortDir(t)

	live, dir, path, err := listenIn(base, self)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	dead, deadDir, _, err := listenIn(base, self)
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	dead.Close()

	other, otherDir, _, err := listenIn(elsewhere, self)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := os.Symlink(otherDir, filepath.Join(base, "paddock-1")); err != nil {
		t.Fatal(err)
	}

	// Live sockets in directories paddock would not have made.
	for _, name := range []string{"paddock-2", "paddock-new-1-2-3-4"} {
		d := filepath.Join(base, name)
		mode := os.FileMode(0o755)
		if name == "paddock-new-1-2-3-4" {
			mode = 0o700
		}
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(d, socketName), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}

	found, errs := Sessions([]string{base, filepath.Join(base, "nonexistent")})
	if len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
	if len(found) != 1 || found[0].Dir != dir || found[0].Socket != path || found[0].Owner != self {
		t.Fatalf("Sessions found %+v, want only %s (socket %s, owner %+v); %s's socket refuses", found, dir, path, self, deadDir)
	}
	if found, _ := Sessions([]string{elsewhere}); len(found) != 1 || found[0].Dir != otherDir {
		t.Errorf("Sessions of %s found %+v, want %s", elsewhere, found, otherDir)
	}
}

// SessionBases looks wherever a session of this user may be, each
// directory once, whatever this process's own environment prefers.
func TestSessionBases(t *testing.T) {
	run, tmp := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Setenv("TMPDIR", tmp+"/")
	got := SessionBases()
	for _, want := range []string{run, tmp, "/tmp"} {
		if !slices.Contains(got, want) {
			t.Errorf("SessionBases() = %q, lacks %s", got, want)
		}
	}
	seen := map[string]bool{}
	for _, b := range got {
		if seen[b] {
			t.Errorf("SessionBases() = %q names %s twice", got, b)
		}
		seen[b] = true
	}
	if got[0] != run {
		t.Errorf("SessionBases() = %q, want $XDG_RUNTIME_DIR first", got)
	}
}
