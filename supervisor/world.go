package supervisor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/callerio"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/vram"
)

// liveWorld is what one deciding goroutine keeps between decisions: the
// ownership tree and /proc it reads, the host policy, scratch space for a
// caller's memory, the pins it keeps across notifications (a loop's world)
// and the last listing of owned processes. Each decision against it is a
// call (decision.go), which holds that decision's own state. A liveWorld
// belongs to one goroutine at a time: the notify loop, the ptrace reaper,
// or a worker that took over a decision that may wait.
type liveWorld struct {
	tree  *ownership.Tree
	fs    procfs.FS
	guard guard.Policy
	vram  func() *vram.Budget
	// files reads the model files an exec names, as its caller sees them;
	// nil: vram.SafeFiles over the caller's root and working directory.
	files func(tid int) vram.Files
	// slots bound the session's reads of model files (vram.ReadSlots).
	slots *vram.ReadSlots
	// strictExec refuses the execs of callers whose memory paddock may not
	// read (Config.StrictExec).
	strictExec bool
	// scoped says the agent's Landlock domain scopes signals, and probes
	// that its filter traps signal 0 (deliver.go).
	scoped, probes bool
	// selfNS is paddock's own PID namespace (selfPidNS), which a caller's
	// is compared with before its pid arguments are read (names.go), and
	// sameNS the callers a loop found in it (nil in a worker's world).
	selfNS uint64
	sameNS *sameNS
	// wall is the session's default wall (nil: its calls are not trapped).
	wall *wallState
	// buf is scratch space for reading a caller's memory.
	buf [execBufSize]byte
	// terms are the session's terminals and paddock's own, for the
	// terminal ioctls (nil: not known, and those calls are refused).
	terms *termSet
	// pins, when set, keeps pins across notifications (see pinCache), and
	// exits tells which of its and sameNS's pins have exited.
	pins  *pinCache
	exits *exitWatch
	// mounts, in a loop's world, tells which opens for writing the loop
	// may carry out itself (wallhere.go); nil in a worker's.
	mounts mountMemo
	// cur is the call the loop decides in place, reused so that the hot
	// path allocates nothing per notification.
	cur call
	// owned caches the last listing of owned processes, for messages.
	owned struct {
		at         time.Time
		max, total int
		list       []policy.Target
	}
}

func newLiveWorld(tree *ownership.Tree, fs procfs.FS, g guard.Policy, b func() *vram.Budget) *liveWorld {
	w := &liveWorld{tree: tree, fs: fs, guard: g, vram: b, selfNS: selfPidNS(fs)}
	w.cur.looked = make([]pinned, 0, 4)
	return w
}

// keepPins makes w keep its pins across notifications (see pinCache); the
// loop that owns w calls close when it ends.
// Without an epoll instance to watch them (none could be made), it keeps
// none: every lookup then reads /proc.
func (w *liveWorld) keepPins() *liveWorld {
	x, err := newExitWatch()
	if err != nil {
		return w
	}
	w.exits = x
	w.pins = newPinCache(x)
	w.sameNS = newSameNS(x)
	w.mounts = make(mountMemo)
	return w
}

// sweep drops the kept pins whose process or thread has exited (exitWatch):
// their pid may name another process once it is reaped. Every pin is
// dropped if the watch cannot be read.
func (w *liveWorld) sweep() {
	for {
		evs, err := w.exits.ready()
		if err != nil {
			w.pins.flush()
			w.sameNS.flush()
			return
		}
		for _, ev := range evs {
			if ev.Pad > 0 {
				w.pins.drop(int(ev.Pad), int(ev.Fd))
			} else {
				w.sameNS.drop(int(-ev.Pad), int(ev.Fd))
			}
		}
		if len(evs) < len(w.exits.events) {
			return
		}
	}
}

// spare is a world for a worker: the same tree, /proc and policy, without
// pins kept across decisions and with a listing cache of its own, so that
// nothing in it is shared with the loop that made it.
func (w *liveWorld) spare() *liveWorld {
	s := &liveWorld{tree: w.tree, fs: w.fs, guard: w.guard, vram: w.vram, selfNS: w.selfNS}
	s.cur.looked = make([]pinned, 0, 4)
	s.files, s.strictExec, s.slots = w.files, w.strictExec, w.slots
	s.scoped, s.probes, s.terms, s.wall = w.scoped, w.probes, w.terms, w.wall
	return s
}

// close releases what w holds between notifications.
func (w *liveWorld) close() {
	w.cur.reset()
	if w.pins != nil {
		w.pins.flush()
	}
	w.sameNS.flush()
	w.exits.close()
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

// pidfdOf returns the pin taken on pid by a lookup of looked (-1: none).
func pidfdOf(looked []pinned, pid int) int {
	for _, p := range looked {
		if p.t.Pid == pid {
			return p.pidfd
		}
	}
	return -1
}

// lookup reads pid's facts from /proc through the tree, pinned by a pidfd
// opened before the stat line is read.
func (w *liveWorld) lookup(pid int) (pinned, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
		if errors.Is(err, unix.ESRCH) {
			return pinned{t: policy.Target{Pid: pid, Rel: audit.RelGone}, pidfd: -1}, nil
		}
		// EINVAL: pid names a thread that is not a group leader; it is
		// classified all the same, without a pin.
	}
	rel, st, err := w.tree.Classify(pid)
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return pinned{t: policy.Target{Pid: pid}, pidfd: -1}, err
	}
	return pinned{t: policy.Target{Pid: pid, Comm: st.Comm, StartTime: st.StartTime, Rel: rel}, pidfd: fd}, nil
}

// classify classifies the members of a process group (procfs GroupMembers).
func (w *liveWorld) classify(sts []procfs.Stat) ([]policy.Target, error) {
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

// termPgrp takes a copy of descriptor fd of thread tid (pidfd_getfd) and
// asks the terminal for its foreground process group, which for a pty
// master is its slave's.
func (w *liveWorld) termPgrp(tid, fd int) (int, error) {
	local, err := callerio.Take(w.fs, tid, fd)
	if err != nil {
		return 0, err
	}
	defer unix.Close(local)
	pgrp, err := unix.IoctlGetInt(local, unix.TIOCGPGRP)
	if err != nil {
		return 0, fmt.Errorf("TIOCGPGRP on descriptor %d of thread %d: %w", fd, tid, err)
	}
	return pgrp, nil
}

// ownedList lists up to max owned processes, for messages, and counts
// them all (policy.Processes.Owned). A listing scans all of /proc, so one
// listing serves the refusals of ownedListTTL: a refusal storm does not
// rescan /proc for every refusal (the list may then be that much stale).
func (w *liveWorld) ownedList(max int) ([]policy.Target, int) {
	now := time.Now()
	if w.owned.at.IsZero() || now.Sub(w.owned.at) > ownedListTTL || w.owned.max < max {
		ids, total, err := w.tree.Owned(max)
		if err != nil {
			return nil, 0
		}
		out := make([]policy.Target, len(ids))
		for i, id := range ids {
			out[i] = policy.Target{Pid: id.Pid, Comm: id.Comm, StartTime: id.StartTime, Rel: audit.RelOwned}
		}
		w.owned.at, w.owned.max, w.owned.list, w.owned.total = now, max, out, total
	}
	if len(w.owned.list) > max {
		return w.owned.list[:max], w.owned.total
	}
	return w.owned.list, w.owned.total
}

// ownedListTTL is how long one listing of the owned processes serves messages.
const ownedListTTL = 250 * time.Millisecond
