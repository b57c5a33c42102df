package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockRulesetAttr is the head of struct landlock_ruleset_attr up to
// scoped (Landlock ABI 6): the size every kernel that knows scopes accepts.
type landlockRulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// LandlockRestrictSelf puts the calling thread in a new Landlock domain
// whose ruleset handles no filesystem or network access and the scopes in
// scoped (LANDLOCK_SCOPE_*, Landlock ABI 6), through
// landlock_create_ruleset and landlock_restrict_self. The thread must have
// no_new_privs set or hold CAP_SYS_ADMIN (EPERM otherwise). The domain
// stays for the thread's lifetime and is inherited by everything it clones
// and execs.
func LandlockRestrictSelf(scoped uint64) error {
	attr := landlockRulesetAttr{scoped: scoped}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return errno
	}
	defer unix.Close(int(fd))
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
