package control

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sockettest"
)

// A root agent can plant any file in its session's directory, a device
// node or a FIFO where the owner record goes included. The sweep looks at
// what it is before it opens it (O_PATH, fstat) and never opens it: no
// open of the planted node is seen (inotify's IN_OPEN on it). The FIFO
// runs as any user; a character device (a copy of /dev/null's) as root,
// where the base's file system allows device nodes.
func TestSweepNeverOpensPlantedNodes(t *testing.T) {
	self := selfIdentity(t)
	type plant struct {
		name string
		make func(path string) error
	}
	plants := []plant{{"fifo", func(p string) error { return unix.Mkfifo(p, 0o600) }}}
	if os.Geteuid() == 0 {
		plants = append(plants, plant{"char device", func(p string) error {
			return unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
		}})
	}
	for _, pl := range plants {
		t.Run(pl.name, func(t *testing.T) {
			base := sockettest.ShortDir(t)
			dir := filepath.Join(base, "paddock-1")
			mkdir(t, dir, 0o700, -1)
			deadSocket(t, filepath.Join(dir, socketName))
			node := filepath.Join(dir, ownerName)
			if err := pl.make(node); err != nil {
				t.Skipf("cannot make a %s: %v", pl.name, err)
			}
			if pl.name == "char device" {
				// On a nodev file system no open could reach the driver:
				// the test would show nothing there.
				var sfs unix.Statfs_t
				if err := unix.Statfs(base, &sfs); err != nil || sfs.Flags&unix.ST_NODEV != 0 {
					t.Skipf("%s is mounted nodev (%v)", base, err)
				}
			}
			in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
			if err != nil {
				t.Skipf("needs inotify: %v", err)
			}
			defer unix.Close(in)
			if _, err := unix.InotifyAddWatch(in, node, unix.IN_OPEN); err != nil {
				t.Fatal(err)
			}
			var sw Swept
			sweepBase(base, sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now().Add(time.Hour)}, &sw)
			// The events so far (IN_IGNORED too, once the removal took the
			// node and its watch): any IN_OPEN is an open of the node.
			buf := make([]byte, 4096)
			n, err := unix.Read(in, buf)
			if err != nil && err != unix.EAGAIN {
				t.Fatalf("read inotify: %v", err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				// struct inotify_event: wd, mask, cookie, len, name.
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				if mask&unix.IN_OPEN != 0 {
					t.Errorf("the sweep opened the %s planted as its owner record (inotify mask %#x)", pl.name, mask)
				}
				off += unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
			}
			// It is no owner record: the directory, left for an hour with
			// a dead socket and nothing else of its own, is stale.
			if sw.Removed != 1 || len(sw.Errors) > 0 {
				t.Errorf("swept %+v, want the directory removed", sw)
			}
		})
	}
}

// With --keep-caps a root agent shares the host's mount namespace and can
// bind-mount any directory into its session's directory, or onto the
// session directory itself. The sweep stops at mount points (openat2's
// RESOLVE_NO_XDEV: a bind mount of the same file system included, which
// st_dev would not show): nothing under them is removed.
func TestSweepStopsAtMountPoints(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: bind mounts, in a mount namespace of the test's own")
	}
	self := selfIdentity(t)
	gone := self
	gone.StartTime++
	base := sockettest.ShortDir(t)
	victim := sockettest.ShortDir(t) // a directory of the machine's, not the session's
	write(t, filepath.Join(victim, "precious"), "keep me")
	// victim2 could pass for a session directory left by an older
	// paddock: 0700, ours, nothing in it but a name paddock puts there.
	victim2 := filepath.Join(sockettest.ShortDir(t), "v2")
	mkdir(t, victim2, 0o700, -1)
	write(t, filepath.Join(victim2, LinkName), "keep me too")

	inside := filepath.Join(base, "paddock-1")
	mkdir(t, inside, 0o700, -1)
	ownerRecord(t, inside, gone)
	deadSocket(t, filepath.Join(inside, socketName))
	mkdir(t, filepath.Join(inside, "x"), 0o700, -1)
	onto := filepath.Join(base, "paddock-2")
	mkdir(t, onto, 0o700, -1)

	done := make(chan Swept)
	go func() {
		// The mounts live in this thread's own mount namespace, which
		// ends with the thread: it is never unlocked.
		runtime.LockOSThread()
		var sw Swept
		defer func() { done <- sw }()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			sw.Errors = append(sw.Errors, "skip: unshare(CLONE_NEWNS): "+err.Error())
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			sw.Errors = append(sw.Errors, "skip: make / private: "+err.Error())
			return
		}
		for _, m := range [][2]string{{victim, filepath.Join(inside, "x")}, {victim2, onto}} {
			if err := unix.Mount(m[0], m[1], "", unix.MS_BIND, ""); err != nil {
				sw.Errors = append(sw.Errors, "skip: bind "+m[0]+": "+err.Error())
				return
			}
		}
		sweepBase(base, sweeper{fs: procfs.Default(), self: self, euid: os.Geteuid(), now: time.Now().Add(time.Hour)}, &sw)
	}()
	sw := <-done
	if len(sw.Errors) > 0 && strings.HasPrefix(sw.Errors[0], "skip:") {
		t.Skip(sw.Errors[0])
	}
	for _, p := range []string{filepath.Join(victim, "precious"), filepath.Join(victim2, LinkName)} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the sweep removed %s through a bind mount in a session directory: %v", p, err)
		}
	}
	// paddock-1 is stale but holds a mount point: found, not removed, and
	// the error says why. paddock-2 is a mount point itself: not ours.
	if sw.Found != 1 || sw.Removed != 0 || len(sw.Errors) != 1 {
		t.Errorf("swept %+v, want paddock-1 found and left with one error", sw)
	} else if want := "x: a mount point; left as it is"; !strings.Contains(sw.Errors[0], want) {
		t.Errorf("the error %q does not say %q", sw.Errors[0], want)
	}
}

// A session's own removal of its directory at its end (Close) never goes
// into a mount point either: a root agent run with --keep-caps may have
// bind-mounted a directory of the machine's into its session's directory,
// and what is there is not the session's. (os.RemoveAll, which Close
// used, removed the files of the directory bind-mounted there.)
func TestCloseStopsAtMountPoints(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a bind mount, in a mount namespace of the test's own")
	}
	base := sockettest.ShortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", base)
	victim := sockettest.ShortDir(t)
	write(t, filepath.Join(victim, "precious"), "keep me")
	s, err := Listen(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(filepath.Dir(s.Path()), "x")
	mkdir(t, x, 0o700, -1)

	done := make(chan error)
	go func() {
		// The mount lives in this thread's own mount namespace, which
		// ends with the thread: it is never unlocked.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- fmt.Errorf("skip: unshare(CLONE_NEWNS): %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- fmt.Errorf("skip: make / private: %w", err)
			return
		}
		if err := unix.Mount(victim, x, "", unix.MS_BIND, ""); err != nil {
			done <- fmt.Errorf("skip: bind %s: %w", victim, err)
			return
		}
		done <- s.Close()
	}()
	err = <-done
	if err != nil && strings.HasPrefix(err.Error(), "skip:") {
		_ = s.Close()
		t.Skip(err)
	}
	if _, serr := os.Lstat(filepath.Join(victim, "precious")); serr != nil {
		t.Errorf("Close removed a file through a bind mount in its session directory: %v", serr)
	}
	if err == nil || !strings.Contains(err.Error(), "x: a mount point; left as it is") {
		t.Errorf("Close: %v, want an error saying x is a mount point left as it is", err)
	}
}
