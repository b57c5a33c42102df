package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/vram"
)

// liveWorld is the policy.World of one notification: it reads /proc through
// the ownership tree and pins each process it looks up with a pidfd opened
// before the process's stat line is read, so that the decided target can be
// re-validated before the syscall is let through. One liveWorld serves one
// receive worker and is reset between notifications.
type liveWorld struct {
	tree  *ownership.Tree
	fs    procfs.FS
	guard guard.Policy
	vram  func() *vram.Budget
	// buf is scratch space for reading a caller's memory.
	buf [execBufSize]byte
	// looked holds this notification's lookups, with their pidfds (-1: none).
	looked []pinned
	// pins, when set, keeps pins across notifications (a loop's world);
	// keep says whether this notification may add to it, fresh makes
	// lookups bypass it (a decision taken again, see hitsHold).
	pins        *pinCache
	keep, fresh bool
	// caller is the notification's thread; callerRead records that the
	// decision consulted something of it (its /proc entries, memory,
	// descriptors), which named the caller only if it is still waiting:
	// only then must the notify backend re-check the notification id.
	caller     int
	callerRead bool
	// owned caches the last listing of owned processes, for messages.
	owned struct {
		at   time.Time
		max  int
		list []policy.Target
	}
}

// begin starts a notification from thread tid. The pin cache changes here
// only (never while a decision holds its pins).
func (w *liveWorld) begin(tid int) {
	w.caller, w.callerRead = tid, false
	if w.pins != nil {
		w.keep = w.pins.sync(w.tree.Stable())
	}
}

// touch records that the decision read something of thread tid.
func (w *liveWorld) touch(tid int) {
	if tid == w.caller {
		w.callerRead = true
	}
}

type pinned struct {
	t     policy.Target
	pidfd int
	// cached: the pidfd belongs to the pin cache, not to this notification.
	cached bool
	// hit: the facts came from the pin cache, unchecked until hitsHold,
	// after which a hit that is still looked at was found alive.
	hit bool
}

func newLiveWorld(tree *ownership.Tree, fs procfs.FS, g guard.Policy, b func() *vram.Budget) *liveWorld {
	return &liveWorld{tree: tree, fs: fs, guard: g, vram: b, looked: make([]pinned, 0, 4)}
}

// keepPins makes w keep its pins across notifications (see pinCache); the
// loop that owns w calls close when it ends.
func (w *liveWorld) keepPins() *liveWorld {
	w.pins = newPinCache()
	return w
}

// close releases what w holds between notifications.
func (w *liveWorld) close() {
	w.reset()
	if w.pins != nil {
		w.pins.flush()
	}
}

// VRAM implements policy.World.
func (w *liveWorld) VRAM() *vram.Budget {
	if w.vram == nil {
		return nil
	}
	return w.vram()
}

// resolve turns a path as thread tid would resolve it (from its root, or
// its working directory when relative) into one paddock can open.
func (w *liveWorld) resolve(tid int, p string) string {
	base := w.fs.Root + "/" + strconv.Itoa(tid)
	if strings.HasPrefix(p, "/") {
		return base + "/root" + p
	}
	return base + "/cwd/" + p
}

// Files implements policy.World: paths resolve as the caller would resolve them.
func (w *liveWorld) Files(tid int) vram.Files {
	w.touch(tid)
	return vram.Files{
		Size: func(p string) (int64, error) {
			st, err := os.Stat(w.resolve(tid, p))
			if err != nil {
				return 0, err
			}
			return st.Size(), nil
		},
		Open: func(p string) (io.ReadCloser, error) { return os.Open(w.resolve(tid, p)) },
	}
}

// Missing implements policy.World.
func (w *liveWorld) Missing(tid int, path string) bool {
	w.touch(tid)
	var st unix.Stat_t
	err := unix.Stat(w.resolve(tid, path), &st)
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// Guard implements policy.World.
func (w *liveWorld) Guard() guard.Policy { return w.guard }

// reset closes the pidfds of the previous notification.
func (w *liveWorld) reset() {
	for _, p := range w.looked {
		if p.pidfd >= 0 && !p.cached {
			unix.Close(p.pidfd)
		}
	}
	w.looked = w.looked[:0]
}

// Lookup implements policy.World.
func (w *liveWorld) Lookup(pid int) (policy.Target, error) {
	w.touch(pid)
	for _, p := range w.looked {
		if p.t.Pid == pid {
			return p.t, nil
		}
	}
	if w.pins != nil && !w.fresh {
		if p, ok := w.pins.byPid[pid]; ok {
			// Unchecked here: hitsHold checks it once the decision is made,
			// which costs one syscall where checking now would cost two.
			p.hit = true
			w.looked = append(w.looked, p)
			return p.t, nil
		}
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
		if errors.Is(err, unix.ESRCH) {
			t := policy.Target{Pid: pid, Rel: ownership.Gone}
			w.looked = append(w.looked, pinned{t: t, pidfd: -1})
			return t, nil
		}
		// EINVAL: pid names a thread that is not a group leader; it is
		// classified all the same, without a pin.
	}
	rel, st, err := w.tree.Classify(pid)
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return policy.Target{Pid: pid}, err
	}
	t := policy.Target{Pid: pid, Comm: st.Comm, StartTime: st.StartTime, Rel: rel}
	p := pinned{t: t, pidfd: fd}
	if w.keep && rel != ownership.Gone {
		p.cached = w.pins.put(t, fd)
	}
	w.looked = append(w.looked, p)
	return t, nil
}

// Pgrp implements policy.World: always read now, since a process may
// change its group at any time.
func (w *liveWorld) Pgrp(pid int) (int, error) {
	w.touch(pid)
	st, err := w.fs.Stat(pid)
	if errors.Is(err, procfs.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Pgrp, nil
}

// hitsHold checks the pins this decision took from the pin cache: true when
// each process is still there, so the facts it was decided on were true
// throughout. A reaped one is dropped from the cache, and the caller must
// decide again with fresh lookups (its pid may name another process now).
func (w *liveWorld) hitsHold() bool {
	ok := true
	for i := range w.looked {
		p := &w.looked[i]
		if !p.hit {
			continue
		}
		if w.pins.alive(p.t.Pid) {
			continue
		}
		p.pidfd = -1 // closed by the cache
		ok = false
	}
	return ok
}

// stillThere re-validates a pinned target: true while the process the pidfd
// was opened on has not been reaped, so its pid cannot have been reused.
func (w *liveWorld) stillThere(pid int) bool {
	for _, p := range w.looked {
		if p.t.Pid != pid {
			continue
		}
		if p.hit {
			// hitsHold has just found it alive (else the decision was
			// taken again, with no hits).
			return true
		}
		if p.pidfd < 0 {
			// No pin was possible: compare the start time again instead.
			st, err := w.fs.Stat(pid)
			return err == nil && st.StartTime == p.t.StartTime
		}
		return !ownership.Reaped(p.pidfd)
	}
	return false
}

// pidfd returns the pin taken on pid by Lookup (-1: none).
func (w *liveWorld) pidfd(pid int) int {
	for _, p := range w.looked {
		if p.t.Pid == pid {
			return p.pidfd
		}
	}
	return -1
}

// ThreadOf implements policy.World.
func (w *liveWorld) ThreadOf(tid, pid int) bool {
	w.touch(tid)
	w.touch(pid)
	if tid == pid {
		return true
	}
	var st unix.Stat_t
	return unix.Stat(w.fs.Root+"/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid), &st) == nil
}

// Tgid implements policy.World.
func (w *liveWorld) Tgid(tid int) (int, error) {
	w.touch(tid)
	pid, err := w.fs.Tgid(tid)
	if errors.Is(err, procfs.ErrNotFound) {
		return 0, nil
	}
	return pid, err
}

// Group implements policy.World.
func (w *liveWorld) Group(pgid int) ([]policy.Target, error) {
	sts, err := w.fs.GroupMembers(pgid)
	if err != nil {
		return nil, err
	}
	out := make([]policy.Target, 0, len(sts))
	for _, st := range sts {
		rel, err := w.tree.ClassifyStat(st)
		if err != nil {
			return nil, err
		}
		out = append(out, policy.Target{Pid: st.Pid, Comm: st.Comm, StartTime: st.StartTime, Rel: rel})
	}
	return out, nil
}

// FdPid implements policy.World.
func (w *liveWorld) FdPid(tid, fd int) (int, error) {
	w.touch(tid)
	return w.fs.FdPid(tid, fd)
}

// TermPgrp implements policy.World: it takes a copy of the caller's
// descriptor (pidfd_getfd) and asks the terminal for its foreground process
// group, which for a pty master is its slave's.
func (w *liveWorld) TermPgrp(tid, fd int) (int, error) {
	w.touch(tid)
	pid, err := w.fs.Tgid(tid)
	if err != nil {
		return 0, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_open(%d): %w", pid, err)
	}
	defer unix.Close(pidfd)
	local, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return 0, fmt.Errorf("pidfd_getfd(%d, %d): %w", pid, fd, err)
	}
	defer unix.Close(local)
	pgrp, err := unix.IoctlGetInt(local, unix.TIOCGPGRP)
	if err != nil {
		return 0, fmt.Errorf("TIOCGPGRP on descriptor %d of pid %d: %w", fd, pid, err)
	}
	return pgrp, nil
}

// Owned implements policy.World.
// It lists for messages only, and a listing scans all of /proc, so one
// listing serves the refusals of ownedListTTL: a refusal storm does not
// rescan /proc for every refusal (the list may then be that much stale).
func (w *liveWorld) Owned(max int) []policy.Target {
	now := time.Now()
	if w.owned.at.IsZero() || now.Sub(w.owned.at) > ownedListTTL || w.owned.max < max {
		ids, err := w.tree.Owned(max)
		if err != nil {
			return nil
		}
		out := make([]policy.Target, len(ids))
		for i, id := range ids {
			out[i] = policy.Target{Pid: id.Pid, Comm: id.Comm, StartTime: id.StartTime, Rel: ownership.Owned}
		}
		w.owned.at, w.owned.max, w.owned.list = now, max, out
	}
	if len(w.owned.list) > max {
		return w.owned.list[:max]
	}
	return w.owned.list
}

// ownedListTTL is how long one listing of the owned processes serves messages.
const ownedListTTL = 250 * time.Millisecond
