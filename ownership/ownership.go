// Package ownership answers "whose process is this?" for the supervisor: the
// agent root and everything descended from it are owned; the supervisor, its
// ancestors and PID 1 are lifelines that are never owned; everything else is
// foreign. Identities are pinned by pid and start time so that a reused PID is
// never mistaken for a process the session owns.
package ownership

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Identity pins one process: a pid names a process only together with its
// start time, since pids are reused.
type Identity struct {
	Pid       int
	StartTime uint64
	Comm      string
}

// Reaped reports whether the process a pidfd was opened on has been reaped
// (the kernel answers ESRCH to signal 0 then; a zombie still holds its pid):
// only then may its pid name another process. A pin held on a process is
// proof of its identity until Reaped says otherwise.
func Reaped(pidfd int) bool {
	return errors.Is(unix.PidfdSendSignal(pidfd, 0, nil, 0), unix.ESRCH)
}

// IdentityOf returns the identity recorded in a stat line.
func IdentityOf(st procfs.Stat) Identity {
	return Identity{Pid: st.Pid, StartTime: st.StartTime, Comm: st.Comm}
}

// seccompModeFilter is the Seccomp: value of a process under a filter.
const seccompModeFilter = 2

// maxDepth bounds an ancestry walk; real trees are far shallower.
const maxDepth = 4096

// maxRetries bounds how often a walk restarts after a race with an exiting
// ancestor before it gives up (and the caller fails closed).
const maxRetries = 8

// Tree classifies processes relative to one supervisor and its agent root.
// It keeps no record of the processes it visits: ownership is derived from
// the live process tree at each question.
type Tree struct {
	fs         procfs.FS
	supervisor Identity
	ancestors  map[int]uint64 // pid -> start time of the supervisor's ancestors at start
	// superFilters is how many seccomp filters the supervisor itself runs under.
	superFilters int

	// rootExited is set by the supervisor before it reaps the agent root;
	// from then on the root's pid may be reused, and is checked by start time.
	rootExited atomic.Bool

	mu   sync.RWMutex
	root Identity
	// rootLeads records that the root was started as a session leader.
	rootLeads bool
	leases    map[int]Lease // by pid; see lease.go
	// epoch counts changes to what classification depends on besides the
	// live process tree: the root, its exit, the leases. See Stable.
	epoch uint64
}

// NewTree records the supervisor (normally os.Getpid()) and its ancestors.
// The supervisor must be a child subreaper, so that orphaned descendants of
// the agent are re-parented to it and stay inside the tree.
func NewTree(fs procfs.FS, supervisorPid int) (*Tree, error) {
	st, err := fs.Stat(supervisorPid)
	if err != nil {
		return nil, fmt.Errorf("ownership: supervisor %d: %w", supervisorPid, err)
	}
	t := &Tree{fs: fs, supervisor: IdentityOf(st), ancestors: map[int]uint64{}, leases: map[int]Lease{}}
	// The supervisor's own count is its calling thread's when it is this
	// process: a thread that launched an agent carries the agent's filter
	// for as long as it lives, and when Go ran that launch on the main
	// thread (which never exits), /proc/PID shows the filter ever after,
	// which made every later session of a library host call its own
	// agent's processes foreign.
	count := func() (int, int, error) { return fs.Seccomp(supervisorPid) }
	if supervisorPid == os.Getpid() {
		count = fs.ThreadSeccomp
	}
	if _, n, err := count(); err == nil {
		t.superFilters = n
	}
	// Bounded, like walk: /proc is read one file at a time, so a pid reused
	// mid-read can show a chain that loops.
	prev := st
	for p, n := st.PPid, 0; p > 0 && n < maxDepth; n++ {
		ast, err := fs.Stat(p)
		if err != nil || ast.StartTime > prev.StartTime {
			// An ancestor outside our PID namespace shows as ppid 0; a
			// vanished one, or a reused pid (a parent cannot start after its
			// child), ends the chain.
			break
		}
		if _, seen := t.ancestors[p]; seen || p == supervisorPid {
			break
		}
		t.ancestors[p] = ast.StartTime
		prev, p = ast, ast.PPid
	}
	return t, nil
}

// CarriesAgentFilter reports whether a process that runs under filters
// seccomp filters (procfs's Seccomp_filters) carries the agent's: more
// than the supervisor itself runs under. Every process the agent started
// does; an adopted process does not.
func (t *Tree) CarriesAgentFilter(filters int) bool { return filters > t.superFilters }

// Supervisor returns the supervisor's identity.
func (t *Tree) Supervisor() Identity { return t.supervisor }

// SetRoot records the agent root once it has been started.
func (t *Tree) SetRoot(id Identity) {
	t.mu.Lock()
	t.root, t.rootLeads = id, false
	t.epoch++
	t.mu.Unlock()
}

// SetRootStat records the agent root from its stat line, read once it has
// been started, noting whether it leads a session of its own (RootSession).
func (t *Tree) SetRootStat(st procfs.Stat) {
	t.mu.Lock()
	t.root = IdentityOf(st)
	t.rootLeads = st.Session == st.Pid
	t.epoch++
	t.mu.Unlock()
}

// RootSession returns the session the agent root leads (its pid), or 0
// when it leads none or has exited. Until the root is reaped its pid
// cannot name another session, and every member of its session is a
// descendant of the root: a process joins a session only by being born
// into it.
func (t *Tree) RootSession() int {
	if t.rootExited.Load() {
		return 0
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.rootLeads {
		return 0
	}
	return t.root.Pid
}

// RootExited tells the tree that the agent root has exited and is about to
// be reaped. The supervisor, the root's parent and reaper, must call it
// before reaping, so that the tree never trusts the root's pid alone once
// that pid may be reused.
func (t *Tree) RootExited() {
	t.mu.Lock()
	t.rootExited.Store(true)
	t.epoch++
	t.mu.Unlock()
}

// Stable says whether the relations Classify gives now hold for the rest of
// each classified process's life, so that a caller holding a pin on the
// process (a pidfd) may reuse its answer until the pin reports the process
// reaped. That holds while the session has no leases: an owned process
// descends from the agent root, a process never gains an ancestor, and
// orphans of the agent's tree are re-parented to the supervisor, which is
// a child subreaper; a process outside the tree never moves into it.
// Leases break this (an adopted process's descendants stop being owned
// once it dies), so ok is false while any lease is held. epoch changes
// whenever the root, its exit or the leases change: answers given under
// another epoch must not be reused.
func (t *Tree) Stable() (epoch uint64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.epoch, len(t.leases) == 0
}

// Root returns the agent root's identity (zero before SetRoot).
func (t *Tree) Root() Identity {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.root
}

// Classify says how pid relates to the session and returns its stat line.
// A process that does not exist is Gone with a nil error; an error means the
// answer could not be established (callers must fail closed).
func (t *Tree) Classify(pid int) (audit.Relation, procfs.Stat, error) {
	st, err := t.fs.Stat(pid)
	if err != nil {
		if errors.Is(err, procfs.ErrNotFound) {
			return audit.RelGone, st, nil
		}
		return audit.RelForeign, st, err
	}
	rel, err := t.ClassifyStat(st)
	return rel, st, err
}

// ClassifyStat classifies a process from a stat line already read. An
// adopted process (or a descendant of one) is Owned, lifelines included when
// their adoption was an explicit, journaled override.
func (t *Tree) ClassifyStat(st procfs.Stat) (audit.Relation, error) {
	if _, ok := t.lease(st); ok {
		return audit.RelOwned, nil
	}
	return t.classifyTree(st)
}

// classifyTree classifies by the process tree alone (leases only count for
// ancestors, below the lifelines).
func (t *Tree) classifyTree(st procfs.Stat) (audit.Relation, error) {
	root := t.Root()
	switch {
	case st.Pid == 1:
		return audit.RelInit, nil
	case st.Pid == t.supervisor.Pid:
		return audit.RelSupervisor, nil
	case st.Pid == root.Pid && st.StartTime == root.StartTime:
		return audit.RelAgentRoot, nil
	}
	if start, ok := t.ancestors[st.Pid]; ok && start == st.StartTime {
		return audit.RelSupervisorAncestor, nil
	}
	for try := 0; try < maxRetries; try++ {
		rel, retry, err := t.walk(st, root)
		if !retry {
			return rel, err
		}
		// An ancestor exited (or its pid was reused) mid-walk: re-read the
		// process itself, whose parent has changed, and walk again.
		st2, err := t.fs.Stat(st.Pid)
		if err != nil {
			if errors.Is(err, procfs.ErrNotFound) {
				return audit.RelGone, nil
			}
			return audit.RelForeign, err
		}
		if st2.StartTime != st.StartTime {
			return audit.RelGone, nil
		}
		st = st2
	}
	return audit.RelForeign, fmt.Errorf("ownership: ancestry of pid %d kept changing during %d walks", st.Pid, maxRetries)
}

// walk follows parent links from st upwards. retry reports a race that
// invalidated the walk.
func (t *Tree) walk(st procfs.Stat, root Identity) (rel audit.Relation, retry bool, err error) {
	child := st
	for depth := 0; depth < maxDepth; depth++ {
		p := child.PPid
		switch {
		case p == t.supervisor.Pid:
			// The supervisor's children are the agent root and, because it
			// is a child subreaper, orphans from the agent's tree, which all
			// carry the agent's seccomp filter. A child without a filter was
			// started by the process hosting the supervisor (library use),
			// not by the agent.
			if root.Pid != 0 && child.Pid == root.Pid && child.StartTime == root.StartTime {
				return audit.RelOwned, false, nil
			}
			mode, filters, err := t.fs.Seccomp(child.Pid)
			if err != nil {
				if errors.Is(err, procfs.ErrNotFound) {
					return audit.RelForeign, true, nil
				}
				return audit.RelForeign, false, err
			}
			// More filters than the supervisor has: inside a container
			// whose runtime filters everything, only the agent's processes
			// carry paddock's filter on top.
			if mode == seccompModeFilter && filters > t.superFilters {
				return audit.RelOwned, false, nil
			}
			return audit.RelForeign, false, nil
		case root.Pid != 0 && p == root.Pid && !t.rootExited.Load():
			// Until the supervisor reaps the agent root (RootExited comes
			// first), its pid cannot name another process: a process whose
			// parent it is was started by the agent. This saves a stat read
			// on the hottest path, a signal to the agent's own child.
			return audit.RelOwned, false, nil
		case p == 0 && child.Pid != 1:
			// The kernel shows parent 0 for a process it is releasing (its
			// pid no longer alive) as well as for one whose parent lies
			// outside this PID namespace (kthreadd, an nsenter'd process).
			// Only the second is a fact about ownership: re-read, and walk
			// again if the process changed or went.
			c2, err := t.fs.Stat(child.Pid)
			if err != nil || c2.StartTime != child.StartTime || c2.PPid != 0 {
				return audit.RelForeign, true, nil
			}
			return audit.RelForeign, false, nil
		case p <= 1:
			return audit.RelForeign, false, nil
		}
		// The root and the supervisor's ancestors are recognized by pid and
		// start time, after the parent's stat is read: their pids may have
		// been reused since.
		pst, err := t.fs.Stat(p)
		if err != nil {
			if errors.Is(err, procfs.ErrNotFound) {
				return audit.RelForeign, true, nil
			}
			return audit.RelForeign, false, err
		}
		if pst.StartTime > child.StartTime {
			// A parent cannot start after its child: the parent pid was reused.
			return audit.RelForeign, true, nil
		}
		if _, ok := t.lease(pst); ok {
			return audit.RelOwned, false, nil
		}
		if root.Pid != 0 && pst.Pid == root.Pid && pst.StartTime == root.StartTime {
			return audit.RelOwned, false, nil
		}
		if start, ok := t.ancestors[p]; ok && start == pst.StartTime {
			// Above the supervisor: nothing the agent started lies this way.
			return audit.RelForeign, false, nil
		}
		child = pst
	}
	return audit.RelForeign, false, fmt.Errorf("ownership: ancestry of pid %d deeper than %d", st.Pid, maxDepth)
}

// Owned lists up to max processes the session owns right now, for
// messages that tell the agent what it may signal: the agent root first,
// then the others in pid order; total counts them all, so that a message
// can say how many it left out.
func (t *Tree) Owned(max int) (list []Identity, total int, err error) {
	var root *Identity
	err = t.ScanOwned(func(rel audit.Relation, st procfs.Stat) bool {
		total++
		id := IdentityOf(st)
		switch {
		case rel == audit.RelAgentRoot:
			root = &id
		case len(list) < max:
			list = append(list, id)
		}
		return true
	})
	if root != nil && max > 0 {
		list = append([]Identity{*root}, list...)
		if len(list) > max {
			list = list[:max]
		}
	}
	return list, total, err
}

// ScanOwned calls fn for every process the session owns now (the agent
// root included), in pid order, until fn returns false. Processes whose
// facts cannot be read are skipped: the scan lists, it does not decide.
func (t *Tree) ScanOwned(fn func(audit.Relation, procfs.Stat) bool) error {
	pids, err := t.fs.Pids()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		rel, st, err := t.Classify(pid)
		if err != nil || (rel != audit.RelOwned && rel != audit.RelAgentRoot) {
			continue
		}
		if !fn(rel, st) {
			break
		}
	}
	return nil
}
