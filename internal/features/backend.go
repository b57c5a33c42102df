package features

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Backend is the backend `paddock run --backend auto` would pick.
type Backend struct {
	Name   string `json:"name"`   // "seccomp", "ptrace" or "none"
	Reason string `json:"reason"` // why, in one line
}

// ptraceUsable says whether the supervisor may trace its own child here, and
// a caveat or the reason it may not.
func ptraceUsable(f facts) (bool, string) {
	switch {
	case f.ptraceScopeErr != nil:
		return false, "cannot read " + yamaPath + ": " + f.ptraceScopeErr.Error()
	case f.ptraceScope >= 3:
		return false, "ptrace is disabled entirely (Yama ptrace_scope 3; only a reboot lowers it)"
	case f.ptraceScope == 2 && !f.capSysPtrace:
		return false, "Yama ptrace_scope 2 lets only CAP_SYS_PTRACE trace, and this process lacks it"
	case f.ptraceScope == 2:
		return true, "admin-only (ptrace_scope 2); this process has CAP_SYS_PTRACE"
	}
	return true, ""
}

// FallsBackToPtrace reports whether a failed listener install (the error
// of filter.Install or filter.InstallListener) means that no listener can
// be had here, which `paddock run --backend auto` answers with the ptrace
// backend: EBUSY (another listener already supervises this process; a
// filter chain takes one) or EINVAL (no user notification). Any other
// failure is an error of its own, and ptrace would meet it too. This is
// the rule both the supervisor's auto choice and pickBackend apply.
func FallsBackToPtrace(err error) bool {
	return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EINVAL)
}

// fallsBackErrno is FallsBackToPtrace for the errno name a ListenerProbe
// holds.
func fallsBackErrno(name string) bool {
	return name == unix.ErrnoName(unix.EBUSY) || name == unix.ErrnoName(unix.EINVAL)
}

// pickBackend is `paddock run --backend auto`'s choice: seccomp where the
// probe installed a listener, else ptrace where the listener failed in a
// way auto falls back from (FallsBackToPtrace; or the probe could not tell)
// and SECCOMP_RET_TRACE and ptrace are there, else none.
func pickBackend(f facts, retTrace, ptraceOK bool, ptraceWhy string) Backend {
	p := f.probe
	if p.Error == "" && p.Listener {
		why := "a seccomp listener can be installed here (probed in a throwaway child)"
		if p.SyncWakeUp != nil && !*p.SyncWakeUp {
			why += "; without SYNC_WAKE_UP each decision costs ~30 us more"
		}
		return Backend{Name: "seccomp", Reason: why}
	}
	if p.Error == "" && !fallsBackErrno(p.ListenerErrno) {
		return Backend{Name: "none", Reason: "paddock cannot enforce here: no seccomp listener: " + listenerWhy(p) +
			"; --backend auto falls back to ptrace only for EBUSY or EINVAL, and the ptrace backend installs a seccomp filter too"}
	}
	why := "the listener probe failed (" + p.Error + ")"
	if p.Error == "" {
		why = "no seccomp listener: " + listenerWhy(p)
	}
	if retTrace && ptraceOK {
		return Backend{Name: "ptrace", Reason: why + "; SECCOMP_RET_TRACE and ptrace are available"}
	}
	var not []string
	if !retTrace {
		if f.actionsErr != nil {
			not = append(not, "SECCOMP_RET_TRACE is unknown ("+actionsPath+" unreadable)")
		} else {
			not = append(not, "no SECCOMP_RET_TRACE in "+actionsPath)
		}
	}
	if !ptraceOK {
		not = append(not, ptraceWhy)
	}
	return Backend{Name: "none", Reason: "paddock cannot enforce here: " + why + "; and " + strings.Join(not, "; ")}
}
