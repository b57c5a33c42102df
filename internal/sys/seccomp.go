package sys

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SeccompData mirrors struct seccomp_data (64 bytes): what a filter and a
// notification see of a syscall.
type SeccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// SeccompNotif mirrors struct seccomp_notif (80 bytes), one notification
// read from a listener.
type SeccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  SeccompData
}

// SeccompNotifResp mirrors struct seccomp_notif_resp (24 bytes), the answer
// to one notification.
type SeccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The kernel rejects a buffer of the wrong size; fail the build instead.
var (
	_ [80 - unsafe.Sizeof(SeccompNotif{})]byte
	_ [unsafe.Sizeof(SeccompNotif{}) - 80]byte
	_ [24 - unsafe.Sizeof(SeccompNotifResp{})]byte
	_ [unsafe.Sizeof(SeccompNotifResp{}) - 24]byte
	_ [64 - unsafe.Sizeof(SeccompData{})]byte
)

// SeccompSetModeFilter is seccomp(SECCOMP_SET_MODE_FILTER, flags, prog): it
// loads prog as a filter of the calling thread (of every thread with
// SECCOMP_FILTER_FLAG_TSYNC) and returns what the kernel returns, the
// listener descriptor with SECCOMP_FILTER_FLAG_NEW_LISTENER, else 0. prog
// must not be empty. On failure it returns -1 and the bare errno.
func SeccompSetModeFilter(prog []unix.SockFilter, flags uint) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// ioctlPtr is ioctl(fd, req, p) returning the bare errno.
func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if e != 0 {
		return e
	}
	return nil
}

// SeccompNotifRecv is ioctl(SECCOMP_IOCTL_NOTIF_RECV): it waits for the
// next notification on listener fd. n must be zeroed by the caller.
func SeccompNotifRecv(fd int, n *SeccompNotif) error {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// SeccompNotifSend is ioctl(SECCOMP_IOCTL_NOTIF_SEND): it answers a
// notification on listener fd with r.
func SeccompNotifSend(fd int, r *SeccompNotifResp) error {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(r))
}

// SeccompNotifIDValid is ioctl(SECCOMP_IOCTL_NOTIF_ID_VALID): nil while
// notification id on listener fd still waits for its answer.
func SeccompNotifIDValid(fd int, id uint64) error {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
}

// SeccompNotifSetFlags is ioctl(SECCOMP_IOCTL_NOTIF_SET_FLAGS) on listener
// fd (Linux 6.6+; flags such as SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP).
func SeccompNotifSetFlags(fd int, flags uint64) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS), uintptr(flags))
	if e != 0 {
		return e
	}
	return nil
}

// SeccompAddfd mirrors struct seccomp_notif_addfd (24 bytes).
type SeccompAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

var (
	_ [24 - unsafe.Sizeof(SeccompAddfd{})]byte
	_ [unsafe.Sizeof(SeccompAddfd{}) - 24]byte
)

// SeccompNotifAddfd is ioctl(SECCOMP_IOCTL_NOTIF_ADDFD) on listener fd
// (Linux 5.9; SECCOMP_ADDFD_FLAG_SEND, 5.14): it installs a copy of a's
// Srcfd in the caller and returns the caller's number for it.
func SeccompNotifAddfd(fd int, a *SeccompAddfd) (int, error) {
	for {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ADDFD), uintptr(unsafe.Pointer(a)))
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue // withdrawn by the kernel: ask again
		}
		return -1, e
	}
}
