package filter

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// Install loads prog as a seccomp filter on the calling thread only (no
// SECCOMP_FILTER_FLAG_TSYNC: the Go runtime's other threads must stay
// unfiltered, or a trapped runtime tgkill could block with nobody to answer)
// using seccomp(SECCOMP_SET_MODE_FILTER, flags, prog). It returns the fd the
// kernel yields: the notification listener with
// unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, else 0; on failure -1 and an error
// that wraps the errno (errors.Is works) and says what to do about it.
//
// The caller must have locked its OS thread (runtime.LockOSThread) and set
// no_new_privs (prctl PR_SET_NO_NEW_PRIVS) or hold CAP_SYS_ADMIN; Install
// does neither, because both are decisions about the thread's future that
// belong to the caller. Flags including TSYNC are refused. The filter stays
// for the thread's lifetime and is inherited by everything it clones and
// execs.
func Install(prog []unix.SockFilter, flags uint) (int, error) {
	if len(prog) == 0 || len(prog) > unix.BPF_MAXINSNS {
		return -1, fmt.Errorf("filter: program has %d instructions; the kernel accepts 1 to %d", len(prog), unix.BPF_MAXINSNS)
	}
	if flags&unix.SECCOMP_FILTER_FLAG_TSYNC != 0 {
		return -1, fmt.Errorf("filter: SECCOMP_FILTER_FLAG_TSYNC would filter every Go runtime thread; install on one locked thread instead")
	}
	fd, err := sys.SeccompSetModeFilter(prog, flags)
	if err != nil {
		return -1, fmt.Errorf("filter: seccomp(SECCOMP_SET_MODE_FILTER, flags %#x): %w%s", flags, err, installHint(err, flags))
	}
	return fd, nil
}

// installHint says what to do about a seccomp(2) failure.
func installHint(errno error, flags uint) string {
	switch {
	case errors.Is(errno, unix.EACCES):
		return " (set no_new_privs with prctl(PR_SET_NO_NEW_PRIVS, 1) on this thread first, or run with CAP_SYS_ADMIN)"
	case errors.Is(errno, unix.EBUSY) && flags&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0:
		return " (another seccomp notifier already supervises this process, and a filter chain takes only one listener: paddock run --backend auto falls back to its ptrace backend here)"
	case errors.Is(errno, unix.EINVAL):
		return " (this kernel rejects the program or one of the flags; user notification needs Linux 5.0+)"
	case errors.Is(errno, unix.ENOSYS):
		return " (this kernel has no seccomp(2); it needs CONFIG_SECCOMP_FILTER)"
	}
	return ""
}

// InstallListener installs prog with a notification listener through
// install (Install, or a caller's wrapper of it), with
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where the kernel has it (Linux
// 5.19+): once the supervisor has received a notification, the caller waits
// for the answer ignoring non-fatal signals, instead of restarting the call
// (a new notification) at every one. When the kernel rejects that flag
// (EINVAL), the listener is installed without it and unkillable is that
// first error; it is nil when the flag took.
func InstallListener(prog []unix.SockFilter, install func([]unix.SockFilter, uint) (int, error)) (fd int, unkillable, err error) {
	fd, err = install(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if errors.Is(err, unix.EINVAL) {
		unkillable = err
		fd, err = install(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	}
	return fd, unkillable, err
}
