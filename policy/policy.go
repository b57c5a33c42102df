// Package policy holds paddock's decision core: one pure function, Decide,
// that turns a trapped syscall (who called what, with which arguments) and a
// read-only view of the world (who owns which process) into allow or deny,
// with the message and journal fields that explain a refusal. Both backends
// (seccomp user notification and ptrace) call it; neither decides anything
// on its own.
package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/vram"

	"github.com/paddock-dev/paddock/internal/signame"
)

// Request is one trapped syscall as the kernel reported it.
type Request struct {
	// Tid is the calling thread, in the supervisor's PID namespace.
	Tid     int
	Syscall filter.Syscall
	// ABI is the entry ABI (x86_64, i386, x32, ...); Nr the syscall's
	// number in its table, for a call no table of this build knows
	// (Syscall is filter.Unknown).
	ABI  filter.ABI
	Nr   int32
	Args [6]uint64
	// Exec holds what the backend read from the caller for execve,
	// execveat (path, argv, envp) and the power syscalls (the caller's
	// environment); nil for the other syscalls.
	Exec *Exec
	// Mem is what the backend read from the caller's memory at the address
	// PtrArg names (an fcntl F_SETOWN_EX struct, an ioctl's owner int);
	// MemErr says why it could not be read (the call is then refused).
	Mem    []byte
	MemErr error
	// Root names the session's first process in messages: "" for the
	// agent itself (paddock run), or what it is elsewhere (fleet mode: a
	// container's first process).
	Root string
	// Names is the caller's PID namespace where it is not the front
	// end's own, and Said the arguments as the caller wrote them, in its
	// numbers; Args (and Mem) then hold the front end's (Translate). nil:
	// the caller's numbers are the front end's.
	Names Names
	Said  [6]uint64
	// Wall is what the front end read and found of a walled call
	// (filter.Syscall.Walled); nil for the others.
	Wall *Wall
	// AllowUnread lets an exec whose strings paddock may not read (Exec.Err
	// is ErrUnreadable: a non-dumpable caller) run, reported as
	// audit.ExecUnread, instead of refusing it as undecidable
	// (docs/limits.md; `paddock run --strict-exec` clears it).
	AllowUnread bool
}

// NewRequest is the request of a call of thread tid as the kernel reports
// it (seccomp_data's arch, nr and args), for every front end.
func NewRequest(tid int, arch uint32, nr int32, args [6]uint64) Request {
	sc, abi, known := filter.Lookup(arch, nr)
	if !known {
		sc = filter.Unknown
	}
	if abi.Arch == 0 {
		abi.Arch = arch
	}
	return Request{Tid: tid, Syscall: sc, ABI: abi, Nr: nr, Args: args}
}

// Pid is the process (or group, or thread) the call names by number, as
// the caller wrote it: argument filter.Syscall.PidArg, read as the kernel
// reads a pid_t (0 where the syscall names none by number).
func (r Request) Pid() int {
	if i, ok := r.Syscall.PidArg(); ok {
		return arg32(r, i)
	}
	return 0
}

// Thread is the thread of Pid's thread group a tgkill or
// rt_tgsigqueueinfo names (0 for other calls).
func (r Request) Thread() int {
	if i, ok := r.Syscall.ThreadArg(); ok {
		return arg32(r, i)
	}
	return 0
}

// ErrUnreadable is wrapped by Exec.Err when the kernel denies paddock the
// caller's memory (process_vm_readv and /proc/PID/mem both refused): the
// caller made itself non-dumpable (ssh-agent, gpg-agent, some sandboxes),
// or is another user's process that paddock has no privilege over.
var ErrUnreadable = errors.New("paddock may not read this process's memory (it is not dumpable)")

// PtrArg says which bytes of the caller's memory Decide needs for a
// syscall, so that both backends read the same thing: size bytes at addr
// (size 0: none).
func PtrArg(sc filter.Syscall, args [6]uint64) (addr uint64, size int) {
	switch cmd := uint32(args[1]); {
	case (sc == filter.Fcntl || sc == filter.Fcntl64) && cmd == filter.FSetownEx:
		return args[2], 8 // struct f_owner_ex { int type; pid_t pid; }
	case sc == filter.Ioctl && (cmd == filter.FIOSETOWN || cmd == filter.SIOCSPGRP):
		return args[2], 4 // int
	case sc == filter.Ioctl && cmd == filter.TIOCSWINSZ:
		return args[2], WinsizeLen // struct winsize, for Decision.Resize
	}
	return 0, 0
}

// Exec is an exec's path, argv and environment as read from the caller's
// memory (strings may hold any bytes), or the reason they could not be read.
type Exec struct {
	Path      string
	Argv      []string
	Env       []string
	Truncated bool  // the read stopped at a bound; what was read is decided on
	Err       error // the strings could not be read: the exec is refused
	// Watched records that the backend read the environment because the
	// decision looks past the ordinary exec (ExecNeedsEnv, or a path only
	// known later): the guard or the VRAM preflight will look at it, and
	// deciding may wait on files.
	Watched bool
}

// Target is who one process is: the facts that stay true for its whole
// life (its name as first seen aside), so that a world may answer Lookup
// from a pin it holds. What can change (the process group) is asked for
// separately, through World.Pgrp.
type Target struct {
	Pid       int
	Comm      string
	StartTime uint64
	Rel       audit.Relation
}

// World is what Decide consults, split by what a decision needs: every
// decision about another process asks Processes; the rest is asked only by
// the decisions that need it, and a front end that traps nothing needing
// a part leaves it nil (fleet mode decides no exec and no TIOCSIG). A
// decision that would need a part that is nil refuses as undecidable.
type World struct {
	Processes
	// Guard is the host policy for exec and power decisions.
	Guard guard.Policy
	// Sessions knows some groups to be wholly the caller's without
	// listing them (nil: groups are always listed).
	Sessions Sessions
	// Terminals reads terminals, for TIOCSIG and the terminal ioctls.
	Terminals Terminals
	// Execs reads what an exec decision looks at: the path, model files,
	// the GPU budget.
	Execs Execs
	// Lineage walks a caller's ancestry, for the rule that keeps the
	// processes between the agent root and a caller alive (nil: no such
	// rule; fleet mode, whose containers keep the kernel's semantics).
	Lineage Lineage
}

// Lineage says which processes stand between the agent and a caller: the
// harness behind the launchers in front of it (a node entry point that
// starts the native binary, a CLI that relaunches itself), the shell that
// runs a tool's command.
type Lineage interface {
	// Stat is pid's parent and pid's start time (with pid, its
	// identity); found is false when pid is gone. An error means the
	// facts could not be read.
	Stat(pid int) (ppid int, start uint64, found bool, err error)
	// Dispositions are the signals pid catches and those it ignores (bit
	// N-1 for signal N).
	Dispositions(pid int) (caught, ignored uint64, err error)
}

// Processes is the read-only view of processes every decision about
// another process consults. Implementations pin each process they look up
// (pid + start time, and a pidfd in the live backend) so that the backend
// can re-validate the decided target before answering.
type Processes interface {
	// Lookup describes pid; a process that does not exist has Rel Gone and
	// a nil error. An error means the facts could not be read.
	Lookup(pid int) (Target, error)
	// Pgrp returns the process group pid is in now (0 with a nil error when
	// there is no such process). An error means it could not be read.
	Pgrp(pid int) (int, error)
	// Sid returns the session pid is in now, as Pgrp does its group.
	Sid(pid int) (int, error)
	// ThreadOf reports whether thread tid belongs to process pid.
	ThreadOf(tid, pid int) bool
	// Tgid returns the process that thread tid belongs to (ErrNotFound-style
	// errors for a vanished thread are reported as Gone by returning 0, nil).
	Tgid(tid int) (int, error)
	// Group lists the members of process group pgid.
	Group(pgid int) ([]Target, error)
	// FdPid returns the pid that descriptor fd of thread tid (a pidfd) refers
	// to: -1 for a reaped process; an error wrapping syscall.EBADF when fd
	// is not open or not a pidfd (what the kernel answers then), another
	// error when that could not be read.
	FdPid(tid, fd int) (int, error)
	// Owned lists up to max owned processes, for messages: the agent root
	// first, then by pid; total counts every owned process.
	Owned(max int) (list []Target, total int)
}

// Sessions answers for process groups without listing them.
type Sessions interface {
	// GroupOwned reports whether every member of process group pgid may be
	// signalled by thread caller, known without listing the group: the
	// group lies in a session that only the agent's processes can be in
	// (see docs/limits.md). false means only "not known this way": the
	// members are then listed.
	GroupOwned(pgid, caller int) bool
}

// Terminals reads terminals, for TIOCSIG and the terminal ioctls.
type Terminals interface {
	// TermPgrp returns the foreground process group of the terminal behind
	// descriptor fd of thread tid (a pty master).
	TermPgrp(tid, fd int) (int, error)
	// Terminal says which terminal descriptor fd of thread tid reaches
	// and whose it is. An error wrapping syscall.EBADF means fd is not
	// open (what the kernel answers then); another, that it could not be
	// read.
	Terminal(tid, fd int) (Term, error)
	// SysAdmin reports whether thread tid holds CAP_SYS_ADMIN, which
	// TIOCSCTTY needs to steal a terminal from another session.
	SysAdmin(tid int) (bool, error)
}

// Term is what a terminal ioctl is decided on: the terminal a descriptor
// reaches and whose it is.
type Term struct {
	// Dev is the terminal's device number as the kernel encodes it
	// (TIOCGDEV: /dev/tty and a pty's master reach the terminal behind
	// them); 0 when the descriptor is not a terminal.
	Dev uint64
	// Name is the descriptor's path ("/dev/pts/3"), for messages; "" when
	// not known.
	Name string
	// Master: the descriptor is a pty's master, whose holder is the
	// terminal's other end (its emulator, as paddock is the session pty's).
	Master bool
	// Session: the session's own terminal, the pty paddock put between
	// the agent and the user (with --no-pty, the user's terminal the agent
	// shares).
	Session bool
	// Supervisor: a terminal paddock itself runs on (its standard
	// descriptors, its controlling terminal), and not the session's.
	Supervisor bool
	// Foreign lists processes the session does not own whose controlling
	// terminal it is (a few at most; read only when neither Master,
	// Session nor Supervisor holds), and ForeignTotal counts them all.
	Foreign      []Target
	ForeignTotal int
}

// Execs is what an exec decision reads of the caller's view of the host.
type Execs interface {
	// VRAM is the host's GPU memory budget; nil: no VRAM preflight. It is
	// only asked for GPU workloads (detection may take a while).
	VRAM() *vram.Budget
	// Files reads files as thread tid sees them (its root and working
	// directory), for estimators that look at model files.
	Files(tid int) vram.Files
	// Missing reports whether path does not exist for thread tid (resolved
	// from its root and working directory), so that execve would fail with
	// ENOENT.
	Missing(tid int, path string) bool
}

// groupOwned is Sessions.GroupOwned, false without Sessions.
func (w World) groupOwned(pgid, caller int) bool {
	return w.Sessions != nil && w.Sessions.GroupOwned(pgid, caller)
}

// errNotRead says a part of the world a decision needed is not there.
func errNotRead(what string) error {
	return fmt.Errorf("this front end does not read %s", what)
}

// Decision is Decide's answer.
type Decision struct {
	Allow bool
	// Errno is returned to the caller when Allow is false.
	Errno syscall.Errno
	Rule  audit.Rule
	// Refusal is true when the denial is a policy refusal that must be
	// reported (message, log, journal); a plain ESRCH for a vanished target is not.
	Refusal bool
	// Message is the one explanation shown to the agent, logged and journaled.
	Message string
	// Syscall, Signal and Target describe the decided call for the journal
	// (Target is the pid, or -pgid for a group, 0 when none applies).
	Syscall string
	Signal  int
	Target  int
	// Pin is the single process whose identity the backend must re-validate
	// before letting the syscall run (0: none).
	Pin int
	// OptIn names the opt-in variable that allowed a guarded exec or power
	// call ("" if none); every use is journaled as opt_in_used.
	OptIn string
	// Unread marks an exec allowed without its strings read (see
	// Request.AllowUnread); it is reported like an opt-in: journaled, not
	// shown to the caller.
	Unread bool
	// Action is what the journal records of a reported decision (a refusal,
	// an opt-in used, an exec allowed unread).
	Action audit.Action
	// Exec is the request's exec, for the journal's exec_denied and opt_in_used records.
	Exec *Exec
	// Resize says an allowed call sets the window size of the session's
	// own terminal to the struct winsize in Request.Mem: a front end that
	// relays that terminal to the user's carries it out itself, in order
	// with its copies of the user's size (terminal.Relay.AgentResize).
	Resize bool
}

// WinsizeLen is the size of the kernel's struct winsize (four unsigned
// shorts, the same in every ABI), which TIOCSWINSZ's argument points to.
const WinsizeLen = 8

// pidfdSignalProcessGroup is pidfd_send_signal's PIDFD_SIGNAL_PROCESS_GROUP
// flag (linux/pidfd.h, Linux 6.9+): signal the target's whole process group.
const pidfdSignalProcessGroup = 1 << 2

// PTRACE_TRACEME: the caller asks its parent to trace it.
const ptraceTraceme = 0

// arg32 reads argument i as the kernel's int: the low 32 bits, sign-extended.
// Both native (pid_t, int) and compat ABIs truncate this way.
func arg32(r Request, i int) int { return int(int32(uint32(r.Args[i]))) }

// Decide decides one trapped syscall. It performs no I/O of its own; all
// facts come from w.
func Decide(r Request, w World) Decision {
	d := decide(r, w)
	d.Action = ActionOf(r.Syscall, d)
	return d
}

// ActionOf is the journal action of decision d of syscall sc, when d is
// reported: the opt-in it used, or the kind of call it refused.
func ActionOf(sc filter.Syscall, d Decision) audit.Action {
	switch {
	case d.Unread:
		return audit.ExecUnread
	case !d.Refusal && d.OptIn != "":
		return audit.OptInUsed
	case sc == filter.Execve || sc == filter.Execveat:
		return audit.ExecDenied
	case sc == filter.Reboot || sc == filter.KexecLoad || sc == filter.KexecFileLoad:
		return audit.PowerDenied
	case sc == filter.Seccomp:
		return audit.SeccompDenied
	case sc == filter.Connect || sc == filter.Sendto || sc == filter.Socketcall:
		return audit.DeputyDenied
	case sc.Walled():
		return audit.WriteDenied
	}
	return audit.SignalDenied
}

// decide is Decide without the journal action.
func decide(r Request, w World) Decision {
	d := Decision{Syscall: r.Syscall.String()}
	if si, ok := r.Syscall.SignalArg(); ok {
		d.Signal = arg32(r, si)
		if d.Signal == 0 {
			// An existence probe delivers nothing; scripts with pid files rely on it.
			d.Allow, d.Rule = true, audit.RuleSignalZero
			return d
		}
	}
	if r.Syscall.Walled() {
		return decideWall(r, w, d)
	}
	switch r.Syscall {
	case filter.Kill:
		pid := r.Pid()
		switch {
		case pid == -1:
			return broadcast(r, w, d)
		case pid == 0:
			callerPgrp, err := callerGroup(r, w)
			if err != nil {
				return undecidable(r, w, d, err)
			}
			return decideGroup(r, w, d, callerPgrp)
		case pid < 0:
			return decideGroup(r, w, d, -pid)
		default:
			return decideProcess(r, w, d, pid)
		}
	case filter.RtSigqueueinfo:
		pid := r.Pid()
		if pid <= 0 {
			// The kernel signals exactly one process here; it answers ESRCH for pid <= 0.
			d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, pid
			return d
		}
		return decideProcess(r, w, d, pid)
	case filter.Tgkill, filter.RtTgsigqueueinfo:
		// The kernel itself checks that the thread belongs to tgid.
		return decideProcess(r, w, d, r.Pid())
	case filter.Tkill:
		return decideThread(r, w, d, r.Pid())
	case filter.PidfdSendSignal:
		flags := uint32(r.Args[3])
		pid, ok := pidfdTarget(r, w, &d, arg32(r, 0))
		if !ok {
			return d
		}
		if flags&pidfdSignalProcessGroup != 0 {
			pgrp, err := w.Pgrp(pid)
			if err != nil {
				return undecidable(r, w, d, err)
			}
			if pgrp == 0 {
				d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, pid
				return d
			}
			return decideGroup(r, w, d, pgrp)
		}
		return decideThread(r, w, d, pid)
	case filter.Ptrace:
		if r.Args[0] == ptraceTraceme {
			return decideTraceme(r, w, d)
		}
		return decideThread(r, w, d, r.Pid())
	case filter.ProcessVMWritev:
		return decideThread(r, w, d, r.Pid())
	case filter.PidfdGetfd:
		return decideByPidfd(r, w, d)
	case filter.Execve, filter.Execveat:
		return decideExec(r, w, d)
	case filter.Seccomp:
		return decideSeccomp(r, w, d)
	case filter.Fcntl, filter.Fcntl64:
		return decideOwner(r, w, d)
	case filter.Ioctl:
		return decideIoctl(r, w, d)
	case filter.Reboot, filter.KexecLoad, filter.KexecFileLoad:
		var env []string
		if r.Exec != nil {
			env = r.Exec.Env
		}
		return fromVerdict(r, d, guard.CheckPowerEnv(d.Syscall, env, w.Guard))
	}
	if r.Syscall.Affects() {
		return decideAffecting(r, w, d)
	}
	return notTrapped(r, d)
}

// notTrapped refuses a syscall this core does not know was trapped, rather
// than guess.
func notTrapped(r Request, d Decision) Decision {
	d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleNotTrapped, true
	d.Message = fmt.Sprintf("paddock refused %s (%s ABI) from pid %d: paddock traps this syscall but has no rule for it, so it fails closed. Way out: report this as a paddock bug.",
		describe(r, d), r.ABI, r.Tid)
	return d
}

// perf_event_open's flag that makes pid a cgroup descriptor
// (linux/perf_event.h).
const perfFlagPidCgroup = 1 << 2

// decideAffecting decides the calls that harm a process without a signal
// (filter.Affecting), aimed elsewhere than at the caller itself (the BPF
// program lets those run): the target is decided with the rules of
// kill(2) on the same process, group or user.
func decideAffecting(r Request, w World, d Decision) Decision {
	switch r.Syscall {
	case filter.Prlimit64:
		if r.Args[2] == 0 {
			// No new limit: only reads the target's, as prlimit --pid does.
			d.Allow, d.Rule, d.Target = true, audit.RuleSelf, r.Pid()
			return d
		}
		return decideThread(r, w, d, r.Pid())
	case filter.PerfEventOpen:
		pid := r.Pid()
		if pid == -1 || r.Args[4]&perfFlagPidCgroup != 0 {
			// Every process on a CPU, or a cgroup's: aimed at processes
			// paddock cannot all know to be owned.
			return refuseWide(r, w, d, "every process on a CPU, or of a cgroup")
		}
		return decideThread(r, w, d, pid)
	case filter.SchedSetaffinity, filter.SchedSetscheduler, filter.SchedSetparam, filter.SchedSetattr,
		filter.MigratePages, filter.MovePages:
		return decideThread(r, w, d, r.Pid())
	case filter.ProcessMadvise:
		return decideByPidfd(r, w, d)
	case filter.Setpriority, filter.IoprioSet:
		process, group, user := filter.PrioProcess, filter.PrioPgrp, filter.PrioUser
		if r.Syscall == filter.IoprioSet {
			process, group, user = filter.IoprioWhoProcess, filter.IoprioWhoPgrp, filter.IoprioWhoUser
		}
		who := r.Pid()
		switch arg32(r, 0) {
		case process:
			if who == 0 {
				who = r.Tid
			}
			return decideThread(r, w, d, who)
		case group:
			if who == 0 {
				pgrp, err := callerGroup(r, w)
				if err != nil {
					return undecidable(r, w, d, err)
				}
				who = pgrp
			}
			return decideGroup(r, w, d, who)
		case user:
			return refuseWide(r, w, d, fmt.Sprintf("every process of user %d", who))
		}
		// The kernel answers EINVAL for another "which".
		d.Errno, d.Rule = syscall.EINVAL, audit.RuleNoSuchTarget
		return d
	case filter.Vhangup:
		return decideHangup(r, w, d)
	}
	return notTrapped(r, d)
}

// refuseWide refuses a call aimed at a set of processes paddock does not
// list (a user's, a CPU's, a cgroup's): the set holds processes not owned
// by this session, paddock's own among them.
func refuseWide(r Request, w World, d Decision, whom string) Decision {
	d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleBroadcast, true
	d.Message = fmt.Sprintf("paddock refused %s of %s from %s: that reaches processes not owned by this session (the user's other programs, paddock itself). Way out: aim it at the agent's own processes by PID (owned: %s).",
		describe(r, d), whom, caller(r, w), ownedList(r, w))
	return d
}

// decideHangup decides vhangup(2): it hangs up the caller's controlling
// terminal, and the kernel sends SIGHUP (and SIGCONT) to the session on
// it, its leader included, so it is decided like a signal to every member
// of the caller's session (GroupOwned on the session, whose leader leads
// a group of the same id): allowed in a session of the agent's own led by
// an owned process, or by the agent root when the root asks; refused in the
// user's (`--no-pty`), and from a descendant of the agent root in the
// root's session, since the root is a lifeline against its descendants.
func decideHangup(r Request, w World, d Decision) Decision {
	d.Signal = int(syscall.SIGHUP)
	sid, err := w.Sid(r.Tid)
	if err == nil && sid == 0 {
		err = fmt.Errorf("caller thread %d vanished", r.Tid)
	}
	if err != nil {
		return undecidable(r, w, d, err)
	}
	d.Target = -sid
	if w.groupOwned(sid, r.Tid) {
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	}
	d.Errno, d.Refusal = syscall.EPERM, true
	if t, err := w.Lookup(sid); err == nil && t.Rel == audit.RelAgentRoot {
		d.Rule = audit.RuleLifeline
		d.Message = fmt.Sprintf("paddock refused vhangup from %s: it hangs up the agent's terminal, and the kernel's SIGHUP would reach the agent itself (pid %d, the session's leader), a critical session lifeline against its own descendants. Way out: run the command in a session of its own (setsid CMD) and hang up that session's terminal.",
			caller(r, w), sid)
		return d
	}
	d.Rule = audit.RuleGroup
	d.Message = fmt.Sprintf("paddock refused vhangup from %s: it hangs up the caller's terminal, and session %d on it is not this session's own (the user's shell and its jobs would get SIGHUP). Way out: run the agent on paddock's own terminal (without --no-pty), or close the terminal's descriptors instead.",
		caller(r, w), sid)
	return d
}

// decideSeccomp refuses a filter with a listener, the only seccomp(2)
// call the filter traps. Under the ptrace backend a SECCOMP_RET_USER_NOTIF
// filter of the agent's would take precedence over paddock's
// SECCOMP_RET_TRACE; under the seccomp backend the kernel refuses a second
// listener while paddock's lives, and the trap keeps a leftover of the
// agent's from installing one once it has closed (the call then fails with
// ENOSYS). The answer is EBUSY, the kernel's own for a second listener, so
// programs see the same thing under both backends. Any other use affects
// only the caller and is allowed; so is a call with no filter (a NULL
// program): libseccomp's probe of the kernel's flags
// (seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, NULL),
// made by every program that links it: podman, runc, crun) installs
// nothing, and the kernel answers it EFAULT (EINVAL for flags it does not
// take). The pointer is a register of the stopped call, which no other
// thread can change before it runs.
func decideSeccomp(r Request, w World, d Decision) Decision {
	if uint32(r.Args[0]) != filter.SeccompSetModeFilter || uint32(r.Args[1])&filter.SeccompFlagNewListener == 0 || r.Args[2] == 0 {
		d.Allow, d.Rule = true, audit.RuleSelf
		return d
	}
	d.Errno, d.Rule, d.Refusal = syscall.EBUSY, audit.RuleShadowListener, true
	d.Message = fmt.Sprintf("paddock refused seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER) from %s: "+
		"a seccomp listener of the agent's own could answer its process-control syscalls in paddock's place "+
		"(the kernel answers EBUSY to a second listener the same way while paddock's lives). Way out: run the sandbox without a listener of its own, or outside paddock.",
		caller(r, w))
	return d
}

// f_owner_ex types (linux/fcntl.h).
const (
	fOwnerTID  = 0
	fOwnerPID  = 1
	fOwnerPGRP = 2
)

// decideOwner decides who may become the owner of a descriptor (F_SETOWN,
// F_SETOWN_EX, FIOSETOWN, SIOCSPGRP): the kernel later signals the owner
// (SIGIO, or any signal chosen with F_SETSIG, SIGKILL included) on I/O, so
// setting an owner is aiming a signal, decided like kill(2) on the same
// target. Owner 0 clears it. The kernel pins the owner's struct pid when it
// is set, so a later pid reuse does not redirect the signal.
func decideOwner(r Request, w World, d Decision) Decision {
	owner, kind := arg32(r, 2), fOwnerPID
	if owner < 0 {
		owner, kind = -owner, fOwnerPGRP
	}
	if addr, size := PtrArg(r.Syscall, r.Args); size > 0 {
		if r.MemErr != nil || len(r.Mem) < size {
			return undecidable(r, w, d, fmt.Errorf("the owner at %#x was not read: %v", addr, r.MemErr))
		}
		// Every architecture paddock supports is little-endian (see filter).
		le := func(b []byte) int { return int(int32(binary.LittleEndian.Uint32(b))) }
		if size == 8 {
			kind, owner = le(r.Mem[0:4]), le(r.Mem[4:8])
		} else if owner = le(r.Mem); owner < 0 {
			owner, kind = -owner, fOwnerPGRP
		} else {
			kind = fOwnerPID
		}
	}
	if owner == 0 {
		d.Allow, d.Rule = true, audit.RuleSelf // no owner: nobody is signalled
		return d
	}
	switch kind {
	case fOwnerTID:
		return decideThread(r, w, d, owner)
	case fOwnerPID:
		return decideProcess(r, w, d, owner)
	case fOwnerPGRP:
		return decideGroup(r, w, d, owner)
	}
	// The kernel answers EINVAL for an unknown type.
	d.Errno, d.Rule = syscall.EINVAL, audit.RuleNoSuchTarget
	return d
}

// decideIoctl decides the terminal and socket commands the filter traps.
func decideIoctl(r Request, w World, d Decision) Decision {
	switch uint32(r.Args[1]) {
	case filter.TIOCSTI:
		d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleTerminalInput, true
		d.Message = fmt.Sprintf("paddock refused %s from %s: TIOCSTI types characters into a terminal's input queue, where the shell that reads that terminal (the user's, once the agent exits) runs them as commands. Way out: write to the program's standard input instead (a pipe, or a pty the agent opened itself); Linux 6.2+ can also forbid TIOCSTI for everyone (sysctl dev.tty.legacy_tiocsti=0).",
			describe(r, d), caller(r, w))
		return d
	case filter.TIOCSIG:
		// A pty master signals its slave's foreground process group.
		d.Signal = arg32(r, 2)
		if w.Terminals == nil {
			return undecidable(r, w, d, errNotRead("terminals"))
		}
		pgrp, err := w.Terminals.TermPgrp(r.Tid, arg32(r, 0))
		if err != nil {
			return undecidable(r, w, d, fmt.Errorf("the foreground process group behind descriptor %d: %w", arg32(r, 0), err))
		}
		if pgrp <= 0 {
			d.Errno, d.Rule = syscall.ESRCH, audit.RuleNoSuchTarget
			return d
		}
		return decideGroup(r, w, d, pgrp)
	case filter.FIOSETOWN, filter.SIOCSPGRP:
		return decideOwner(r, w, d)
	}
	if filter.IsTerminalCommand(uint32(r.Args[1])) {
		return decideTerminal(r, w, d)
	}
	return notTrapped(r, d)
}

// decideTerminal decides an ioctl that changes a terminal for everyone on
// it (filter.TerminalCommands). Allowed on a terminal that is the agent's
// own: the session's pty (the agent's descriptors, /dev/tty), a pty whose
// master the caller holds (the descriptor is the master), and one the
// agent opened itself (script, tmux, expect, a serial port), which no
// process outside the session has as its controlling terminal.
// Refused on the others, the user's terminal above all, which the agent
// can open by its path (/dev/pts/N, found in /proc/$PPID/stat): a terminal
// paddock runs on, or one that is the controlling terminal of a process
// the session does not own (the user's shell, in this or another window).
// A descriptor that is not a terminal is the kernel's to answer.
func decideTerminal(r Request, w World, d Decision) Decision {
	fd := arg32(r, 0)
	if w.Terminals == nil {
		return undecidable(r, w, d, errNotRead("terminals"))
	}
	if uint32(r.Args[1]) == filter.TIOCSCTTY {
		// Without stealing (argument 1, with CAP_SYS_ADMIN) the kernel
		// gives the caller, a session leader without one, only a terminal
		// that is no session's controlling terminal: never the user's,
		// which is the user's shell's. The caller need not be read (a
		// process starting its session, paddock's own fork among them, is
		// not dumpable yet).
		if arg32(r, 2) != 1 {
			d.Allow, d.Rule = true, audit.RuleSelf
			return d
		}
		if admin, err := w.Terminals.SysAdmin(r.Tid); err == nil && !admin {
			d.Allow, d.Rule = true, audit.RuleSelf
			return d
		}
	}
	t, err := w.Terminals.Terminal(r.Tid, fd)
	switch {
	case errors.Is(err, syscall.EBADF):
		d.Errno, d.Rule = syscall.EBADF, audit.RuleNoSuchTarget
		return d
	case err != nil:
		d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleUndecidable, true
		d.Message = fmt.Sprintf("paddock refused %s on descriptor %d from %s: paddock could not tell which terminal the descriptor is (%v), and refuses when it cannot decide: the call would change that terminal for everyone on it. Way out: retry; a process that made itself non-dumpable cannot be read by a paddock that is not root.",
			describe(r, d), fd, caller(r, w), err)
		return d
	case t.Dev == 0:
		d.Allow, d.Rule = true, audit.RuleSelf // not a terminal: the kernel answers
		return d
	case t.Master || t.Session || (!t.Supervisor && len(t.Foreign) == 0):
		d.Allow, d.Rule = true, audit.RuleOwned
		// Unread, the kernel answers (EFAULT) as it would.
		d.Resize = t.Session && !t.Master && uint32(r.Args[1]) == filter.TIOCSWINSZ && r.MemErr == nil && len(r.Mem) == WinsizeLen
		return d
	}
	whose := "a terminal paddock runs on: the user's"
	if !t.Supervisor {
		whose = "the controlling terminal of pid " + targetList(r, t.Foreign, max(t.ForeignTotal, len(t.Foreign)), maxListed) + ", outside this session"
	}
	name := t.Name
	if name == "" {
		// The kernel's encoding of a device number (new_encode_dev).
		name = fmt.Sprintf("terminal %d:%d", (t.Dev>>8)&0xfff, t.Dev&0xff|(t.Dev>>12)&0xfff00)
	}
	d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleTerminalControl, true
	d.Message = fmt.Sprintf("paddock refused %s on %s from %s: it is %s, and the call would change it for everyone on it (its settings, line discipline, exclusive mode, flow or size), and could leave it unusable after the agent exits. Way out: change the agent's own terminal instead (its standard descriptors, /dev/tty) or a pty the agent opened itself.",
		describe(r, d), name, caller(r, w), whose)
	return d
}

// ExecNeedsEnv reports whether deciding an exec of path with argv looks at
// its environment (for an opt-in, or for the VRAM estimate's variables). A
// backend may leave Exec.Env unread when it does not: the decision is the
// same either way.
func ExecNeedsEnv(path string, argv []string) bool {
	return guard.Watches(path, argv) || vram.IsGPUWorkload(argv)
}

// decideExec asks the guard about an exec whose strings the backend read.
func decideExec(r Request, w World, d Decision) Decision {
	d.Exec = r.Exec
	if r.Exec != nil && r.AllowUnread && errors.Is(r.Exec.Err, ErrUnreadable) {
		d.Allow, d.Unread, d.Rule = true, true, audit.RuleExecUnread
		return d
	}
	if r.Exec == nil || r.Exec.Err != nil || w.Execs == nil {
		err := errors.New("its path and arguments were not read")
		switch {
		case r.Exec != nil && r.Exec.Err != nil:
			err = r.Exec.Err
		case w.Execs == nil:
			err = errNotRead("the files an exec decision looks at")
		}
		d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleUndecidable, true
		d.Message = fmt.Sprintf("paddock refused %s from %s: paddock could not read what is being executed (%v), and refuses when it cannot decide. Way out: retry; if it persists, report it as a paddock bug with the command.",
			d.Syscall, caller(r, w), err)
		return d
	}
	c := guard.Command{Path: r.Exec.Path, Argv: r.Exec.Argv, Env: r.Exec.Env}
	// An execve of a path that does not exist fails with ENOENT whatever
	// it names (shells and execvp try every PATH entry): no refusal, no
	// opt-in record. The path is looked up only when that would change the
	// answer, once, and before the VRAM preflight's work.
	looked, missing := false, false
	enoent := func(v guard.Verdict) bool {
		if (v.Allow && v.OptIn == "") || r.Syscall != filter.Execve || c.Path == "" {
			return false
		}
		if !looked {
			looked, missing = true, w.Execs.Missing(r.Tid, c.Path)
		}
		return missing
	}
	gp := w.Guard
	v := guard.CheckCommand(c, gp)
	if !enoent(v) {
		v = WithVRAM(v, c.Argv, c.Env, w.Execs.VRAM, w.Execs.Files(r.Tid), gp.AllowOptIn)
	}
	if enoent(v) {
		d.Errno, d.Rule = syscall.ENOENT, audit.RuleNoSuchTarget
		return d
	}
	return fromVerdict(r, d, v)
}

// WithVRAM folds the VRAM preflight of one command into the guard's verdict
// v: a refusal stands; an over-budget GPU workload is refused; an opt-in that
// let one through is recorded when v records none. budget is asked for only
// when the command is a GPU workload (detection may be slow); nil means no
// preflight. paddock run (at exec) and paddock check both decide through it.
func WithVRAM(v guard.Verdict, argv, env []string, budget func() *vram.Budget, f vram.Files, allowOptIn bool) guard.Verdict {
	if !v.Allow || !vram.IsGPUWorkload(argv) {
		return v
	}
	b := budget()
	if b == nil {
		return v
	}
	pv, _, ok := vram.PreflightCommandFiles(argv, env, *b, f, allowOptIn)
	switch {
	case !ok:
		return v
	case !pv.Allow:
		return guard.Verdict{Rule: pv.Rule, Message: pv.Message}
	case pv.OptIn != "" && v.OptIn == "":
		return guard.Verdict{Allow: true, Rule: pv.Rule, Message: pv.Message, OptIn: pv.OptIn}
	}
	return v
}

// fromVerdict turns the guard's verdict into a decision.
func fromVerdict(r Request, d Decision, v guard.Verdict) Decision {
	d.Exec = r.Exec
	if v.Allow {
		d.Allow, d.Rule, d.OptIn = true, v.Rule, v.OptIn
		if d.Rule == "" {
			d.Rule = audit.RuleAllowedExec
		}
		return d
	}
	d.Allow, d.OptIn = false, ""
	d.Errno, d.Rule, d.Refusal, d.Message = syscall.EPERM, v.Rule, true, v.Message
	return d
}

// pidfdTarget resolves the process a pidfd argument refers to. ok=false
// means d already holds the answer.
func pidfdTarget(r Request, w World, d *Decision, fd int) (int, bool) {
	// /proc/TID/fdinfo shows the fd table the calling thread actually uses.
	pid, err := w.FdPid(r.Tid, fd)
	if errors.Is(err, syscall.EBADF) {
		// Not a pidfd: the kernel's own answer, so that a program probing
		// for pidfd support does not read EPERM as a missing privilege.
		d.Errno, d.Rule, d.Target = syscall.EBADF, audit.RuleNoSuchTarget, 0
		return 0, false
	}
	if err != nil {
		*d = undecidable(r, w, *d, fmt.Errorf("descriptor %d of pid %d is not a pidfd paddock can resolve: %w", fd, r.Tid, err))
		return 0, false
	}
	if pid <= 0 {
		// -1: the process behind the pidfd has been reaped; 0: not visible from here.
		if pid == -1 {
			d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, pid
			return 0, false
		}
		*d = undecidable(r, w, *d, fmt.Errorf("pidfd %d of pid %d refers to a process outside paddock's PID namespace", fd, r.Tid))
		return 0, false
	}
	return pid, true
}

// decideByPidfd decides a syscall aimed at the process behind the pidfd in
// its first argument (pidfd_getfd, process_madvise).
func decideByPidfd(r Request, w World, d Decision) Decision {
	pid, ok := pidfdTarget(r, w, &d, arg32(r, 0))
	if !ok {
		return d
	}
	return decideThread(r, w, d, pid)
}

// decideThread decides a syscall aimed at a thread id, by its process.
func decideThread(r Request, w World, d Decision, tid int) Decision {
	if tid <= 0 {
		d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, tid
		return d
	}
	pid, err := w.Tgid(tid)
	if err != nil {
		return undecidable(r, w, d, err)
	}
	if pid == 0 {
		d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, tid
		return d
	}
	return decideProcess(r, w, d, pid)
}

// wayVerb is how a message's way out names aiming the call elsewhere:
// "signal" for the signal paths, "aim prlimit64 at" and the like for the
// calls that harm without a signal.
func wayVerb(r Request) string {
	if r.Syscall.Affects() {
		return "aim " + r.Syscall.String() + " at"
	}
	return "signal"
}

// decideProcess decides a syscall aimed at one process.
func decideProcess(r Request, w World, d Decision, pid int) Decision {
	d.Target = pid
	if pid <= 0 {
		d.Errno, d.Rule = syscall.ESRCH, audit.RuleNoSuchTarget
		return d
	}
	t, err := w.Lookup(pid)
	if err != nil {
		if pid == r.Tid || w.ThreadOf(r.Tid, pid) {
			d.Allow, d.Rule = true, audit.RuleSelf
			return d
		}
		return undecidable(r, w, d, err)
	}
	d.Pin = pid
	switch {
	case t.Rel == audit.RelOwned:
		if dd, refused := decideAncestor(r, w, d, t); refused {
			return dd
		}
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	case t.Rel == audit.RelGone:
		d.Errno, d.Rule, d.Pin = syscall.ESRCH, audit.RuleNoSuchTarget, 0
		return d
	case pid == r.Tid || w.ThreadOf(r.Tid, pid):
		d.Allow, d.Rule = true, audit.RuleSelf
		return d
	}
	if t.Rel == audit.RelAgentRoot {
		// The agent is a lifeline only against its own descendants; the user
		// (paddock kill from outside) or the host program may stop it.
		caller, err := w.Lookup(r.Tid)
		if err == nil && caller.Rel != audit.RelOwned && caller.Rel != audit.RelGone {
			d.Allow, d.Rule = true, audit.RuleOwned
			return d
		}
	}
	d.Errno, d.Refusal, d.Pin = syscall.EPERM, true, 0
	switch {
	case t.Rel == audit.RelAgentRoot:
		d.Rule = audit.RuleLifeline
		root := r.Root
		if root == "" {
			root = "the agent itself"
		}
		d.Message = fmt.Sprintf("paddock refused %s of %s from %s: %s is a critical session lifeline: it is %s, and the signal came from one of its own descendants (a kill of $PPID, or a pkill -f or killall whose pattern matched its own command line, does this). Way out: %s its child processes by PID (owned: %s), or use a narrower pattern (pgrep -a PATTERN first).",
			describe(r, d), procName(r, pid, t.Comm), caller(r, w), pidSaid(r, pid), root, wayVerb(r), ownedList(r, w))
	case t.Rel.Lifeline():
		d.Rule = audit.RuleLifeline
		d.Message = fmt.Sprintf("paddock refused %s of %s from %s: %s is a critical session lifeline (%s); it is never owned by the session, whoever asks. Way out: %s the agent's own processes by PID (owned: %s).",
			describe(r, d), procName(r, pid, t.Comm), caller(r, w), pidSaid(r, pid), t.Rel, wayVerb(r), ownedList(r, w))
	default:
		d.Rule = audit.RuleNotOwned
		d.Message = fmt.Sprintf("paddock refused %s of %s from %s: %s is not owned by this session (neither the agent nor started by it). Active owned PIDs: %s. Way out: %s the processes the agent started by their PID, or, if the agent really must control this one, adopt it first: %s",
			describe(r, d), procName(r, pid, t.Comm), caller(r, w), pidSaid(r, pid), ownedList(r, w), wayVerb(r), adoptWay(r, pid))
	}
	return d
}

// decideAncestor refuses a signal that would end or stop an owned process
// standing between the agent root and the caller (an ancestor of the
// caller's): that process is the agent itself, as the root is, when a
// launcher started it (Codex's npm entry point, Gemini CLI's relaunch),
// and a tool's `pkill -f HARNESS` or `kill -9 $PPID` would end the
// session. What a signal does to the ancestor decides, with no list of
// harnesses:
//   - SIGKILL and SIGSTOP, which no process can catch, and the requests
//     to end (SIGTERM, pkill's and kill's default, SIGINT, SIGQUIT), which
//     a harness that catches them answers by ending: refused;
//   - the signals whose default is to be ignored, or to continue
//     (SIGCHLD, SIGURG, SIGWINCH, SIGCONT): allowed;
//   - any other (SIGHUP or SIGUSR1 to ask a parent to reload, SIGALRM,
//     the real-time signals, SIGTSTP): allowed when the ancestor catches
//     or ignores it, refused when its default action would end or stop
//     it. (CPython's test_signal has a child send its parent SIGHUP,
//     which the parent catches, and waits for it without a bound.)
//
// Only the signal calls: ptrace and the calls that harm without a signal
// stay decided on ownership (docs/limits.md). The walk is the caller's
// parents, stopped at the first that started before the target (a
// parent never starts after its child), so a signal to a child costs one
// read, of the caller's own stat line.
func decideAncestor(r Request, w World, d Decision, t Target) (Decision, bool) {
	if w.Lineage == nil {
		return d, false
	}
	if _, ok := r.Syscall.SignalArg(); !ok || ancestorHarmless(d.Signal) {
		return d, false
	}
	if d.Signal < 1 || d.Signal > 64 {
		return d, false // no signal: the kernel answers EINVAL
	}
	// The calling thread's stat line names its process's parent, and its
	// start time is no earlier than its process's: the walk needs no Tgid.
	up, err := isAncestor(w.Lineage, r.Tid, t)
	if err != nil {
		return undecidable(r, w, d, err), true
	}
	if !up {
		return d, false
	}
	ends := ancestorEnds(d.Signal)
	if !ends {
		caught, ignored, err := w.Lineage.Dispositions(t.Pid)
		if err != nil {
			return undecidable(r, w, d, err), true
		}
		bit := uint64(1) << (d.Signal - 1)
		if caught&bit != 0 || ignored&bit != 0 {
			return d, false
		}
	}
	why := "its default action for it would end or stop it"
	if ends {
		why = "it would end or stop it, whether it catches it or not"
	}
	d.Errno, d.Rule, d.Refusal, d.Pin = syscall.EPERM, audit.RuleLifeline, true, 0
	d.Message = fmt.Sprintf("paddock refused %s of %s from %s: %s is the agent itself: it stands between the agent's first process and the caller (a harness behind its launcher, or the shell running this command), and %s (a kill of $PPID, or a pkill -f or killall whose pattern matched the agent's own command line, does this). Way out: %s its child processes by PID (owned: %s), or use a narrower pattern (pgrep -a PATTERN first).",
		describe(r, d), procName(r, t.Pid, t.Comm), caller(r, w), pidSaid(r, t.Pid), why, wayVerb(r), ownedList(r, w))
	return d, true
}

// ancestorHarmless are the signals whose default action is to be ignored,
// or to continue a stopped process: harmless to an ancestor.
func ancestorHarmless(sig int) bool {
	switch syscall.Signal(sig) {
	case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGWINCH, syscall.SIGCONT:
		return true
	}
	return false
}

// ancestorEnds are the signals refused to an ancestor whatever its
// dispositions: the uncatchable ones and the requests to end.
func ancestorEnds(sig int) bool {
	switch syscall.Signal(sig) {
	case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT:
		return true
	}
	return false
}

// maxLineage bounds the walk up a caller's parents.
const maxLineage = 64

// isAncestor reports whether t is an ancestor of the process of thread
// pid: met walking its parents, by pid and start time, before a parent
// that started before t (none above it can be t).
func isAncestor(l Lineage, pid int, t Target) (bool, error) {
	if pid == t.Pid {
		return false, nil // itself (raise, kill of its own pid)
	}
	ppid, start, found, err := l.Stat(pid)
	if err != nil || !found {
		return false, err
	}
	if start < t.StartTime {
		return false, nil // t started after the caller: a child, never a parent
	}
	for cur, n := ppid, 0; cur > 0 && n < maxLineage; n++ {
		next, start, found, err := l.Stat(cur)
		if err != nil || !found {
			return false, err
		}
		if cur == t.Pid {
			return start == t.StartTime, nil
		}
		if start < t.StartTime {
			return false, nil
		}
		cur = next
	}
	return false, nil
}

// decideTraceme decides PTRACE_TRACEME: the caller offers itself to its
// parent as a tracee, which affects nobody else, except from the agent
// root, whose parent is the supervisor: the supervisor never acts as its
// tracer, so the root would hang at its next signal or exec stop.
func decideTraceme(r Request, w World, d Decision) Decision {
	pid, err := w.Tgid(r.Tid)
	if err != nil {
		return undecidable(r, w, d, err)
	}
	t, err := w.Lookup(pid)
	if err != nil {
		return undecidable(r, w, d, err)
	}
	if t.Rel != audit.RelAgentRoot {
		d.Allow, d.Rule = true, audit.RuleSelf
		return d
	}
	d.Target, d.Errno, d.Rule, d.Refusal = pid, syscall.EPERM, audit.RuleLifeline, true
	d.Message = fmt.Sprintf("paddock refused ptrace(PTRACE_TRACEME) from %s, the agent itself: its parent is the paddock supervisor, a critical session lifeline that never traces it, so the agent would hang at its next signal or exec. Way out: trace a program from a process the agent starts (strace -f CMD, gdb CMD), which PTRACE_TRACEME from that program's own parent serves.",
		caller(r, w))
	return d
}

// decideGroup decides kill(0) / kill(-pgid) / a process-group pidfd signal:
// allowed only when every member of the group may be signalled by the caller.
func decideGroup(r Request, w World, d Decision, pgid int) Decision {
	d.Target = -pgid
	if w.groupOwned(pgid, r.Tid) {
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	}
	members, err := w.Group(pgid)
	if err != nil {
		return undecidable(r, w, d, err)
	}
	if len(members) == 0 {
		d.Errno, d.Rule = syscall.ESRCH, audit.RuleNoSuchTarget
		return d
	}
	var foreign, owned []Target
	for _, m := range members {
		switch {
		case m.Rel == audit.RelGone:
		case m.Rel == audit.RelOwned:
			owned = append(owned, m)
		case m.Pid == r.Tid || w.ThreadOf(r.Tid, m.Pid):
		default:
			foreign = append(foreign, m)
		}
	}
	if len(foreign) == 0 {
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	}
	// The owned members come from the same listing: a refusal reads each
	// process once, not the group and then every owned process again.
	ownedMembers := "none"
	if len(owned) > 0 {
		ownedMembers = targetList(r, owned, len(owned), maxListed)
	}
	d.Errno, d.Rule, d.Refusal = syscall.EPERM, audit.RuleGroup, true
	d.Message = fmt.Sprintf("paddock refused %s of %s from %s: the group holds processes not owned by this session: %s. Way out: signal the group's owned members by PID (owned members: %s), or give the agent's jobs a process group of their own (setsid, or set -m in a shell).",
		describe(r, d), groupName(r, pgid), caller(r, w), targetList(r, foreign, len(foreign), maxListed), ownedMembers)
	return d
}

// broadcast refuses kill(-1): it addresses every process the caller may
// signal, and that is never only the session's own.
func broadcast(r Request, w World, d Decision) Decision {
	d.Target, d.Errno, d.Rule, d.Refusal = -1, syscall.EPERM, audit.RuleBroadcast, true
	d.Message = fmt.Sprintf("paddock refused %s of every process (pid -1) from %s: kill -1 addresses every process the caller may signal, which includes processes not owned by this session. Way out: signal the agent's own processes by PID (owned: %s), or their process group with kill -- -PGID when every member is owned.",
		describe(r, d), caller(r, w), ownedList(r, w))
	return d
}

// undecidable fails closed when the facts could not be read.
func undecidable(r Request, w World, d Decision, err error) Decision {
	d.Allow, d.Errno, d.Rule, d.Refusal, d.Pin = false, syscall.EPERM, audit.RuleUndecidable, true, 0
	d.Message = fmt.Sprintf("paddock refused %s from %s: paddock could not establish who owns the target (%v), and refuses when it cannot decide. Way out: retry; if it persists, signal the agent's own processes by PID (owned: %s).",
		describe(r, d), caller(r, w), err, ownedList(r, w))
	return d
}

func callerGroup(r Request, w World) (int, error) {
	pgrp, err := w.Pgrp(r.Tid)
	if err != nil {
		return 0, err
	}
	if pgrp == 0 {
		return 0, fmt.Errorf("caller thread %d vanished", r.Tid)
	}
	return pgrp, nil
}

// describe renders the call: "kill(SIGTERM)", "ptrace", "pidfd_send_signal(SIGKILL)",
// "fcntl(F_SETOWN)", "ioctl(TIOCSIG, SIGINT)".
func describe(r Request, d Decision) string {
	if _, ok := r.Syscall.SignalArg(); ok {
		return fmt.Sprintf("%s(%s)", d.Syscall, SignalName(d.Signal))
	}
	if _, _, ok := r.Syscall.ArgFilter(); ok {
		cmd := uint32(r.Args[1])
		name, known := commandNames[cmd]
		if !known {
			name = fmt.Sprintf("%#x", cmd)
		}
		if cmd == filter.TIOCSIG && r.Syscall == filter.Ioctl {
			return fmt.Sprintf("%s(%s, %s)", d.Syscall, name, SignalName(d.Signal))
		}
		return fmt.Sprintf("%s(%s)", d.Syscall, name)
	}
	if r.Syscall == filter.Unknown {
		return fmt.Sprintf("syscall %d", r.Nr)
	}
	return d.Syscall
}

// commandNames names the fcntl and ioctl commands the filter traps.
var commandNames = map[uint32]string{
	filter.FSetown: "F_SETOWN", filter.FSetownEx: "F_SETOWN_EX", filter.TIOCSTI: "TIOCSTI",
	filter.TIOCSIG: "TIOCSIG", filter.FIOSETOWN: "FIOSETOWN", filter.SIOCSPGRP: "SIOCSPGRP",
	filter.TCSETS: "TCSETS", filter.TCSETSW: "TCSETSW", filter.TCSETSF: "TCSETSF", filter.TCSETA: "TCSETA",
	filter.TCSETAW: "TCSETAW", filter.TCSETAF: "TCSETAF", filter.TCXONC: "TCXONC", filter.TIOCEXCL: "TIOCEXCL",
	filter.TIOCNXCL: "TIOCNXCL", filter.TIOCSCTTY: "TIOCSCTTY", filter.TIOCSWINSZ: "TIOCSWINSZ",
	filter.TIOCMBIS: "TIOCMBIS", filter.TIOCMBIC: "TIOCMBIC", filter.TIOCMSET: "TIOCMSET",
	filter.TIOCSSOFTCAR: "TIOCSSOFTCAR", filter.TIOCLINUX: "TIOCLINUX", filter.TIOCCONS: "TIOCCONS",
	filter.TIOCSSERIAL: "TIOCSSERIAL", filter.TIOCSETD: "TIOCSETD", filter.TIOCSBRK: "TIOCSBRK",
	filter.TIOCCBRK: "TIOCCBRK", filter.TCSETS2: "TCSETS2", filter.TCSETSW2: "TCSETSW2", filter.TCSETSF2: "TCSETSF2",
	filter.TIOCSRS485: "TIOCSRS485", filter.TIOCVHANGUP: "TIOCVHANGUP", filter.TIOCSLCKTRMIOS: "TIOCSLCKTRMIOS",
}

func commOf(w World, tid int) string {
	t, err := w.Lookup(tid)
	if err != nil || t.Comm == "" {
		return "?"
	}
	return t.Comm
}

// maxListed bounds the processes a message names.
const maxListed = 5

// ownedList names the session's owned processes for a message, the agent
// first (Processes.Owned).
func ownedList(r Request, w World) string {
	owned, total := w.Owned(maxListed)
	if len(owned) == 0 {
		return "none"
	}
	return targetList(r, owned, total, maxListed)
}

// targetList names up to max of ts, "pid 12 (comm)" each, and says how
// many of total it left out: "100 (agent), 101 (worker), and 7 more".
func targetList(r Request, ts []Target, total, max int) string {
	var b strings.Builder
	shown := 0
	for i, t := range ts {
		if i == max {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", said(r, t.Pid), t.Comm)
		shown++
	}
	if more := total - shown; more > 0 {
		fmt.Fprintf(&b, ", and %d more", more)
	}
	return b.String()
}

// SignalName returns "SIGTERM" for 15, "SIGRTMIN+3" for real-time signals,
// and "signal N" for anything else. The names are internal/signame's, the
// table the journal and paddock kill read too.
func SignalName(sig int) string {
	if name, ok := signame.Name(sig); ok {
		return name
	}
	return fmt.Sprintf("signal %d", sig)
}
