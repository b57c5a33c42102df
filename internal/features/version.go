package features

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Version is a Linux kernel version, major.minor.
type Version struct{ Major, Minor int }

// String is "major.minor".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is min or newer.
func (v Version) AtLeast(min Version) bool { return atLeast(v.Major, v.Minor, min.Major, min.Minor) }

// KernelVersion is the running kernel's version, from uname.
func KernelVersion() (Version, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Version{}, fmt.Errorf("uname: %w", err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	major, minor, ok := kernelVersion(release)
	if !ok {
		return Version{}, fmt.Errorf("uname release %q has no version number", release)
	}
	return Version{major, minor}, nil
}

// Since is the Linux version from which every kernel that paddock supports
// (one with CONFIG_SECCOMP_FILTER) has feature id, and false for the
// features that also depend on configuration or on this process's
// environment (a listener above, Yama, cgroup mounts, IA32 emulation).
// Tests use it to fail rather than skip where a feature must be there.
func Since(id string) (Version, bool) {
	switch id {
	case IDSeccompActions, IDRetTrace:
		return Version{4, 14}, true // actions_avail
	case IDUserNotif:
		return Version{5, 0}, true
	case IDPidfdSendSignal:
		return Version{5, 1}, true
	case IDPidfdOpen:
		return Version{5, 3}, true
	case IDNotifContinue:
		return Version{continueMajor, continueMinor}, true
	case IDPidfdGetfd:
		return Version{5, 6}, true
	case IDLandlock:
		return Version{5, 13}, true // and CONFIG_SECURITY_LANDLOCK, lsm=landlock
	case IDWaitKillableRecv:
		return Version{5, 19}, true
	case IDSyncWakeUp:
		return Version{6, 6}, true
	case IDChildSubreaper:
		return Version{3, 4}, true
	}
	return Version{}, false
}

// kernelVersion parses the major and minor number of a uname release
// ("6.18.44-fc-v1098" is 6, 18).
func kernelVersion(release string) (major, minor int, ok bool) {
	a, rest, found := strings.Cut(release, ".")
	if !found {
		return 0, 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(rest)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// atLeast reports whether version major.minor is at least wantMajor.wantMinor.
func atLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || major == wantMajor && minor >= wantMinor
}

// Kernel versions that brought what paddock uses.
const (
	minMajor, minMinor           = 5, 9 // README's requirement: pidfds, CONTINUE, Seccomp_filters
	continueMajor, continueMinor = 5, 5 // SECCOMP_USER_NOTIF_FLAG_CONTINUE

	continueLinux  = "Linux 5.5+"  // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	syncWakeLinux  = "Linux 6.6+"  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
	killableLinux  = "Linux 5.19+" // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	userNotifLinux = "Linux 5.0+"  // SECCOMP_RET_USER_NOTIF
)
