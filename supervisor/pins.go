package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
)

// pinCacheMax bounds the pins a notify loop keeps open between
// notifications (one descriptor each).
const pinCacheMax = 256

// pinCache keeps, between notifications, the pidfd and the decided facts of
// the processes a loop looked up, so that the next signal to the same
// process costs a share of one poll(2) (call.hitsHold) instead of a pidfd_open, a stat
// read and two closes. An entry serves only while its pidfd says the process
// has not been reaped (so its pid still names it) and while the ownership
// tree's epoch is the one it was classified under (ownership.Tree.Stable).
// One cache belongs to one loop; it is not safe for concurrent use.
type pinCache struct {
	epoch uint64
	byPid map[int]pinned
	// exits watches the pins (each under its pid): an entry serves only
	// while its process has not exited.
	exits *exitWatch
}

func newPinCache(exits *exitWatch) *pinCache {
	return &pinCache{byPid: make(map[int]pinned), exits: exits}
}

// drop forgets the pin of pid if pidfd is still it (its process has
// exited), closing it.
func (c *pinCache) drop(pid, pidfd int) {
	if p, ok := c.byPid[pid]; ok && p.pidfd == pidfd {
		unix.Close(p.pidfd)
		delete(c.byPid, pid)
	}
}

// holds reports whether pidfd is still the pin of pid, not dropped.
func (c *pinCache) holds(pid, pidfd int) bool {
	p, ok := c.byPid[pid]
	return ok && p.pidfd == pidfd
}

// put takes over the pidfd of a looked-up target; it reports false when it
// did not (the cache is full, or there is no pidfd; the caller keeps the
// descriptor then). A pin it replaces must not be in use.
func (c *pinCache) put(t policy.Target, pidfd int) bool {
	if pidfd < 0 || len(c.byPid) >= pinCacheMax {
		return false
	}
	if old, ok := c.byPid[t.Pid]; ok {
		unix.Close(old.pidfd)
		delete(c.byPid, t.Pid)
	}
	if !c.exits.watch(pidfd, int32(t.Pid)) {
		return false
	}
	c.byPid[t.Pid] = pinned{t: t, pidfd: pidfd, cached: true}
	return true
}

// sync runs between notifications: it empties the cache when the tree's
// epoch has moved on since its entries were classified, makes room when it
// is full, and reports whether new entries may be kept.
func (c *pinCache) sync(epoch uint64, stable bool) bool {
	if epoch != c.epoch || !stable {
		c.flush()
		c.epoch = epoch
	}
	if len(c.byPid) >= pinCacheMax {
		c.prune()
	}
	return stable
}

// prune drops the pins of reaped processes, and every pin if that frees
// nothing (the cache is full of live processes: starting over is cheaper
// than choosing).
func (c *pinCache) prune() {
	for pid, p := range c.byPid {
		if ownership.Reaped(p.pidfd) {
			unix.Close(p.pidfd)
			delete(c.byPid, pid)
		}
	}
	if len(c.byPid) >= pinCacheMax {
		c.flush()
	}
}

// flush closes every pin.
func (c *pinCache) flush() {
	for pid, p := range c.byPid {
		unix.Close(p.pidfd)
		delete(c.byPid, pid)
	}
}
