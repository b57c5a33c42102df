package supervisor

import (
	"fmt"
)

// Backend names how trapped syscalls reach the supervisor.
type Backend string

// Backends. Both decide with the same policy.Decide; they differ in how the
// kernel hands a trapped syscall over.
const (
	// BackendAuto uses the seccomp listener when one can be installed, and
	// ptrace when not (another listener already supervises the process:
	// EBUSY; or the kernel lacks user notification: EINVAL).
	BackendAuto Backend = "auto"
	// BackendSeccomp answers SECCOMP_RET_USER_NOTIF notifications.
	BackendSeccomp Backend = "seccomp"
	// BackendPtrace traces the agent and answers SECCOMP_RET_TRACE stops.
	BackendPtrace Backend = "ptrace"
)

// ParseBackend reads a --backend value ("" means auto).
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case "":
		return BackendAuto, nil
	case BackendAuto, BackendSeccomp, BackendPtrace:
		return b, nil
	}
	return "", fmt.Errorf("backend %q: want auto, seccomp or ptrace", s)
}

// Backend says which backend supervises the session and why it was chosen.
func (s *Session) Backend() (Backend, string) { return s.backend, s.backendWhy }
