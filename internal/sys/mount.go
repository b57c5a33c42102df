package sys

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ResolveCached is openat2's RESOLVE_CACHED (linux/openat2.h, Linux 5.12),
// which golang.org/x/sys does not name for Linux: the lookup is served from
// the kernel's dentry cache alone, and fails with EAGAIN where it would
// have to ask a filesystem.
const ResolveCached = 0x20

// Memo is what the kernel holds in memory of the object an O_PATH
// descriptor pins, read without asking its filesystem (MemoOf).
type Memo struct {
	// Mount is the unique id of the mount it lies on (never reused while
	// the machine runs).
	Mount uint64
	// Mode is its file type and permission bits (st_mode), and RdevMajor
	// and RdevMinor a device node's numbers.
	Mode                 uint32
	RdevMajor, RdevMinor uint32
}

// MemoOf reads fd's Memo with statx(AT_STATX_DONT_SYNC): a network or FUSE
// filesystem is not asked (Linux 6.8 for STATX_MNT_ID_UNIQUE). ok is false
// where the kernel gave no unique mount id.
func MemoOf(fd int) (m Memo, ok bool, err error) {
	var st unix.Statx_t
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_MNT_ID_UNIQUE, &st)
	if err != nil {
		return m, false, err
	}
	m = Memo{Mount: st.Mnt_id, Mode: uint32(st.Mode), RdevMajor: st.Rdev_major, RdevMinor: st.Rdev_minor}
	return m, st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 && st.Mask&unix.STATX_TYPE != 0, nil
}

// statmountSBBasic is STATMOUNT_SB_BASIC (linux/mount.h): the superblock's
// device, magic and flags.
const statmountSBBasic = 0x1

// nsGetMntnsID is NS_GET_MNTNS_ID (linux/nsfs.h, Linux 6.8):
// _IOR(0xb7, 0x5, __u64).
const nsGetMntnsID = 0x8008b705

// MountNSID returns the id of the mount namespace nsfd (an open
// /proc/PID/ns/mnt) names, which MountMagic takes.
func MountNSID(nsfd int) (uint64, error) {
	var id uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(nsfd), nsGetMntnsID, uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return 0, errno
	}
	return id, nil
}

// MountMagic returns the superblock magic (statfs's f_type) of the
// filesystem mounted at the mount with unique id mnt, from the mount table:
// nothing is asked of the filesystem (statmount(2), Linux 6.8). The mount
// is looked for in mount namespace ns (MountNSID; Linux 6.11), or in the
// calling process's for ns 0. ENOENT: it is not there.
func MountMagic(mnt, ns uint64) (int64, error) {
	// struct mnt_id_req: size, a spare word, the mount id, the fields
	// asked for, and from its second version the namespace's id.
	var req [32]byte
	size := 24
	if ns != 0 {
		size = 32
		binary.NativeEndian.PutUint64(req[24:], ns)
	}
	binary.NativeEndian.PutUint32(req[0:], uint32(size))
	binary.NativeEndian.PutUint64(req[8:], mnt)
	binary.NativeEndian.PutUint64(req[16:], statmountSBBasic)
	// struct statmount: size, mnt_opts, mask, sb_dev_major, sb_dev_minor,
	// sb_magic at byte 24; the kernel copies as much as the buffer holds.
	var buf [512]byte
	_, _, errno := unix.Syscall6(unix.SYS_STATMOUNT, uintptr(unsafe.Pointer(&req[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if binary.NativeEndian.Uint64(buf[8:])&statmountSBBasic == 0 {
		return 0, unix.EOPNOTSUPP
	}
	return int64(binary.NativeEndian.Uint64(buf[24:])), nil
}
