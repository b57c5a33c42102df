package supervisor

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
)

// startSleep starts a process the test owns and kills at the end.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// pinWorld is a loop's world over the real /proc, with this test process as
// the supervisor and a sleep of its own as the agent root.
func pinWorld(t *testing.T) (*liveWorld, *ownership.Tree, int) {
	t.Helper()
	fs := procfs.FS{Root: "/proc"}
	tree, err := ownership.NewTree(fs, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	root := startSleep(t)
	st, err := fs.Stat(root.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree.SetRoot(ownership.IdentityOf(st))
	w := newLiveWorld(tree, fs, guard.Policy{}, nil).keepPins()
	t.Cleanup(w.close)
	return w, tree, root.Process.Pid
}

// lookup is one notification's lookup of pid.
func lookup(t *testing.T, w *liveWorld, pid int) (audit.Relation, pinned) {
	t.Helper()
	w.cur.reset()
	w.begin(policy.Request{Tid: os.Getpid()}, -1, 0)
	tg, err := w.cur.Lookup(pid)
	if err != nil {
		t.Fatalf("Lookup(%d): %v", pid, err)
	}
	return tg.Rel, w.cur.looked[len(w.cur.looked)-1]
}

func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

func TestPinCacheKeepsPinsAcrossNotifications(t *testing.T) {
	w, _, root := pinWorld(t)
	rel, first := lookup(t, w, root)
	if rel != audit.RelAgentRoot || first.hit || !first.cached {
		t.Fatalf("first lookup: %v %+v; want agent root, read from /proc and kept", rel, first)
	}
	rel, second := lookup(t, w, root)
	if rel != audit.RelAgentRoot || !second.hit || second.pidfd != first.pidfd {
		t.Fatalf("second lookup: %v %+v; want agent root from the pin cache (pidfd %d)", rel, second, first.pidfd)
	}
	if !w.cur.hitsHold() || !w.cur.stillThere(root) {
		t.Fatal("the pinned root is alive, but its pin does not hold")
	}
	w.cur.reset()
	if !fdOpen(first.pidfd) {
		t.Fatal("reset closed a pidfd that belongs to the pin cache")
	}
	w.close()
	if fdOpen(first.pidfd) {
		t.Error("close left the cache's pidfd open")
	}
}

func TestPinCacheReapedProcessIsDecidedAfresh(t *testing.T) {
	w, _, _ := pinWorld(t)
	other := startSleep(t)
	pid := other.Process.Pid
	if rel, p := lookup(t, w, pid); rel != audit.RelForeign || !p.cached {
		t.Fatalf("lookup of the test's own sleep: %v %+v; want foreign, kept", rel, p)
	}
	_ = other.Process.Kill()
	_ = other.Wait()
	// The cache answers with what it knew; the check after the decision
	// finds the process reaped, drops the pin and asks for a new decision.
	if rel, p := lookup(t, w, pid); !p.hit || rel != audit.RelForeign {
		t.Fatalf("lookup after the reap: %v %+v; want the cached answer, unchecked", rel, p)
	}
	if w.cur.hitsHold() {
		t.Fatal("hitsHold: true for a pin whose process was reaped")
	}
	if _, ok := w.pins.byPid[pid]; ok {
		t.Error("the reaped process's pin is still cached")
	}
	w.cur.reset()
	w.cur.fresh = true
	tg, err := w.cur.Lookup(pid)
	w.cur.fresh = false
	if err != nil || tg.Rel != audit.RelGone {
		t.Fatalf("fresh lookup of the reaped pid: %+v, %v; want gone", tg, err)
	}
	if w.cur.stillThere(pid) {
		t.Error("stillThere: true for a reaped pid")
	}
}

func TestPinCacheNotKeptWhileLeasesExist(t *testing.T) {
	w, tree, root := pinWorld(t)
	lookup(t, w, root)
	adopted := startSleep(t)
	if _, err := tree.Adopt(ownership.AdoptRequest{Pid: adopted.Process.Pid, Reason: "test", By: "test", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rel, p := lookup(t, w, root); rel != audit.RelAgentRoot || p.hit || p.cached {
		t.Fatalf("lookup with a lease held: %v %+v; want agent root read from /proc, not kept", rel, p)
	}
	if n := len(w.pins.byPid); n != 0 {
		t.Errorf("%d pins kept while a lease exists; want none", n)
	}
	tree.Release(adopted.Process.Pid)
	lookup(t, w, root)
	if _, p := lookup(t, w, root); !p.hit {
		t.Errorf("after the release: %+v; want pins kept again", p)
	}
}

func TestPinCacheBounded(t *testing.T) {
	featuretest.Require(t, features.IDPidfdOpen)
	self := os.Getpid()
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadFd, err := unix.PidfdOpen(dead.Process.Pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open: %v", err)
	}
	_ = dead.Wait()
	x, err := newExitWatch()
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer x.close()
	c := newPinCache(x)
	defer c.flush()
	put := func(pid, fd int) {
		if !c.put(policy.Target{Pid: pid}, fd) {
			unix.Close(fd)
		}
	}
	put(1, deadFd)
	for key := 2; key <= pinCacheMax; key++ {
		fd, err := unix.PidfdOpen(self, 0)
		if err != nil {
			t.Fatal(err)
		}
		put(key, fd)
	}
	if n := len(c.byPid); n != pinCacheMax {
		t.Fatalf("%d pins, want %d", n, pinCacheMax)
	}
	fd, _ := unix.PidfdOpen(self, 0)
	if c.put(policy.Target{Pid: pinCacheMax + 1}, fd) {
		t.Fatal("put took a pin into a full cache")
	}
	unix.Close(fd)
	// Between notifications, a full cache drops its reaped pins first...
	if !c.sync(c.epoch, true) || len(c.byPid) != pinCacheMax-1 {
		t.Fatalf("after sync: %d pins; want the reaped one dropped", len(c.byPid))
	}
	if fdOpen(deadFd) {
		t.Error("the dropped pin's pidfd is still open")
	}
	// ...and starts over when every pin is alive.
	fd, _ = unix.PidfdOpen(self, 0)
	put(1, fd)
	c.sync(c.epoch, true)
	if n := len(c.byPid); n != 0 {
		t.Errorf("after sync of a full cache of live pins: %d left, want 0", n)
	}
	// A new epoch empties it too.
	fd, _ = unix.PidfdOpen(self, 0)
	put(5, fd)
	c.sync(c.epoch+1, true)
	if n := len(c.byPid); n != 0 {
		t.Errorf("after an epoch change: %d left, want 0", n)
	}
}
