// Package tracer is paddock's ptrace backend: where a seccomp listener
// cannot be installed (another listener already supervises the process, or
// the kernel lacks user notification), the agent runs under the same filter
// returning SECCOMP_RET_TRACE, and the supervisor traces it. Only trapped
// syscalls stop the tracee; everything else runs at BPF speed.
//
// The package translates ptrace stops into calls of a Decider and its
// answers back into the tracee's registers; it decides nothing itself.
// Every function here must be called from the one locked OS thread that
// seized the tracee: the kernel ties a tracee to its tracer thread.
package tracer

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sys"
)

// Options are the ptrace options every tracee gets: stop at SECCOMP_RET_TRACE,
// follow fork, vfork, clone and exec, and kill the tracees if the tracer
// dies (a tracee left in a seccomp stop by a dead tracer would otherwise run
// its syscall unchecked).
const Options = unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL

// Seize attaches to thread tid with Options, without stopping it.
func Seize(tid int) error {
	if err := ptrace(unix.PTRACE_SEIZE, tid, 0, Options); err != nil {
		return fmt.Errorf("ptrace(PTRACE_SEIZE, %d): %w%s", tid, err, seizeHint(err))
	}
	return nil
}

// seizeHint says what to do about a failed PTRACE_SEIZE.
func seizeHint(err error) string {
	if errors.Is(err, unix.EPERM) {
		return " (the process is already traced, or ptrace is disabled: see /proc/sys/kernel/yama/ptrace_scope, where 3 forbids it)"
	}
	return ""
}

// Call is one trapped syscall, as PTRACE_GET_SYSCALL_INFO reports it at a
// seccomp stop: the entry ABI (an AUDIT_ARCH_* value), the number as the
// filter saw it, and the raw arguments.
type Call struct {
	Arch uint32
	Nr   int32
	Args [6]uint64
}

// Decider answers a trapped call of thread tid: without Done, Errno 0
// lets the call run and an errno refuses it with that error; with Done the
// call does not run and returns -Errno, 0 included (the decider has done
// what it asked for, a signal the supervisor delivered itself). A decider that needs
// longer returns later true instead: tid then stays stopped, and the
// answer comes through Tracer.Answer, so that the other tracees' stops are
// handled meanwhile.
type Decider func(tid int, c Call) (r answer.Answer, later bool)

// Logger receives the tracer's own failures (nil: dropped).
type Logger func(tid int, what string, err error)

// Tracer handles the ptrace stops of one traced tree.
type Tracer struct {
	decide Decider
	log    Logger
	// tracees is every thread seen stopped, or announced by its parent's
	// fork or clone event, and not yet seen exiting, for Detach.
	tracees map[int]struct{}
	// held is every thread stopped in a trapped syscall whose answer comes
	// later (Answer), with the syscall's arch.
	held map[int]uint32
}

// New returns a tracer that asks decide about every trapped syscall.
func New(decide Decider, log Logger) *Tracer {
	if log == nil {
		log = func(int, string, error) {}
	}
	return &Tracer{decide: decide, log: log, tracees: make(map[int]struct{}), held: make(map[int]uint32)}
}

// Held is how many tracees wait for an answer through Answer.
func (t *Tracer) Held() int { return len(t.held) }

// Answer answers the trapped syscall that tid was held in (see Decider) and
// lets it run again. An answer for a thread that is not held (it was killed
// meanwhile) is dropped.
func (t *Tracer) Answer(tid int, r answer.Answer) {
	arch, ok := t.held[tid]
	if !ok {
		return
	}
	delete(t.held, tid)
	if _, alive := t.tracees[tid]; !alive {
		return
	}
	if r.Errno != 0 || r.Done {
		t.refuseOrKill(tid, arch, r.Errno)
	}
	t.check(tid, "PTRACE_CONT", unix.PtraceCont(tid, 0))
}

// Handle acts on one wait status of a traced thread and lets it run again:
// a seccomp stop is decided; a signal is delivered; a group-stop (SIGSTOP,
// SIGTSTP, SIGTTIN, SIGTTOU) is kept with PTRACE_LISTEN, so that the
// agent's own job control works and its shell sees the stop; fork, clone,
// exec and attach stops just continue.
func (t *Tracer) Handle(tid int, ws unix.WaitStatus) {
	if ws.Exited() || ws.Signaled() {
		delete(t.tracees, tid)
		delete(t.held, tid)
		return
	}
	if !ws.Stopped() {
		return
	}
	t.tracees[tid] = struct{}{}
	t.resume(tid, ws, false)
}

// resume answers one stop and restarts the tracee: with PTRACE_CONT (or
// PTRACE_LISTEN for a group-stop), or with PTRACE_DETACH when letting go.
func (t *Tracer) resume(tid int, ws unix.WaitStatus, detach bool) {
	sig := 0
	switch event := int(ws>>16) & 0xff; event {
	case unix.PTRACE_EVENT_SECCOMP:
		if t.answer(tid, detach) {
			return // held: Answer lets it run
		}
	case unix.PTRACE_EVENT_STOP:
		if isStopSignal(int(ws.StopSignal())) && !detach {
			// A group-stop: stay stopped until SIGCONT, visibly to the
			// real parent. (A tracee let go of in a group-stop stays
			// stopped, as it should.)
			t.check(tid, "PTRACE_LISTEN", ptrace(unix.PTRACE_LISTEN, tid, 0, 0))
			return
		}
		// An attach or PTRACE_INTERRUPT stop.
	case 0:
		sig = int(ws.StopSignal()) // signal-delivery-stop: deliver it
	case unix.PTRACE_EVENT_EXEC:
		// A thread other than the leader exec'd: it now has the leader's
		// id, and its old id is gone without an exit report.
		if former, err := unix.PtraceGetEventMsg(tid); err == nil && int(former) != tid {
			delete(t.tracees, int(former))
		}
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		// The child is traced already and reports its own first stop. It
		// is known from now on, not from that stop: a Detach that comes
		// before the stop is collected must still wait for it and let it
		// go, or the tracer's exit kills it (PTRACE_O_EXITKILL).
		if child, err := unix.PtraceGetEventMsg(tid); err == nil {
			t.tracees[int(child)] = struct{}{}
			if detach {
				t.interrupt(int(child))
			}
		}
	}
	if detach {
		t.check(tid, "PTRACE_DETACH", ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(sig)))
		delete(t.tracees, tid)
		return
	}
	t.check(tid, "PTRACE_CONT", unix.PtraceCont(tid, sig))
}

// check logs a failed ptrace request; ESRCH only means the tracee died
// (SIGKILL needs no tracer's consent).
func (t *Tracer) check(tid int, what string, err error) {
	if err != nil && !errors.Is(err, unix.ESRCH) {
		t.log(tid, what, err)
	}
}

// isStopSignal reports whether sig stops a process by default.
func isStopSignal(sig int) bool {
	switch unix.Signal(sig) {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return true
	}
	return false
}

// answer decides the syscall tid is stopped in and, for a refusal, turns it
// into a skipped syscall returning -errno. When the call cannot be read or
// the refusal cannot be written, the process is killed: letting an
// unchecked call run is not an option (fail closed). It reports true when
// the decider holds tid for a later Answer; while letting go (detach) no
// tracee may be held, and one the decider would hold is refused instead.
func (t *Tracer) answer(tid int, detach bool) (held bool) {
	info, err := syscallInfo(tid)
	if errors.Is(err, unix.ESRCH) {
		return false
	}
	if err != nil || info.Op != unix.PTRACE_SYSCALL_INFO_SECCOMP {
		if err == nil {
			err = fmt.Errorf("PTRACE_GET_SYSCALL_INFO op %d, want %d (seccomp)", info.Op, unix.PTRACE_SYSCALL_INFO_SECCOMP)
		}
		t.log(tid, "read the trapped syscall", err)
		t.refuseOrKill(tid, info.Arch, unix.EPERM)
		return false
	}
	r, later := t.decide(tid, Call{Arch: info.Arch, Nr: int32(info.Nr), Args: info.Args})
	if later && !detach {
		t.held[tid] = info.Arch
		return true
	}
	if later {
		r = answer.Refuse(unix.EAGAIN)
	}
	if r.Errno != 0 || r.Done {
		t.refuseOrKill(tid, info.Arch, r.Errno)
	}
	return false
}

// refuseOrKill skips the syscall with -errno (0: a call the decider did
// itself), or kills the caller when its registers cannot be rewritten.
func (t *Tracer) refuseOrKill(tid int, arch uint32, errno unix.Errno) {
	err := skipSyscall(tid, arch, errno)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return
	}
	t.log(tid, "refuse the trapped syscall; killing the caller instead", err)
	if tgid, terr := tgidOf(tid); terr == nil {
		_ = unix.Tgkill(tgid, tid, unix.SIGKILL)
	}
}

// Detach lets go of every tracee, answering the stop each is in first: a
// pending trapped syscall is still decided. Afterwards their trapped
// syscalls fail with ENOSYS (no tracer), as the notify backend's do once its
// listener closes. It waits for each tracee, so it must run on the
// reaping thread; the exits it collects are reaped.
func (t *Tracer) Detach() {
	for tid := range t.tracees {
		t.interrupt(tid)
	}
	for len(t.tracees) > 0 {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: nothing left
		}
		if !ws.Stopped() {
			delete(t.tracees, tid)
			continue
		}
		t.resume(tid, ws, true)
	}
}

// interrupt stops tracee tid for Detach. A tid that is no tracee of ours
// any more (ESRCH: it exited and was collected before it was known) is
// forgotten, since no stop of it will come to wait for.
func (t *Tracer) interrupt(tid int) {
	err := unix.PtraceInterrupt(tid)
	if errors.Is(err, unix.ESRCH) {
		delete(t.tracees, tid)
		return
	}
	t.check(tid, "PTRACE_INTERRUPT", err)
}

// syscallInfo reads the syscall tid is stopped in (Linux 5.3+).
func syscallInfo(tid int) (sys.SyscallInfoSeccomp, error) {
	info, err := sys.PtraceGetSyscallInfo(tid)
	if err != nil {
		return info, fmt.Errorf("ptrace(PTRACE_GET_SYSCALL_INFO, %d): %w", tid, err)
	}
	return info, nil
}

// ptrace issues one request whose data argument is an integer.
func ptrace(req, tid int, addr, data uintptr) error { return sys.Ptrace(req, tid, addr, data) }

// tgidOf returns the process thread tid belongs to.
func tgidOf(tid int) (int, error) { return procfs.Default().Tgid(tid) }
