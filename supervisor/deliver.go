package supervisor

import (
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
)

// An allowed signal reaches its target in one of three ways.
//
//   - The kernel delivers it (the call runs: CONTINUE, or a ptrace stop let
//     go). That is the rule for a target inside the agent's Landlock domain
//     when the domain scopes signals (LANDLOCK_SCOPE_SIGNAL): should the
//     target's pid be reused between the decision and the delivery, the new
//     process lies outside the domain, and the kernel refuses the signal
//     itself. It is also the rule for signals to the caller itself, to a
//     process group, and for pidfd_send_signal without a domain (the
//     caller's own pidfd pins its target).
//   - The supervisor delivers it as a deputy (deputy): through the pidfd it
//     pinned when deciding, after the kernel's own permission check redone
//     for the caller, and answers the call with the result. That is the rule
//     for a process outside the domain (an adopted one, which the kernel's
//     scope would refuse), and for every other process where the agent has
//     no domain that scopes signals, so that no pid can be reused between
//     the decision and the delivery.
//   - A probe (signal 0) trapped because the domain scopes signals
//     (filter.Options.Probes) is answered by the supervisor making the same
//     probe itself: the kernel would refuse the caller's probe of any
//     process outside the domain, and scripts wait on `kill -0 PID`.
//
// What the receiver sees of a deputy's signal: si_code SI_QUEUE instead of
// SI_USER (kill) or SI_TKILL (tkill, tgkill), since the kernel lets no
// process send another the codes of kill(2); si_pid is the caller's, as its
// receiver's PID namespace numbers it, and si_uid the caller's real uid. A
// caller's own siginfo (rt_sigqueueinfo, rt_tgsigqueueinfo,
// pidfd_send_signal with info) is passed on as it is. docs/limits.md says
// what programs make of SI_QUEUE.

// siQueue is SI_QUEUE (-1, as si_code's 32 bits), the si_code of a
// deputy's signal.
const siQueue = 0xffffffff

// pidfdThread is PIDFD_THREAD (O_EXCL): pidfd_open of a thread, Linux 6.9+.
const pidfdThread = unix.O_EXCL

// deliver carries out an allowed call: the answer to send, which lets the
// call run unless the supervisor did what it asked for itself (a signal
// through its pin, a setting of the session's pty's size through the
// relay).
func (c *call) deliver(d policy.Decision) answer.Answer {
	if d.Resize {
		if errno, ok := c.w.resize(c.req.Mem); ok {
			return answer.Completed(errno)
		}
		return answer.Continue()
	}
	if _, isSignal := c.req.Syscall.SignalArg(); !isSignal {
		return answer.Continue()
	}
	if d.Rule == audit.RuleSignalZero {
		if !c.w.probes {
			return answer.Continue() // not trapped as a probe: the kernel answers
		}
		return answer.Completed(c.probe())
	}
	if d.Rule != audit.RuleOwned {
		return answer.Continue()
	}
	if d.Pin == 0 {
		if d.Target < 0 && c.w.scoped {
			return c.deputyGroup(d, -d.Target)
		}
		return answer.Continue()
	}
	if c.w.scoped {
		if c.insideDomain(d.Pin) {
			return answer.Continue()
		}
	} else if c.req.Syscall == filter.PidfdSendSignal {
		return answer.Continue()
	}
	pidfd := c.pidfd(d.Pin)
	if pidfd < 0 {
		// No pidfds on this kernel (before 5.3, which has no Landlock
		// scopes either): the kernel delivers, as before pins.
		return answer.Continue()
	}
	return answer.Completed(c.deputy(d, pidfd))
}

// deputyGroup delivers an allowed signal to process group pgid when the
// group holds a process outside the agent's domain (an adopted one, or a
// child it had), which the kernel would skip: the supervisor signals each
// member itself, as deputy would one process, and the call succeeds when
// one member got it, as kill(2) of a group does. While the session has no
// leases every owned process is inside the domain, and the kernel
// delivers.
func (c *call) deputyGroup(d policy.Decision, pgid int) answer.Answer {
	if c.noLeases {
		return answer.Continue()
	}
	members := c.members
	if c.membersOf != pgid {
		var err error
		if members, err = c.w.fs.GroupMembers(pgid); err != nil {
			return answer.Completed(unix.EPERM) // no partial view decides a group
		}
	}
	outside := false
	for _, m := range members {
		if !c.insideDomain(m.Pid) {
			outside = true
			break
		}
	}
	if !outside {
		return answer.Continue()
	}
	r := answer.Completed(unix.ESRCH)
	delivered := false
	for _, m := range members {
		fd, err := unix.PidfdOpen(m.Pid, 0)
		if err != nil {
			continue // gone since the listing
		}
		// The pin names the listed member only if it has its start time
		// and is still in the group.
		if st, err := c.w.fs.Stat(m.Pid); err == nil && st.StartTime == m.StartTime && st.Pgrp == pgid {
			md := d
			md.Pin = m.Pid
			if e := c.deputy(md, fd); e == 0 {
				delivered = true
			} else if !delivered {
				r.Errno = e
			}
		}
		unix.Close(fd)
	}
	if delivered {
		r.Errno = 0
	}
	return r
}

// insideDomain reports whether process pid is in the agent's Landlock
// domain: every owned process is while the session has no leases (the
// agent started it, and the domain is inherited and never left); with
// leases, one that runs under the agent's seccomp filter is (filter and
// domain are taken together, before the agent's first exec).
func (c *call) insideDomain(pid int) bool {
	if c.noLeases {
		return true
	}
	cr, err := c.w.fs.Creds(pid)
	return err == nil && c.w.tree.CarriesAgentFilter(cr.SeccompFilters)
}

// deputy delivers the allowed signal of c to process pin (pinned by pidfd)
// or to its thread, as the caller would have, and returns the call's
// result.
func (c *call) deputy(d policy.Decision, pidfd int) unix.Errno {
	r := c.req
	sig := d.Signal
	if sig < 0 || sig > 64 {
		return unix.EINVAL
	}
	caller, err := c.w.fs.Creds(r.Tid)
	if err != nil {
		return unix.ESRCH // the caller is gone; nobody reads the answer
	}
	target, err := c.w.fs.Creds(d.Pin)
	if err != nil {
		return errnoOf(err)
	}
	if !c.mayKill(r.Tid, caller, d.Pin, target, sig) {
		return unix.EPERM
	}
	var info [siginfoSize]byte
	if addr, ok := siginfoArg(r.Syscall, r.Args); ok {
		// Read only now, for the one call that needs it: the caller waits,
		// and its memory is what it passed.
		if r.ABI.PointerSize() == 4 {
			addr &= 0xffffffff
		}
		var buf [siginfoSize]byte
		mem, err := readMem(r.Tid, addr, buf[:])
		if err != nil {
			return unix.EFAULT
		}
		info = callerSiginfo(mem, r.ABI)
		binary.LittleEndian.PutUint32(info[0:], uint32(sig)) // rt_sigqueueinfo takes the signal from its argument
	} else {
		senderPid := c.senderPid(r.Tid, caller, target)
		binary.LittleEndian.PutUint32(info[0:], uint32(sig))
		binary.LittleEndian.PutUint32(info[8:], siQueue)
		binary.LittleEndian.PutUint32(info[16:], uint32(senderPid))
		binary.LittleEndian.PutUint32(info[20:], caller.Uid[0])
	}
	si := sys.Siginfo(&info)
	switch r.Syscall {
	case filter.Tkill:
		return c.toThread(pidfd, d.Pin, r.Pid(), sig, si)
	case filter.Tgkill, filter.RtTgsigqueueinfo:
		return c.toThread(pidfd, d.Pin, r.Thread(), sig, si)
	}
	return errnoOf(unix.PidfdSendSignal(pidfd, unix.Signal(sig), si, 0))
}

// toThread delivers to thread tid of process pin: through a pidfd of the
// thread (Linux 6.9+), opened and then checked to be pin's while pin's own
// pidfd says pin has not been reaped; on older kernels through
// rt_tgsigqueueinfo, which checks that tid belongs to pin itself.
func (c *call) toThread(pidfd, pin, tid, sig int, si *unix.Siginfo) unix.Errno {
	if tid <= 0 {
		return unix.EINVAL
	}
	task := c.w.fs.Root + "/" + strconv.Itoa(pin) + "/task/" + strconv.Itoa(tid)
	tfd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != nil {
		if !errors.Is(err, unix.EINVAL) {
			return errnoOf(err)
		}
		if ownership.Reaped(pidfd) {
			return unix.ESRCH
		}
		return errnoOf(sys.RtTgsigqueueinfoWith(pin, tid, sig, si))
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if unix.Stat(task, &st) != nil || ownership.Reaped(pidfd) {
		return unix.ESRCH // not a thread of pin (any more): the kernel's answer to tgkill
	}
	return errnoOf(unix.PidfdSendSignal(tfd, unix.Signal(sig), si, 0))
}

// mayKill is the kernel's permission check for a signal from thread
// callerTid to process pid (kernel/signal.c check_kill_permission and
// kill_ok_by_cred), redone because the supervisor, which may hold more
// privilege than the caller, delivers it: a real or effective uid of the
// caller equal to the target's real or saved uid; or CAP_KILL in the
// target's user namespace (taken as: the caller's effective set has it and
// the caller is in the target's user namespace or in the supervisor's, of
// which every namespace the agent can make descends); or SIGCONT within
// one session. Other security modules' signal rules (AppArmor, SELinux)
// are not redone: docs/limits.md.
func (c *call) mayKill(callerTid int, caller procfs.Creds, pid int, target procfs.Creds, sig int) bool {
	if killByUid(caller, target) {
		return true
	}
	if caller.CapEff&(1<<unix.CAP_KILL) != 0 {
		cns, err1 := c.w.fs.Namespace(callerTid, "user")
		tns, err2 := c.w.fs.Namespace(pid, "user")
		sns, err3 := c.w.fs.Namespace(0, "user")
		if err1 == nil && err2 == nil && err3 == nil && (cns == tns || cns == sns) {
			return true
		}
	}
	if sig == int(unix.SIGCONT) {
		cs, err1 := unix.Getsid(callerTid)
		ts, err2 := unix.Getsid(pid)
		return err1 == nil && err2 == nil && cs == ts
	}
	return false
}

// killByUid is kill_ok_by_cred's uid rule: the caller's real or effective
// uid is the target's real or saved uid.
func killByUid(caller, target procfs.Creds) bool {
	ruid, euid := caller.Uid[0], caller.Uid[1]
	return euid == target.Uid[2] || euid == target.Uid[0] || ruid == target.Uid[2] || ruid == target.Uid[0]
}

// senderPid is the caller's process id as the target's PID namespace
// numbers it, which is what the kernel puts in si_pid: the NSpid entry at
// the target's depth, or 0 when the caller lies above the target's
// namespace (invisible from it, as the kernel then says too).
func (c *call) senderPid(tid int, caller, target procfs.Creds) int {
	ns := caller.NSpid
	if caller.Tgid != tid {
		// A thread's NSpid lists its thread ids; si_pid names the process.
		p, err := c.w.fs.Creds(caller.Tgid)
		if err != nil {
			return 0
		}
		ns = p.NSpid
	}
	depth := len(target.NSpid)
	if depth == 0 || len(ns) < depth {
		return 0
	}
	return ns[depth-1]
}

// siginfoSize is the size of siginfo_t under every ABI.
const siginfoSize = sys.SiginfoSize

// siginfoArg is where the siginfo a call queues lies in the caller's
// memory: rt_sigqueueinfo's and pidfd_send_signal's third argument (NULL:
// none), rt_tgsigqueueinfo's fourth.
func siginfoArg(sc filter.Syscall, args [6]uint64) (uint64, bool) {
	switch sc {
	case filter.RtSigqueueinfo:
		return args[2], true
	case filter.PidfdSendSignal:
		return args[2], args[2] != 0
	case filter.RtTgsigqueueinfo:
		return args[3], true
	}
	return 0, false
}

// narrow reports whether ABI abi (filter's names) lays siginfo_t out with
// 32-bit fields: i386 and AArch32 (x32 uses the native layout).
func narrow(abi filter.ABI) bool { return abi.Compat }

// callerSiginfo is the siginfo a caller handed to rt_sigqueueinfo,
// rt_tgsigqueueinfo or pidfd_send_signal, in the supervisor's layout: a
// 32-bit caller's (i386, x32 uses the native one, AArch32) has its
// sender fields 4 bytes earlier and a 4-byte value, converted as the
// kernel does for the _rt layout of user-sent codes.
func callerSiginfo(mem []byte, abi filter.ABI) (info [siginfoSize]byte) {
	switch {
	case narrow(abi):
		copy(info[0:12], mem[0:12])   // signo, errno, code
		copy(info[16:20], mem[12:16]) // pid
		copy(info[20:24], mem[16:20]) // uid
		copy(info[24:28], mem[20:24]) // sigval, its int
	default:
		copy(info[:], mem)
	}
	return info
}

// probe answers a probe (signal 0) by making it from the supervisor: 0 when
// the target exists (a zombie included), ESRCH when it does not, and the
// kernel's other answers (EPERM where the supervisor itself may not signal
// it, EINVAL, EBADF) as they come. Pids are the caller's, as for every
// decision (docs/limits.md).
func (c *call) probe() unix.Errno {
	r := c.req
	a0 := r.Pid()
	switch r.Syscall {
	case filter.Kill:
		if a0 == 0 {
			st, err := c.w.fs.Stat(r.Tid)
			if err != nil {
				return unix.ESRCH
			}
			return errnoOf(unix.Kill(-st.Pgrp, 0))
		}
		return errnoOf(unix.Kill(a0, 0))
	case filter.RtSigqueueinfo:
		if a0 <= 0 {
			return unix.ESRCH
		}
		return errnoOf(unix.Kill(a0, 0))
	case filter.Tgkill, filter.RtTgsigqueueinfo:
		return errnoOf(unix.Tgkill(a0, r.Thread(), 0))
	case filter.Tkill:
		if a0 <= 0 {
			return unix.EINVAL
		}
		return errnoOf(sys.Tkill(a0, 0))
	case filter.PidfdSendSignal:
		flags := uint32(r.Args[3])
		if flags&^(unix.PIDFD_SIGNAL_THREAD|unix.PIDFD_SIGNAL_THREAD_GROUP|unix.PIDFD_SIGNAL_PROCESS_GROUP) != 0 {
			return unix.EINVAL
		}
		pid, err := c.FdPid(r.Tid, int(int32(uint32(r.Args[0])))) // a pidfd, not a pid
		switch {
		case err != nil:
			return errnoOf(err) // EBADF for what is not a pidfd
		case pid < 0:
			return unix.ESRCH
		case pid == 0:
			return unix.EINVAL // a process outside this PID namespace
		}
		if flags&unix.PIDFD_SIGNAL_PROCESS_GROUP != 0 {
			pg, err := unix.Getpgid(pid)
			if err != nil {
				return errnoOf(err)
			}
			return errnoOf(unix.Kill(-pg, 0))
		}
		return errnoOf(unix.Kill(pid, 0))
	}
	return unix.ENOSYS
}

// errnoOf is err's errno (0 for nil; ESRCH for a process /proc no longer
// shows; EPERM, failing closed, for anything else).
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, procfs.ErrNotFound) {
		return unix.ESRCH
	}
	return unix.EPERM
}
