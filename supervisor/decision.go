package supervisor

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
	"github.com/paddock-dev/paddock/vram"
)

// call is one trapped syscall under decision, the same for both backends:
// the request read from the caller, and the per-call state of the world it
// is decided against. It implements policy.World for that one decision.
//
// Its life, in order (Session.answer runs the middle):
//
//  1. liveWorld.read fills the request from the caller's memory;
//  2. mayWait says whether deciding it may wait on files or tools (then a
//     worker takes it over with a world of its own, moveTo);
//  3. policy.Decide asks the world, which pins every process it looks up;
//  4. pins taken from the loop's cache are checked (hitsHold), and the
//     decision is taken again from /proc when one went stale;
//  5. for the notify backend, the notification id is re-validated when the
//     decision read something of the caller and reports it;
//  6. an allowed target is re-validated (stillThere);
//  7. reset closes this decision's pins.
type call struct {
	w   *liveWorld
	req policy.Request
	// listener is the notify backend's listener and id the notification
	// (-1 and 0 for a ptrace stop, whose caller always waits).
	listener int
	id       uint64
	// looked holds this decision's lookups, with their pidfds (-1: none).
	looked []pinned
	// keep says whether this decision may add to the world's pin cache;
	// fresh makes lookups bypass it (a decision taken again, see hitsHold).
	keep, fresh bool
	// preset, when set, is the decision already taken (a refusal made
	// without asking policy: too many decisions waiting).
	preset *policy.Decision
	// callerRead records that the decision consulted something of the
	// caller (its /proc entries, memory, descriptors), which named the
	// caller only if it is still waiting: only then must the notify
	// backend re-check the notification id.
	callerRead bool
	// noLeases records that the session held no lease when the decision
	// began (ownership.Tree.Stable): every owned process is then inside
	// the agent's Landlock domain (deliver.go).
	noLeases bool
	// grp is the group Pgrp last found process grpOf in, in this decision:
	// a member whose session GroupOwned may ask about.
	grp, grpOf int
	// members are the processes of group membersOf as this decision listed
	// them (Group): a deputy delivers to those it decided, without listing
	// every process on the host again.
	members   []procfs.Stat
	membersOf int
	// names is the caller's PID namespace (translate), read only when
	// a pid argument is.
	names callerNames
	// wall is what was read of a walled call (readWall), and wallRead its
	// policy.Wall as read, before any fact was found: a decision taken
	// again starts from it (redecided counts those).
	wall      wallCall
	wallRead  policy.Wall
	redecided int
	// here says the call is decided on the loop that received it, which
	// takes nothing that may wait on a filesystem (wallhere.go); deferred
	// says it met something that might: nothing was carried out or
	// reported, and a worker decides it again.
	here, deferred bool
}

type pinned struct {
	t     policy.Target
	pidfd int
	// cached: the pidfd belongs to the pin cache, not to this decision.
	cached bool
	// hit: the facts came from the pin cache, unchecked until hitsHold,
	// after which a hit that is still looked at was found alive.
	hit bool
}

// read starts the decision of one trapped syscall of thread tid in the
// world's reusable call, reading from the caller what the decision needs
// (an exec's strings, the environment of a power call, the memory a
// pointer argument names). The pin cache changes here only, never while a
// decision holds its pins.
func (w *liveWorld) read(tid int, arch uint32, nr int32, args [6]uint64, listener int, id uint64) *call {
	req := policy.NewRequest(tid, arch, nr, args)
	sc, abi := req.Syscall, req.ABI
	req.AllowUnread = !w.strictExec
	c := w.begin(req, listener, id)
	switch sc {
	case filter.Execve, filter.Execveat:
		c.req.Exec = readExec(tid, sc, abi, args, w.buf[:])
	case filter.Reboot, filter.KexecLoad, filter.KexecFileLoad:
		c.req.Exec = &policy.Exec{Env: readEnviron(tid)}
	}
	addr, size := policy.PtrArg(sc, args)
	if size > 0 {
		if abi.PointerSize() == 4 {
			addr &= 0xffffffff
		}
		c.req.Mem, c.req.MemErr = readMem(tid, addr, w.buf[:size])
	}
	if c.req.Exec != nil || size > 0 {
		c.callerRead = true
	}
	if sc.Walled() {
		c.readWall(abi, args)
	}
	return c
}

// begin starts the decision of req in the world's reusable call, with
// nothing read of the caller yet.
func (w *liveWorld) begin(req policy.Request, listener int, id uint64) *call {
	c := &w.cur
	c.w, c.req, c.listener, c.id = w, req, listener, id
	c.keep, c.fresh, c.callerRead, c.preset = false, false, false, nil
	c.grp, c.grpOf = 0, 0
	c.members, c.membersOf = nil, 0
	epoch, stable := w.tree.Stable()
	c.noLeases = stable
	if w.pins != nil {
		c.keep = w.pins.sync(epoch, stable)
	}
	return c
}

// mayWait reports whether deciding c may wait on something other than
// /proc: an exec the guard looks at (it may stat the path) or a GPU
// workload (model files, GPU detection). Such a decision is taken off the
// loop that received it, so that no other decision waits behind it.
func (c *call) mayWait() bool {
	if c.req.Wall != nil {
		return true // resolves paths, and may connect or open on the caller's behalf
	}
	e := c.req.Exec
	if e == nil || e.Err != nil || (c.req.Syscall != filter.Execve && c.req.Syscall != filter.Execveat) {
		return false
	}
	return e.Watched // readExec asked policy.ExecNeedsEnv already
}

// moveTo hands c, read but not yet decided, over to world w (a worker's):
// the returned call owns nothing of the loop's world, whose reusable call
// serves the next notification. Nothing was looked up yet, so no pin moves.
func (c *call) moveTo(w *liveWorld) *call {
	req := c.req
	req.Mem = nil // points into the loop's scratch space; only exec calls move, and they have none
	return &call{w: w, req: req, listener: c.listener, id: c.id, looked: make([]pinned, 0, 4), callerRead: c.callerRead, noLeases: c.noLeases, wall: c.wall, wallRead: c.wallRead}
}

// decide runs steps 3 to 7 of c, and carries out what the supervisor does
// itself (deliver.go): r is the answer to send, and waiting is false when
// the caller stopped waiting (the answer must then not be sent, and
// nothing is reported).
func (c *call) decide() (d policy.Decision, r answer.Answer, waiting bool) {
	defer c.reset()
	defer c.names.close()
	if c.preset == nil && c.req.Wall != nil {
		d, r = c.decideWall()
		if c.deferred {
			return d, r, false
		}
		if c.listener >= 0 && report.Reports(d) && !seccomp.IDValid(c.listener, c.id) {
			// What the decision read named the caller only if it still
			// waits (as below); an answer to a caller gone is dropped by
			// the kernel, and a descriptor's is refused (ENOENT), so only
			// a report needs the check.
			if r.HasFd {
				unix.Close(r.Fd)
			}
			return d, r, false
		}
		return d, r, true
	}
	if c.preset != nil {
		d = *c.preset
	} else {
		said := c.req
		d = c.translateDecide()
		if !c.hitsHold() {
			// A process the decision knew from a cache (a target's pin, or
			// the caller's found in paddock's PID namespace) was reaped
			// since: its pid may name another process now. Decide again
			// from /proc.
			c.reset()
			c.req = said
			c.fresh = true
			d = c.translateDecide()
			c.fresh = false
		}
	}
	// Whatever the decision read of the caller by its pid named the caller
	// only if the caller is still waiting. That matters only for what the
	// decision will report (a journal record, a message on the caller's
	// stderr): an answer to a caller gone since is dropped by the kernel
	// (the notification id names that call alone), whatever it says. So a
	// decision that reports nothing, or that read nothing of the caller,
	// needs no NOTIF_ID_VALID.
	if c.listener >= 0 && c.callerRead && report.Reports(d) && !seccomp.IDValid(c.listener, c.id) {
		return d, r, false
	}
	if forceAllow && d.Refusal {
		// A test build only (forceallow.go): the kernel's wall alone.
		d.Allow, d.Refusal, d.Errno, d.Pin, d.Message = true, false, 0, 0, ""
	}
	if d.Allow && d.Pin != 0 && !c.stillThere(d.Pin) {
		d.Allow, d.Errno, d.Rule = false, syscall.ESRCH, audit.RuleNoSuchTarget
	}
	if d.Allow {
		return d, c.deliver(d), true
	}
	return d, answer.Refuse(d.Errno), true
}

// touch records that the decision read something of thread tid.
func (c *call) touch(tid int) {
	if tid == c.req.Tid {
		c.callerRead = true
	}
}

// reset closes the pidfds of this decision.
func (c *call) reset() {
	for _, p := range c.looked {
		if p.pidfd >= 0 && !p.cached {
			unix.Close(p.pidfd)
		}
	}
	c.looked = c.looked[:0]
}

// translateDecide reads c's pid arguments in its caller's namespace and
// decides it.
func (c *call) translateDecide() policy.Decision {
	if d, done := c.translate(); done {
		return d
	}
	return policy.Decide(c.req, c.world())
}

// hitsHold checks the pins this decision took from the loop's caches
// unchecked (the pin cache's, and the caller's in sameNS), all at once
// (liveWorld.sweep): true when each process is still there, so the facts
// it was decided on were true throughout. An exited one is dropped from its
// cache, and the caller must decide again with fresh lookups (its pid may
// name another process once it is reaped).
func (c *call) hitsHold() bool {
	caller := c.names.checked && c.names.pin >= 0
	hits := caller
	for i := 0; i < len(c.looked) && !hits; i++ {
		hits = c.looked[i].hit
	}
	if !hits {
		return true
	}
	c.w.sweep()
	ok := true
	for i := range c.looked {
		p := &c.looked[i]
		if p.hit && !c.w.pins.holds(p.t.Pid, p.pidfd) {
			p.pidfd = -1 // closed by the cache
			ok = false
		}
	}
	if caller && !c.w.sameNS.holds(c.req.Tid, c.names.pin) {
		c.names.pin = -1
		ok = false
	}
	return ok
}

// stillThere re-validates a pinned target: true while the process the pidfd
// was opened on has not been reaped, so its pid cannot have been reused.
func (c *call) stillThere(pid int) bool {
	for _, p := range c.looked {
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
			st, err := c.w.fs.Stat(pid)
			return err == nil && st.StartTime == p.t.StartTime
		}
		return !ownership.Reaped(p.pidfd)
	}
	return false
}

// pidfd returns the pin taken on pid by Lookup (-1: none).
func (c *call) pidfd(pid int) int { return pidfdOf(c.looked, pid) }

// Lookup implements policy.World.
func (c *call) Lookup(pid int) (policy.Target, error) {
	c.touch(pid)
	for _, p := range c.looked {
		if p.t.Pid == pid {
			return p.t, nil
		}
	}
	if c.w.pins != nil && !c.fresh {
		if p, ok := c.w.pins.byPid[pid]; ok {
			// Unchecked here: hitsHold checks it once the decision is made,
			// which costs one syscall where checking now would cost two.
			p.hit = true
			c.looked = append(c.looked, p)
			return p.t, nil
		}
	}
	p, err := c.w.lookup(pid)
	if err != nil {
		return p.t, err
	}
	if c.keep && p.t.Rel != audit.RelGone {
		p.cached = c.w.pins.put(p.t, p.pidfd)
	}
	c.looked = append(c.looked, p)
	return p.t, nil
}

// Pgrp implements policy.World: always asked now (getpgid, which costs
// far less than a stat line), since a process may change its group at any
// time.
func (c *call) Pgrp(pid int) (int, error) {
	c.touch(pid)
	pgrp, err := unix.Getpgid(pid)
	if errors.Is(err, unix.ESRCH) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("getpgid(%d): %w", pid, err)
	}
	c.grp, c.grpOf = pgrp, pid
	return pgrp, nil
}

// Sid implements policy.World, with getsid(2).
func (c *call) Sid(pid int) (int, error) {
	c.touch(pid)
	sid, err := unix.Getsid(pid)
	if errors.Is(err, unix.ESRCH) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("getsid(%d): %w", pid, err)
	}
	return sid, nil
}

// GroupOwned implements policy.World: a group is known to be all the
// caller's to signal, without listing it, when it lies in a session that
// only the agent's processes can be in. A process can join a session only
// by being born into it, and a session's id is its leader's pid, which
// stays allocated while any member lives. So:
//
//   - the agent root's session (the root was started as a session leader,
//     see sysProcAttr) holds nothing but the agent's processes until the
//     root is reaped; its own group holds the root itself, a lifeline to
//     its descendants, so that group is known only for the root;
//   - a session whose leader is alive and owned through the process tree
//     (no leases held: leases make ownership outlast a process) holds only
//     that leader's descendants.
//
// The group's session is asked of a member with getsid: the process Pgrp
// just asked about (kill(0) asks about the caller), or else the group's
// leader (a group's creator cannot leave its session while the group has
// members). Neither reads /proc; the leader of another session is looked
// up through the pin cache.
func (c *call) GroupOwned(pgid, caller int) bool {
	root := c.w.tree.RootSession()
	if root != 0 && pgid == root {
		return caller == root || c.ThreadOf(caller, root)
	}
	member := pgid
	if c.grpOf != 0 && c.grp == pgid {
		member = c.grpOf
	}
	sid, err := unix.Getsid(member)
	switch {
	case err != nil || sid <= 0:
		return false
	case sid == root:
		return true
	}
	if _, stable := c.w.tree.Stable(); !stable {
		return false
	}
	leader, err := c.Lookup(sid)
	if err != nil || leader.Rel != audit.RelOwned {
		return false
	}
	// Still the leader of that session (and so the process looked up).
	lsid, err := unix.Getsid(sid)
	return err == nil && lsid == sid
}

// ThreadOf implements policy.World.
func (c *call) ThreadOf(tid, pid int) bool {
	c.touch(tid)
	c.touch(pid)
	if tid == pid {
		return true
	}
	var st unix.Stat_t
	return unix.Stat(c.w.fs.Root+"/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid), &st) == nil
}

// Tgid implements policy.World.
func (c *call) Tgid(tid int) (int, error) {
	c.touch(tid)
	pid, err := c.w.fs.Tgid(tid)
	if errors.Is(err, procfs.ErrNotFound) {
		return 0, nil
	}
	return pid, err
}

// Group implements policy.World.
func (c *call) Group(pgid int) ([]policy.Target, error) {
	sts, err := c.w.fs.GroupMembers(pgid)
	if err != nil {
		return nil, err
	}
	c.members, c.membersOf = sts, pgid
	return c.w.classify(sts)
}

// FdPid implements policy.World.
func (c *call) FdPid(tid, fd int) (int, error) {
	c.touch(tid)
	return c.w.fs.FdTarget(tid, fd)
}

// TermPgrp implements policy.World.
func (c *call) TermPgrp(tid, fd int) (int, error) {
	c.touch(tid)
	return c.w.termPgrp(tid, fd)
}

// Stat implements policy.Lineage.
func (c *call) Stat(pid int) (ppid int, start uint64, found bool, err error) {
	c.touch(pid)
	st, err := c.w.fs.Stat(pid)
	if errors.Is(err, procfs.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	return st.PPid, st.StartTime, true, nil
}

// Dispositions implements policy.Lineage.
func (c *call) Dispositions(pid int) (caught, ignored uint64, err error) {
	return c.w.fs.Dispositions(pid)
}

// Terminal implements policy.World.
func (c *call) Terminal(tid, fd int) (policy.Term, error) {
	c.touch(tid)
	return c.w.terminal(tid, fd)
}

// SysAdmin implements policy.World, from /proc/TID/status (readable
// whoever the caller is, dumpable or not).
func (c *call) SysAdmin(tid int) (bool, error) {
	c.touch(tid)
	cr, err := c.w.fs.Creds(tid)
	if err != nil {
		return false, err
	}
	return cr.CapEff&(1<<unix.CAP_SYS_ADMIN) != 0, nil
}

// Owned implements policy.World.
func (c *call) Owned(max int) ([]policy.Target, int) { return c.w.ownedList(max) }

// world is the call as the world policy.Decide consults: all of it.
func (c *call) world() policy.World {
	return policy.World{Processes: c, Guard: c.w.guard, Sessions: c, Terminals: c, Execs: c, Lineage: c}
}

// VRAM implements policy.World.
func (c *call) VRAM() *vram.Budget {
	if c.w.vram == nil {
		return nil
	}
	return c.w.vram()
}

// Files implements policy.World: paths resolve as the caller would resolve
// them, and are read as untrusted input (vram.SafeFiles: regular files
// only, opened without blocking, read with a deadline and a bound).
func (c *call) Files(tid int) vram.Files {
	c.touch(tid)
	if c.w.files != nil {
		return c.w.files(tid)
	}
	w := c.w
	return vram.SafeFiles(func(p string) string { return w.resolve(tid, p) }, vram.ReadLimits{Slots: w.slots})
}

// Missing implements policy.World.
func (c *call) Missing(tid int, path string) bool {
	c.touch(tid)
	var st unix.Stat_t
	err := unix.Stat(c.w.resolve(tid, path), &st)
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// answer decides c and hands the decision to the session's pipeline
// (package report) before the answer is sent, so that a caller that exits
// right after its refusal cannot outrun its report (Wait flushes it): the
// answer r may go once after is closed (report.After; nil: at once), and
// not at all when the caller stopped waiting.
func (s *Session) answer(c *call) (r answer.Answer, after <-chan struct{}, waiting bool) {
	d, r, waiting := c.decide()
	if !waiting {
		return r, nil, false
	}
	return r, s.pipeline.Decided(report.Event{Caller: c.req.Tid, ABI: c.req.ABI.String(), Decision: d}), true
}
