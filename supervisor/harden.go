package supervisor

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// sysrqTrigger is the file through which root triggers a magic SysRq action
// (b reboots, o powers off, c crashes the kernel) with a plain write(2),
// which no syscall paddock traps can see.
const sysrqTrigger = "/proc/sysrq-trigger"

// hardenRoot takes from the agent what paddock cannot supervise, on the
// thread that starts it, before its filter goes on (docs/threat-model.md,
// "Root agents"):
//
//   - CAP_SYS_PTRACE leaves the capability bounding set (and the inheritable
//     and ambient sets), so that a root agent cannot read or write
//     /proc/PID/mem, fd, cwd, root or exe of the supervisor (non-dumpable)
//     or of any process that is not its own, nor attach to one;
//   - with CAP_SYS_ADMIN the agent gets a mount namespace of its own (slave
//     of paddock's, so nothing it mounts propagates back) in which
//     /proc/sysrq-trigger is bound read-only: a write fails with EROFS.
//
// Without CAP_SETPCAP (a non-root paddock) the bounding set cannot change and
// is left alone: such an agent has no CAP_SYS_PTRACE to lose, and a file
// capability cannot give it one, since paddock then sets no_new_privs.
// Without CAP_SYS_ADMIN the mount namespace is skipped: only root can write
// /proc/sysrq-trigger.
//
// It runs on a locked thread before any filter is installed: the
// supervisor's launching thread (seccomp backend), which then forks the
// agent, or the init's (ptrace backend), which then execs it. Capabilities
// and the mount namespace belong to the thread and pass to what it starts.
// prctl, capget/capset, unshare, statfs and mount are not trapped by either
// backend's filter in any case.
func hardenRoot() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if err := dropPtraceCap(&hdr, &caps); err != nil {
		return err
	}
	if !hasCap(caps, unix.CAP_SYS_ADMIN) {
		return nil
	}
	return readOnlySysrq()
}

// hasCap reports whether c is in the effective set.
func hasCap(caps [2]unix.CapUserData, c int) bool {
	return caps[c/32].Effective&(1<<(c%32)) != 0
}

// dropPtraceCap removes CAP_SYS_PTRACE from the bounding, inheritable and
// ambient sets of this thread. After the exec a root agent's permitted and
// effective sets come from the bounding set and lack it too.
func dropPtraceCap(hdr *unix.CapUserHeader, caps *[2]unix.CapUserData) error {
	const c = unix.CAP_SYS_PTRACE
	// Lowering an ambient capability needs no privilege; EINVAL: a kernel
	// without ambient capabilities (before 4.3).
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, c, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE): %w", err)
	}
	if inh := &caps[c/32].Inheritable; *inh&(1<<(c%32)) != 0 {
		*inh &^= 1 << (c % 32)
		if err := unix.Capset(hdr, &caps[0]); err != nil {
			return fmt.Errorf("capset (CAP_SYS_PTRACE out of the inheritable set): %w", err)
		}
	}
	inBounding, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE): %w", err)
	}
	switch {
	case inBounding == 0:
		return nil // a container's default set, or paddock under paddock
	case hasCap(*caps, unix.CAP_SETPCAP):
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE): %w", err)
		}
		return nil
	case os.Geteuid() == 0:
		// Root regains its bounding set at every exec: without CAP_SETPCAP
		// the agent would keep CAP_SYS_PTRACE, so say so rather than pretend.
		return errors.New("cannot drop CAP_SYS_PTRACE from a root agent's capability bounding set without CAP_SETPCAP; " +
			"give paddock CAP_SETPCAP, or run it with --keep-caps to let the agent keep CAP_SYS_PTRACE")
	}
	return nil
}

// readOnlySysrq gives this thread a mount namespace of its own in which
// /proc/sysrq-trigger is read-only. The namespace is made a slave of the
// one it was copied from: mounts made outside still appear in it, while
// the agent's own mounts stay in it.
func readOnlySysrq() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make / a recursive slave mount: %w", err)
	}
	var st unix.Stat_t
	switch err := unix.Stat(sysrqTrigger, &st); {
	case errors.Is(err, unix.ENOENT):
		return nil // a kernel without CONFIG_MAGIC_SYSRQ, or no /proc
	case err != nil:
		return fmt.Errorf("stat %s: %w", sysrqTrigger, err)
	case st.Uid != 0:
		// Owned by an unmapped uid: in a user namespace whose root is not
		// the host's, which cannot write the file anyway.
		return nil
	}
	if err := unix.Mount(sysrqTrigger, sysrqTrigger, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s onto itself: %w", sysrqTrigger, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(sysrqTrigger, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", sysrqTrigger, err)
	}
	// A remount must keep the flags a less privileged mount namespace
	// locked (nosuid, nodev, noexec and the atime ones), or it is refused.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for st, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if sfs.Flags&st != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", sysrqTrigger, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", sysrqTrigger, err)
	}
	return nil
}
