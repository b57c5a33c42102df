// Package seccomp holds the kernel's seccomp user-notification ABI that
// golang.org/x/sys does not define: struct seccomp_notif and
// seccomp_notif_resp, and the ioctls on a listener descriptor. The supervisor
// and the filter's kernel tests both speak it.
package seccomp

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Data mirrors struct seccomp_data (64 bytes).
type Data struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// Notif mirrors struct seccomp_notif (80 bytes).
type Notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  Data
}

// NotifResp mirrors struct seccomp_notif_resp (24 bytes).
type NotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The kernel rejects a receive buffer of the wrong size; fail the build instead.
var (
	_ [80 - unsafe.Sizeof(Notif{})]byte
	_ [unsafe.Sizeof(Notif{}) - 80]byte
	_ [24 - unsafe.Sizeof(NotifResp{})]byte
	_ [unsafe.Sizeof(NotifResp{}) - 24]byte
)

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if e != 0 {
		return e
	}
	return nil
}

// Recv waits for the next notification. n must be zeroed by the caller.
// (A raw, scheduler-blind syscall here was measured: no faster on the kill
// loop, slower on execs; see docs/perf.md.)
func Recv(fd int, n *Notif) error {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// Send answers notification id: CONTINUE when errno is 0, else the error.
func Send(fd int, id uint64, errno unix.Errno) error {
	r := NotifResp{ID: id}
	if errno == 0 {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		r.Error = -int32(errno)
	}
	err := ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
	if errors.Is(err, unix.ENOENT) {
		// The caller was interrupted or died meanwhile; nothing waits for the answer.
		return nil
	}
	return err
}

// IDValid reports whether notification id is still pending, i.e. the pid it
// named still refers to the caller that is waiting for the answer.
func IDValid(fd int, id uint64) bool {
	return ioctlPtr(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// SetSyncWakeUp asks the kernel to wake the receiver on the caller's CPU
// (Linux 6.6+), which cuts the round-trip latency several-fold (DESIGN.md
// pitfall 4). Older kernels answer EINVAL; the supervisor works without it.
func SetSyncWakeUp(fd int) error {
	var flags uint64 = unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS), uintptr(flags))
	if e != 0 {
		return fmt.Errorf("SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP): %w", e)
	}
	return nil
}

// FilterGone reports whether no task uses the filter behind the listener
// any more (the kernel signals POLLHUP then): no notification can come.
func FilterGone(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n > 0 && pfd[0].Revents&unix.POLLHUP != 0
}
