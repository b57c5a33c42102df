package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// The kernel's own wall behind the supervisor: the agent starts in a
// Landlock domain of its own. A process in a Landlock domain may not
// ptrace, nor open /proc/PID/mem or other ptrace-guarded files of, nor
// process_vm_* or pidfd_getfd into, any process outside its domain, by
// whatever path the call comes (io_uring included), whatever it holds in
// capabilities. Every process the agent starts inherits the domain; the
// supervisor, the user's processes and adopted processes stay outside it.
//
// The ruleset handles no filesystem or network access: a domain that
// handles filesystem rights also forbids mount(2), which root agents and
// rootless containers (bwrap, podman) inside the agent need. A ruleset must
// restrict something to exist, and the least of what Landlock offers is the
// abstract unix socket scope (Landlock ABI 6, Linux 6.12): the agent may
// not connect to abstract sockets that processes outside its domain bound
// (X11 clients fall back to the socket file; the session bus lives in
// /run/user).
//
// Signals are scoped too (LANDLOCK_SCOPE_SIGNAL, the same ABI): the kernel
// refuses every signal from the agent's processes to a process outside the
// domain (SIGIO and SIGURG of a file owner included), whatever the
// supervisor decided. Two things then come to the supervisor instead
// (deliver.go): a signal to an adopted process, which lives outside the
// domain and which the supervisor delivers itself after deciding; and a
// probe (signal 0) of a process outside the domain, which the filter then
// traps and the supervisor answers.

// landlockScopes is what the agent's ruleset restricts.
const landlockScopes = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL

// landlockMinABI is the Landlock ABI that has scopes.
const landlockMinABI = 6

// errLandlockOld says the kernel's Landlock lacks scopes.
var errLandlockOld = errors.New("Landlock before ABI 6 (Linux 6.12) has no scope to restrict without also forbidding mount(2)")

// enterLandlockDomain puts the calling thread, which is about to start the
// agent, in a Landlock domain of its own. With keepCaps, or where the
// kernel has no Landlock or one without scopes, it returns an error
// landlockMissing recognizes: the seccomp traps then hold alone.
func enterLandlockDomain(keepCaps bool) error {
	if err := landlockReady(keepCaps); err != nil {
		return err
	}
	err := sys.LandlockRestrictSelf(landlockScopes)
	if errors.Is(err, unix.EPERM) {
		// Neither CAP_SYS_ADMIN nor no_new_privs: set the latter, as the
		// filter's install does.
		if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
			return fmt.Errorf("landlock: prctl(PR_SET_NO_NEW_PRIVS): %w", perr)
		}
		err = sys.LandlockRestrictSelf(landlockScopes)
	}
	if err != nil {
		return fmt.Errorf("landlock: landlock_restrict_self: %w", err)
	}
	return nil
}

// errKeepCaps is why an agent started with --keep-caps is outside a domain:
// it asked for the access a root agent has, ptrace of anything included.
var errKeepCaps = errors.New("--keep-caps: the agent starts without it, as without the rest of the hardening")

// landlockReady says why the agent will not enter a Landlock domain (nil:
// it will): --keep-caps, or a kernel without Landlock or without scopes.
func landlockReady(keepCaps bool) error {
	if keepCaps {
		return fmt.Errorf("landlock: %w", errKeepCaps)
	}
	abi, err := sys.LandlockABI()
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if abi < landlockMinABI {
		return fmt.Errorf("landlock: ABI %d: %w", abi, errLandlockOld)
	}
	return nil
}

// scopesSignals reports whether the agent will start in a domain that
// scopes signals: the filter then traps probes (filter.Options.Probes).
func scopesSignals(keepCaps bool) bool { return landlockReady(keepCaps) == nil }

// landlockMissing reports whether err says this kernel has no Landlock to
// enter (not built, not enabled, or its syscalls filtered away by a
// container runtime), rather than that entering it failed.
func landlockMissing(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, errLandlockOld) || errors.Is(err, errKeepCaps)
}

// KernelWall says what the kernel enforces for this session behind the
// supervisor's decisions, for the start line and paddock doctor.
func (s *Session) KernelWall() string {
	wall := s.kernelWall()
	if forceAllow {
		wall += "; TEST BUILD (paddock_forceallow): the supervisor allows every call it would refuse"
	}
	return wall
}

func (s *Session) kernelWall() string {
	switch {
	case s.wallErr == nil && s.backend != "":
		return "landlock: the kernel keeps ptrace, /proc/PID/mem, process_vm_*, pidfd_getfd and signals inside the agent's processes"
	case s.wallErr == nil:
		return "unknown: the agent has not started"
	case landlockMissing(s.wallErr):
		return fmt.Sprintf("none: %v; the supervisor's traps hold alone (docs/threat-model.md)", s.wallErr)
	}
	return fmt.Sprintf("none: %v", s.wallErr)
}
