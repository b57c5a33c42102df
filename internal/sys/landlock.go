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

// LandlockCreateRuleset is landlock_create_ruleset: a new ruleset that
// handles the filesystem accesses in handledFS (LANDLOCK_ACCESS_FS_*) and
// the scopes in scoped, as a descriptor for LandlockAddPathRule and
// LandlockRestrict. A handled access is refused wherever no rule grants it.
func LandlockCreateRuleset(handledFS, scoped uint64) (int, error) {
	attr := landlockRulesetAttr{handledAccessFS: handledFS, scoped: scoped}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// LandlockAddPathRule is landlock_add_rule(LANDLOCK_RULE_PATH_BENEATH):
// the accesses in allowed are granted on the file or directory open as
// parentFd (O_PATH will do), and beneath it for a directory.
func LandlockAddPathRule(ruleset, parentFd int, allowed uint64) error {
	// struct landlock_path_beneath_attr is packed (12 bytes); the kernel
	// reads no more of the 16 Go lays out.
	attr := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(parentFd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// LandlockRestrict is landlock_restrict_self: the calling thread enters a
// new domain made of ruleset, with flags (LANDLOCK_RESTRICT_SELF_*,
// include/uapi/linux/landlock.h; Landlock ABI 7 has the logging ones, and
// an older kernel refuses any flag with EINVAL). The thread must have
// no_new_privs set or hold CAP_SYS_ADMIN (EPERM otherwise). The domain
// stays for the thread's lifetime and is inherited by everything it clones
// and execs.
func LandlockRestrict(ruleset int, flags uint32) error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), uintptr(flags), 0); errno != 0 {
		return errno
	}
	return nil
}
