package features

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/llaudit"
)

// build turns facts into a Report: one Item each, and the backend.
func build(f facts) Report {
	r := Report{Kernel: f.release, Machine: f.machine, Arch: f.arch, Probe: f.probe}
	major, minor, verOK := kernelVersion(f.release)
	add := func(id, name string, st Status, value, note string) {
		r.Items = append(r.Items, Item{ID: id, Name: name, Status: st, Value: value, Note: note})
	}

	switch {
	case f.unameErr != nil:
		add(IDKernel, "kernel", Unknown, "unknown", f.unameErr.Error())
	case !verOK:
		add(IDKernel, "kernel", Unknown, f.release+" ("+f.machine+")", "cannot read a version number from the release; version-based items are unknown")
	case !atLeast(major, minor, minMajor, minMinor):
		add(IDKernel, "kernel", Missing, f.release+" ("+f.machine+")", fmt.Sprintf("paddock needs Linux %d.%d+ (README, Requirements): expect the items below to be missing, and paddock run to refuse to start or enforce less", minMajor, minMinor))
	default:
		add(IDKernel, "kernel", OK, f.release+" ("+f.machine+")", "")
	}

	has := func(action string) bool {
		for _, a := range f.actions {
			if a == action {
				return true
			}
		}
		return false
	}
	actionsKnown := f.actionsErr == nil
	switch {
	case errors.Is(f.actionsErr, os.ErrNotExist):
		add(IDSeccompActions, "seccomp actions", Missing, "no "+actionsPath,
			"this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER) or is older than 4.14: paddock cannot enforce anything here")
	case f.actionsErr != nil:
		add(IDSeccompActions, "seccomp actions", Unknown, "unreadable", f.actionsErr.Error())
	default:
		add(IDSeccompActions, "seccomp actions", OK, strings.Join(f.actions, " "), "")
	}

	switch {
	case !actionsKnown:
		add(IDUserNotif, "user notification", Unknown, "unknown", "cannot tell without "+actionsPath)
	case has("user_notif"):
		add(IDUserNotif, "user notification", OK, "user_notif", "")
	default:
		add(IDUserNotif, "user notification", Missing, "no user_notif",
			"no SECCOMP_RET_USER_NOTIF ("+userNotifLinux+"): the seccomp backend (the default) cannot run; auto falls back to ptrace, which stops the agent at each trapped syscall and traces every process it starts")
	}
	switch {
	case !actionsKnown:
		add(IDRetTrace, "SECCOMP_RET_TRACE", Unknown, "unknown", "cannot tell without "+actionsPath)
	case has("trace"):
		add(IDRetTrace, "SECCOMP_RET_TRACE", OK, "trace", "")
	default:
		add(IDRetTrace, "SECCOMP_RET_TRACE", Missing, "no trace",
			"the ptrace backend cannot run: where no seccomp listener can be installed, paddock cannot enforce")
	}

	switch {
	case !verOK:
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", Unknown, "unknown", "decided by kernel version ("+continueLinux+"), which could not be read")
	case atLeast(major, minor, continueMajor, continueMinor):
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", OK, fmt.Sprintf("yes (kernel %d.%d is %d.%d+; by version, not probed)", major, minor, continueMajor, continueMinor), "")
	default:
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", Missing, fmt.Sprintf("no (kernel %d.%d is older than %d.%d; by version, not probed)", major, minor, continueMajor, continueMinor),
			"no SECCOMP_USER_NOTIF_FLAG_CONTINUE ("+continueLinux+"): the seccomp backend cannot let an allowed call run, so it cannot be used here")
	}

	p := f.probe
	switch {
	case p.Error != "":
		add(IDListener, "listener install", Unknown, "probe failed", "the listener probe failed, so whether a listener can be installed here is not known: "+p.Error)
	case p.Listener:
		add(IDListener, "listener install", OK, "yes (a throwaway child installed one)", "")
	default:
		add(IDListener, "listener install", Missing, listenerValue(p), listenerWhy(p)+": the seccomp backend cannot run here")
	}
	notTried := func(what string) (string, string) {
		if p.Error != "" {
			return "unknown", "the listener probe failed, so " + what + " was not tried"
		}
		return "not tried", "no listener could be installed, so " + what + " was not tried"
	}
	// flagItem is one listener flag the probe child tried (nil: not tried).
	flagItem := func(id, name string, ok *bool, errno, cost string) {
		switch {
		case ok == nil:
			v, n := notTried("the flag")
			add(id, name, Unknown, v, n)
		case *ok:
			add(id, name, OK, "yes", "")
		default:
			add(id, name, Missing, orNo(errno), cost)
		}
	}
	flagItem(IDWaitKillableRecv, "WAIT_KILLABLE_RECV", p.WaitKillableRecv, p.WaitKillableRecvErrno,
		"no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV ("+killableLinux+"): a signal to a process waiting for a decision (a Go agent's runtime preempts itself with SIGURG every few ms) interrupts and restarts the trapped syscall, and each restart is one more decision")
	flagItem(IDSyncWakeUp, "SYNC_WAKE_UP", p.SyncWakeUp, p.SyncWakeUpErrno,
		"no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP ("+syncWakeLinux+"): each decision costs an extra scheduler wake-up, ~30 us (a hot kill: 39.6 us instead of 5.4 us)")

	callItem := func(id string, err error, linux, cost string) {
		switch {
		case errors.Is(err, errNotTried):
			add(id, id, Unknown, "not tried", "needs a pidfd, and pidfd_open failed")
		case err == nil:
			add(id, id, OK, "yes", "")
		default:
			note := "no " + id + " (" + linux + "): " + cost
			if !errors.Is(err, unix.ENOSYS) {
				note = err.Error() + ": the kernel has it but refused (a seccomp filter or LSM above this process?); " + cost
			}
			add(id, id, Missing, errValue(err), note)
		}
	}
	callItem(IDPidfdOpen, f.pidfdOpen, "Linux 5.3+", "paddock run cannot start: it pins the agent and each target with a pidfd against PID reuse")
	callItem(IDPidfdSendSignal, f.pidfdSendSignal, "Linux 5.1+", "paddock forwards signals, runs paddock kill and re-checks pinned targets through pidfds; those fail")
	callItem(IDPidfdGetfd, f.pidfdGetfd, "Linux 5.6+", "nothing lost: paddock does not call it (the listener travels by SCM_RIGHTS)")

	if f.subreaper != nil {
		add(IDChildSubreaper, "child subreaper", Missing, errValue(f.subreaper),
			f.subreaper.Error()+": paddock run cannot start: the supervisor becomes a child subreaper so that daemons the agent double-forks stay in its ownership tree")
	} else {
		add(IDChildSubreaper, "child subreaper", OK, "yes", "")
	}

	const notUsed = "the agent runs without the kernel's wall behind the supervisor (a Landlock domain that keeps ptrace-class access, /proc/PID/mem included, and signals inside the agent's processes); the seccomp traps hold alone without "
	switch {
	case f.landlockErr == nil && f.landlockABI < 6:
		add(IDLandlock, "Landlock", Missing, fmt.Sprintf("ABI %d", f.landlockABI),
			"paddock's wall needs Landlock ABI 6 (Linux 6.12+: scopes, so that the agent's domain restricts no file access and mount(2) keeps working); "+notUsed+"Landlock")
	case f.landlockErr == nil:
		add(IDLandlock, "Landlock", OK, fmt.Sprintf("ABI %d", f.landlockABI),
			"paddock run starts the agent in a Landlock domain of its own: the kernel refuses it ptrace-class access (/proc/PID/mem, process_vm_*, ptrace, pidfd_getfd) and signals to anything it did not start, adopted processes getting theirs from the supervisor (--keep-caps: not); --strict-wall can also refuse it writes to /proc/PID and cgroup files")
	case errors.Is(f.landlockErr, unix.EOPNOTSUPP):
		add(IDLandlock, "Landlock", Missing, "EOPNOTSUPP", "Landlock is built in but not enabled (add landlock to the lsm= boot parameter); "+notUsed+"Landlock")
	case errors.Is(f.landlockErr, unix.ENOSYS):
		add(IDLandlock, "Landlock", Missing, "ENOSYS", "no Landlock (Linux 5.13+, CONFIG_SECURITY_LANDLOCK); "+notUsed+"Landlock")
	default:
		add(IDLandlock, "Landlock", Missing, errValue(f.landlockErr), f.landlockErr.Error()+"; "+notUsed+"Landlock")
	}

	r.Items = append(r.Items, wallSeenItem(f))

	switch {
	case f.cgroup2Err == nil:
		add(IDCgroup2, "cgroup v2", OK, "yes ("+cgroup2Path+")", "")
	case errors.Is(f.cgroup2Err, os.ErrNotExist):
		add(IDCgroup2, "cgroup v2", Missing, "no "+cgroup2Path, cgroup2Missing)
	default:
		add(IDCgroup2, "cgroup v2", Unknown, "unknown", f.cgroup2Err.Error()+"; "+cgroup2Unused)
	}

	switch {
	case f.arch != "amd64":
		add(IDIA32Emulation, "IA32 emulation", NotApplicable, "not applicable on "+f.arch, "an amd64 kernel option")
	case f.ia32.state == "on":
		add(IDIA32Emulation, "IA32 emulation", OK, "on ("+f.ia32.from+")", "i386 int 0x80 syscalls reach this kernel; paddock's filter traps that ABI too")
	case f.ia32.state == "off":
		add(IDIA32Emulation, "IA32 emulation", OK, "off ("+f.ia32.from+")", "")
	default:
		add(IDIA32Emulation, "IA32 emulation", Unknown, "unknown", "no readable kernel config ("+f.ia32.from+"); nothing depends on it: paddock's filter traps the i386 ABI either way")
	}

	ptraceOK, ptraceWhy := ptraceUsable(f)
	switch {
	case f.ptraceScopeErr != nil:
		add(IDPtrace, "ptrace", Unknown, "unknown", f.ptraceScopeErr.Error())
	case ptraceOK && f.ptraceScope < 0:
		add(IDPtrace, "ptrace", OK, "no Yama (ptrace_scope absent)", "")
	case ptraceOK:
		add(IDPtrace, "ptrace", OK, fmt.Sprintf("Yama ptrace_scope %d", f.ptraceScope), ptraceWhy)
	default:
		add(IDPtrace, "ptrace", Missing, fmt.Sprintf("Yama ptrace_scope %d", f.ptraceScope), ptraceWhy+": the ptrace backend cannot run")
	}

	switch {
	case f.seccompErr != nil:
		add(IDUnderSeccomp, "seccomp filters above", Unknown, "unknown", f.seccompErr.Error())
	case f.seccompMode == 0:
		add(IDUnderSeccomp, "seccomp filters above", OK, "none", "")
	case f.seccompMode == 1:
		add(IDUnderSeccomp, "seccomp filters above", Missing, "strict mode (Seccomp: 1)", "this thread is in seccomp strict mode: nothing can be installed")
	default:
		add(IDUnderSeccomp, "seccomp filters above", OK, fmt.Sprintf("%d (Seccomp: %d)", f.seccompFilters, f.seccompMode),
			"what those filters refuse is refused before paddock is asked; paddock's filter stacks on them and can only make things stricter")
	}

	switch {
	case p.Error != "":
		add(IDUnderListener, "no other listener", Unknown, "unknown", "the listener probe failed, so this is not known")
	case p.Listener:
		add(IDUnderListener, "no other listener", OK, "none above this process", "")
	case p.ListenerErrno == "EBUSY":
		add(IDUnderListener, "no other listener", Missing, "another listener supervises this process (EBUSY)",
			"paddock run under paddock run, or a sandbox that supervises with user notification: a filter chain takes one listener, so only the ptrace backend can run here")
	default:
		add(IDUnderListener, "no other listener", Unknown, "unknown", "the listener probe failed with "+listenerValue(p)+", not EBUSY, so this is not known")
	}

	r.Backend = pickBackend(f, actionsKnown && has("trace"), ptraceOK, ptraceWhy)
	r.Items = append(r.Items, bpfLSMItem(f.bpfLSM, r.Backend.Name))
	return r
}

// cgroup2Unused is what a cgroup v2 hierarchy is to paddock today. Its
// wall behind the supervisor is Landlock's (the landlock item says whether
// it is up), whatever cgroups the host has; fleet mode tells containers
// apart by /proc/PID/cgroup, which v1 gives too; --strict-wall seals
// cgroupfs of either version.
const cgroup2Unused = "nothing depends on it: paddock does not use cgroups to enforce anything (the kernel's wall behind the supervisor is Landlock's: see the Landlock item)"

// cgroup2Missing is the cgroup v2 item's note where there is none.
const cgroup2Missing = "/sys/fs/cgroup is not a cgroup v2 hierarchy (v1, hybrid, or not mounted); " + cgroup2Unused

// orNo is an item's value for a flag the kernel refused.
func orNo(errno string) string {
	if errno == "" {
		return "no"
	}
	return "no (" + errno + ")"
}

// listenerValue is what the listener item shows of a failed install.
func listenerValue(p ListenerProbe) string {
	if p.ListenerErrno != "" {
		return "no (" + p.ListenerErrno + ")"
	}
	return "no"
}

// listenerWhy says in words why no listener could be installed.
func listenerWhy(p ListenerProbe) string {
	switch p.ListenerErrno {
	case "EBUSY":
		return "another seccomp listener already supervises this process (EBUSY; a filter chain takes only one)"
	case "EINVAL":
		return "this kernel has no seccomp user notification (EINVAL; " + userNotifLinux + ")"
	case "EACCES":
		return "no_new_privs could not be set and there is no CAP_SYS_ADMIN (EACCES)"
	case "EPERM", "ENOSYS":
		return "seccomp(2) itself is refused here (" + p.ListenerErrno + "; a filter above this process, or a kernel without CONFIG_SECCOMP_FILTER)"
	}
	return "installing one failed: " + p.ListenerError
}

// wallSeenItem says whether a refusal of the kernel's wall reaches
// paddock: the kernel logs a Landlock domain's denials to audit (ABI 7),
// and paddock reads them where it may (root, auditing on, the initial
// network namespace). The probe makes one such denial and waits for its
// record.
func wallSeenItem(f facts) Item {
	const name = "kernel wall refusals seen"
	const silent = "a refusal of the kernel's wall behind the supervisor (another process's /proc/PID/mem or environ opened, a signal the Landlock scope refuses, --strict-wall's writes) is a bare EACCES or EPERM to the agent: no message, no journal record, and --strict and --report do not count it (docs/limits.md)"
	item := func(st Status, value, note string) Item {
		return Item{ID: IDWallSeen, Name: name, Status: st, Value: value, Note: note}
	}
	err := f.wallSeen
	switch {
	case errors.Is(err, errWallNotProbed):
		return item(Unknown, "not probed", err.Error())
	case f.landlockErr != nil || f.landlockABI < 6:
		return item(Missing, "no (no wall)", "paddock's agent runs in no Landlock domain here (the Landlock item), so no refusal of one is there to see")
	case err == nil:
		return item(OK, "yes (a probe's own Landlock denial came back)",
			"paddock run, as root, journals each refusal of the kernel's wall (wall_denied, rule kernel_wall), counts it for --strict and --report, and tells its caller when it is still running; each is also a record in the system's audit log, and, with no audit daemon, in the kernel's log (dmesg, rate-limited), where this probe left one too")
	case errors.Is(err, llaudit.ErrLandlockOld):
		return item(Missing, fmt.Sprintf("no (Landlock ABI %d)", f.landlockABI), "the kernel logs Landlock denials from ABI 7 (Linux 6.15): "+silent)
	case errors.Is(err, llaudit.ErrNoAudit):
		return item(Missing, "no (no audit)", "this kernel has no audit subsystem (CONFIG_AUDIT): "+silent)
	case errors.Is(err, llaudit.ErrNotPermitted):
		return item(Missing, "no (needs CAP_AUDIT_READ)", "reading the kernel's audit records needs CAP_AUDIT_READ, which root has: "+silent+"; the system's audit log still has them where auditing is on")
	case errors.Is(err, llaudit.ErrAuditOff):
		return item(Missing, "no (auditing is off)", "an audit daemon, or auditctl -e 1, turns it on (with no daemon the kernel then also prints each denial in its log, rate-limited): "+silent)
	case errors.Is(err, llaudit.ErrNoRecord):
		return item(Missing, "no (no record came)", err.Error()+": "+silent)
	}
	return item(Unknown, errValue(err), err.Error()+"; if no record reaches paddock, "+silent)
}
