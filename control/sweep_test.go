package control

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sockettest"
)

// deadSocket binds a unix socket at path and closes it, leaving its file:
// what a paddock killed with SIGKILL leaves.
func deadSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
}

// selfIdentity is this process's identity; the rows that need pids judged
// skip where /proc cannot vouch for them.
func selfIdentity(t *testing.T) procfs.Identity {
	t.Helper()
	self, err := procfs.Default().Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PidNS == 0 {
		t.Skip("/proc is not this process's PID namespace's: owners cannot be judged here")
	}
	return self
}

// The sweep removes a session directory only when it is the caller's
// own, real, made as paddock makes it, not in use, and its owner is known
// to be gone (or, without an owner to judge, it holds only what paddock
// puts there, has a socket that refuses and has been left for a minute).
func TestSweepJudges(t *testing.T) {
	self := selfIdentity(t)
	gone := self
	gone.StartTime++ // this pid, another start: a paddock that is gone
	otherBoot := self
	otherBoot.BootID = "not-this-boot"
	otherNS := self
	otherNS.PidNS++
	const old, young = 2 * unknownOwnerAge, 0

	type sock int
	const (
		noSock sock = iota
		dead
		listening
	)
	tests := []struct {
		name  string
		dir   string           // its name in the base; "" means paddock-1
		owner *procfs.Identity // nil: no owner record
		sock  sock
		extra func(t *testing.T, dir string) // more setup in the directory
		mode  uint32                         // 0: 0700
		age   time.Duration                  // how long ago the directory last changed
		want  verdict
	}{
		{name: "live owner, listening", owner: &self, sock: listening, want: keep},
		{name: "live owner, socket refuses", owner: &self, sock: dead, age: old, want: keep},
		{name: "gone owner, socket refuses", owner: &gone, sock: dead, want: stale},
		{name: "gone owner, no socket yet", owner: &gone, want: stale},
		{name: "gone owner, listening: in use", owner: &gone, sock: listening, age: old, want: keep},
		{name: "owner of another boot", owner: &otherBoot, sock: dead, want: stale},
		{name: "owner in another PID namespace, refused, old", owner: &otherNS, sock: dead, age: old, want: stale},
		{name: "owner in another PID namespace, refused, young", owner: &otherNS, sock: dead, age: young, want: keep},
		{name: "owner in another PID namespace, listening", owner: &otherNS, sock: listening, age: old, want: keep},
		{name: "no owner (older paddock), refused, old", sock: dead, age: old, extra: paddockLink, want: stale},
		{name: "no owner, refused, young", sock: dead, age: young, want: keep},
		{name: "no owner, refused, old, holds a file paddock does not make", sock: dead, age: old, extra: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes.txt"), "mine")
		}, want: keep},
		{name: "no owner, no socket, old (a removal killed halfway)", age: old, extra: paddockLink, want: stale},
		{name: "no owner, no socket, young (being made)", age: young, want: keep},
		{name: "no owner, no socket, old, holds a file paddock does not make", age: old, extra: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes.txt"), "mine")
		}, want: keep},
		{name: "no owner, listening", sock: listening, age: old, want: keep},
		{name: "unreadable owner record, refused, old", sock: dead, age: old, extra: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ownerName), "{")
		}, want: stale},
		{name: "owner record through a symlink is not read", sock: dead, age: young, extra: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "..", "elsewhere"), `{"pid":1,"start_time":1}`)
			if err := os.Symlink("../elsewhere", filepath.Join(dir, ownerName)); err != nil {
				t.Fatal(err)
			}
		}, want: keep},
		{name: "gone owner, mode 0755: not made by paddock", owner: &gone, sock: dead, mode: 0o755, want: notOurs},
		{name: "being made, by a paddock that runs", dir: stagingPrefix(self) + "1", want: keep},
		{name: "being made, with its owner record, by a paddock that runs", dir: stagingPrefix(self) + "1", owner: &self, want: keep},
		{name: "left half made by a paddock that is gone", dir: stagingPrefix(gone) + "1", want: stale},
		{name: "left half made, with its owner record, by a paddock that is gone", dir: stagingPrefix(gone) + "1", owner: &gone, want: stale},
		{name: "being made in another PID namespace, young", dir: stagingPrefix(otherNS) + "1", want: keep},
		{name: "left half made in another PID namespace, old", dir: stagingPrefix(otherNS) + "1", age: old, want: stale},
		{name: "a staging name holding what paddock does not put there", dir: stagingPrefix(otherNS) + "1", age: old, extra: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes.txt"), "mine")
		}, want: keep},
		{name: "gone owner, the agent's files in it", owner: &gone, sock: dead, extra: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "a", "b", "f"), "x")
			if err := os.Symlink("/", filepath.Join(dir, "a", "root")); err != nil {
				t.Fatal(err)
			}
		}, want: stale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := sockettest.ShortDir(t)
			name := tc.dir
			if name == "" {
				name = "paddock-1"
			}
			dir := filepath.Join(base, name)
			mkdir(t, dir, 0o700, -1)
			if tc.owner != nil {
				ownerRecord(t, dir, *tc.owner)
			}
			switch tc.sock {
			case dead:
				deadSocket(t, filepath.Join(dir, socketName))
			case listening:
				bind(t, filepath.Join(dir, socketName))
			}
			if tc.extra != nil {
				tc.extra(t, dir)
			}
			if tc.mode != 0 {
				if err := unix.Chmod(dir, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			sp := sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now().Add(tc.age)}
			bfd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(bfd)
			if got := sp.judge(bfd, name); got != tc.want {
				t.Fatalf("judge = %v, want %v", got, tc.want)
			}
			var sw Swept
			sweepBase(base, sp, &sw)
			_, err = os.Lstat(dir)
			switch {
			case tc.want == stale && (sw.Found != 1 || sw.Removed != 1 || !os.IsNotExist(err)):
				t.Errorf("a stale directory was not removed: %+v, lstat: %v", sw, err)
			case tc.want != stale && (sw.Found != 0 || err != nil):
				t.Errorf("a directory that is not stale was touched: %+v, lstat: %v", sw, err)
			case tc.want == keep && sw.Kept != 1:
				t.Errorf("kept %d, want 1: %+v", sw.Kept, sw)
			}
			if len(sw.Errors) > 0 {
				t.Errorf("errors: %v", sw.Errors)
			}
		})
	}
}

// A staging directory's name says whose it is; anything else named like
// one is not a staging directory.
func TestStagingOwner(t *testing.T) {
	id := procfs.Identity{Pid: 4242, StartTime: 123456, PidNS: 4026531836}
	if got, ok := stagingOwner(stagingPrefix(id) + "987654321"); !ok || got != id {
		t.Errorf("stagingOwner(stagingPrefix(%+v)+digits) = %+v, %v", id, got, ok)
	}
	for _, name := range []string{
		"paddock-123", "paddock-new-", "paddock-new-1-2-3", "paddock-new-1-2-3-4-5", "paddock-new-1-0-3-4",
		"paddock-new-1-99999999-3-4", "paddock-new-a-2-3-4", "paddock-new-1-2--4", "paddock-e2e-1-2-3-4",
	} {
		if got, ok := stagingOwner(name); ok {
			t.Errorf("stagingOwner(%q) = %+v, want not a staging name", name, got)
		}
	}
}

// What is not a session directory of the caller's is never touched, even
// when it holds a stale session: a symlink named like one (to a stale
// directory elsewhere), a name os.MkdirTemp(base, "paddock-") does not
// make, another user's directory, a file.
func TestSweepLeavesWhatIsNotOurs(t *testing.T) {
	self := selfIdentity(t)
	gone := self
	gone.StartTime++
	base := sockettest.ShortDir(t)
	elsewhere := sockettest.ShortDir(t)
	// staleAt makes a stale session directory at dir.
	staleAt := func(dir string, uid int) {
		mkdir(t, dir, 0o700, -1)
		ownerRecord(t, dir, gone)
		deadSocket(t, filepath.Join(dir, socketName))
		if uid >= 0 {
			for _, p := range []string{filepath.Join(dir, ownerName), filepath.Join(dir, socketName), dir} {
				if err := os.Lchown(p, uid, uid); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	target := filepath.Join(elsewhere, "paddock-2")
	staleAt(target, -1)
	if err := os.Symlink(target, filepath.Join(base, "paddock-3")); err != nil {
		t.Fatal(err)
	}
	staleAt(filepath.Join(base, "paddock-e2e-4"), -1)
	write(t, filepath.Join(base, "paddock-5"), "a file")
	if os.Geteuid() == 0 {
		staleAt(filepath.Join(base, "paddock-6"), 65534)
	}
	staleAt(filepath.Join(base, "paddock-7"), -1) // ours: removed

	var sw Swept
	sweepBase(base, sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now().Add(time.Hour)}, &sw)
	if sw.Found != 1 || sw.Removed != 1 || sw.Kept != 0 || len(sw.Errors) > 0 {
		t.Errorf("swept %+v, want only paddock-7 found and removed", sw)
	}
	kept := []string{filepath.Join(target, ownerName), filepath.Join(target, socketName), filepath.Join(base, "paddock-3"),
		filepath.Join(base, "paddock-e2e-4", ownerName), filepath.Join(base, "paddock-5")}
	if os.Geteuid() == 0 {
		kept = append(kept, filepath.Join(base, "paddock-6", socketName))
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the sweep removed what is not ours: %v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "paddock-7")); !os.IsNotExist(err) {
		t.Errorf("paddock-7, a stale session directory of ours, is still there: %v", err)
	}
}

// A session directory made by Listen's listenIn holds the owner record,
// written before the socket, and a live session's directory is kept by
// Sweep; once its paddock is gone (here: an owner record naming a paddock
// that is gone) and its socket closed, Sweep removes it.
func TestSweepAfterListen(t *testing.T) {
	self := selfIdentity(t)
	base := sockettest.ShortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", base)
	l, dir, _, err := listenIn(base, self)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := os.ReadFile(filepath.Join(dir, ownerName))
	if err != nil || !strings.Contains(string(b), `"start_time":`) {
		t.Fatalf("owner record: %q, %v", b, err)
	}
	if !sessionDirName(filepath.Base(dir)) {
		t.Errorf("the session directory is %s, not %s and digits", dir, dirPrefix)
	}
	if left, _ := filepath.Glob(filepath.Join(base, dirPrefix+"new-*")); len(left) > 0 {
		t.Errorf("staging directories left: %v", left)
	}
	if sw := Sweep(); sw.Found != 0 || sw.Kept != 1 || len(sw.Bases) != 1 || sw.Bases[0] != base {
		t.Fatalf("Sweep of a live session: %+v", sw)
	}
	gone := self
	gone.StartTime++
	l2, dir2, _, err := listenIn(base, gone)
	if err != nil {
		t.Fatal(err)
	}
	l2.SetUnlinkOnClose(false)
	l2.Close()
	if sw := Sweep(); sw.Found != 1 || sw.Removed != 1 || sw.Kept != 1 || len(sw.Errors) > 0 {
		t.Fatalf("Sweep after a session was left behind: %+v", sw)
	}
	if _, err := os.Lstat(dir2); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir2, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, socketName)); err != nil {
		t.Errorf("the live session's socket: %v", err)
	}
}

// A remover killed at any step of a removal (here: halted there) leaves
// what the next sweep removes at once: the directory has taken the
// remover's staging name before anything in it is removed, so even an
// empty directory says its owner is gone. (Left under its session name,
// an emptied directory was kept for unknownOwnerAge: a paddock killed as
// its sweep ran made the next sweep keep that directory.)
func TestSweepAfterARemoverKilledHalfway(t *testing.T) {
	self := selfIdentity(t)
	gone := self
	gone.StartTime++ // the session's paddock
	remover := self
	remover.StartTime += 2 // the paddock that was killed as it swept
	for _, step := range []removeStep{stepRenamed, stepEmptied, stepOwnerRemoved} {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			base := sockettest.ShortDir(t)
			dir := filepath.Join(base, "paddock-1")
			mkdir(t, dir, 0o700, -1)
			ownerRecord(t, dir, gone)
			deadSocket(t, filepath.Join(dir, socketName))
			paddockLink(t, dir)

			var first Swept
			halt := func(at removeStep) bool { return at == step }
			sweepBase(base, sweeper{fs: procfs.Default(), self: remover, euid: os.Geteuid(), now: time.Now(), halt: halt}, &first)
			if first.Found != 1 || first.Removed != 0 || len(first.Errors) != 1 {
				t.Fatalf("the halted sweep: %+v, want one found, none removed, its halt the one error", first)
			}
			left, _ := filepath.Glob(filepath.Join(base, "*"))
			if len(left) != 1 || !strings.HasPrefix(filepath.Base(left[0]), stagingPrefix(remover)) {
				t.Fatalf("after a removal halted at step %d the base holds %v, want one directory named for its remover", step, left)
			}
			var next Swept
			sweepBase(base, sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now()}, &next)
			if next.Found != 1 || next.Removed != 1 || next.Kept != 0 || len(next.Errors) > 0 {
				t.Errorf("the next sweep: %+v, want what the halted one left found and removed", next)
			}
			if left, _ := filepath.Glob(filepath.Join(base, "*")); len(left) > 0 {
				t.Errorf("left in the base: %v", left)
			}
		})
	}
}

// A session's own removal of its directory (Close) leaves nothing, and
// under a name of its own while it removes.
func TestCloseRemovesItsDirectory(t *testing.T) {
	base := sockettest.ShortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", base)
	s, err := Listen(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	paddockLink(t, filepath.Dir(s.Path()))
	if err := os.MkdirAll(filepath.Join(filepath.Dir(s.Path()), "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(base, "*")); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
}

// ownerRecord writes owner's record into the session directory dir, as
// listenIn does.
func ownerRecord(t *testing.T, dir string, owner procfs.Identity) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := writeOwner(fd, owner); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// paddockLink puts the paddock link in dir, as a session does.
func paddockLink(t *testing.T, dir string) {
	if err := os.Symlink("/usr/bin/paddock", filepath.Join(dir, LinkName)); err != nil {
		t.Fatal(err)
	}
}
