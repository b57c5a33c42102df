// Package seccomp is the seccomp user-notification protocol as paddock
// speaks it: receive a notification, answer CONTINUE or an errno, check
// that a notification is still pending, ask for sync wake-up, tell whether
// the filter is gone. The supervisor and the filter's kernel tests both
// speak it; the ABI structs and ioctls themselves are in internal/sys.
package seccomp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/internal/sys"
)

// Data mirrors struct seccomp_data (64 bytes).
type Data = sys.SeccompData

// Notif mirrors struct seccomp_notif (80 bytes).
type Notif = sys.SeccompNotif

// NotifResp mirrors struct seccomp_notif_resp (24 bytes).
type NotifResp = sys.SeccompNotifResp

// Recv waits for the next notification. n must be zeroed by the caller.
// (A raw, scheduler-blind syscall here was measured: no faster on the kill
// loop, slower on execs; see docs/perf.md.)
func Recv(fd int, n *Notif) error {
	return sys.SeccompNotifRecv(fd, n)
}

// Send answers notification id: CONTINUE when errno is 0, else the error.
func Send(fd int, id uint64, errno unix.Errno) error {
	r := NotifResp{ID: id}
	if errno == 0 {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else {
		r.Error = -int32(errno)
	}
	return send(fd, &r)
}

// Done answers notification id with the call's result without running it:
// 0 when errno is 0, else -errno. The supervisor did what the call asked
// for itself (a signal it delivered through its own pin on the target).
func Done(fd int, id uint64, errno unix.Errno) error {
	return send(fd, &NotifResp{ID: id, Error: -int32(errno)})
}

// Answer sends a: Send's answer for a call paddock lets run or fails,
// Done's for one it carried out itself. Every front end answers through
// it, so that none can let a call run that paddock has already carried out.
func Answer(fd int, id uint64, a answer.Answer) error {
	switch {
	case a.HasFd:
		return AddFd(fd, id, a.Fd, a.Cloexec)
	case a.Done && a.Errno == 0 && a.Val != 0:
		return send(fd, &NotifResp{ID: id, Val: a.Val})
	case a.Done:
		return Done(fd, id, a.Errno)
	}
	return Send(fd, id, a.Errno)
}

// AddFdAt installs a copy of src in the caller of notification id at
// descriptor number target, closing what was there (dup2's way:
// SECCOMP_ADDFD_FLAG_SETFD, Linux 5.9+), close-on-exec when cloexec; the
// notification still waits for its answer. It closes src.
func AddFdAt(fd int, id uint64, src, target int, cloexec bool) error {
	defer unix.Close(src)
	a := sys.SeccompAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SETFD, Srcfd: uint32(src), Newfd: uint32(target)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	if _, err := sys.SeccompNotifAddfd(fd, &a); err != nil {
		return fmt.Errorf("SECCOMP_IOCTL_NOTIF_ADDFD(SETFD %d): %w", target, err)
	}
	return nil
}

// AddFd answers notification id with a new descriptor of the caller's, a
// copy of src (close-on-exec when cloexec), which the call returns. It
// closes src. It installs the descriptor first and then answers with its
// number, in two steps: an ADDFD with SECCOMP_ADDFD_FLAG_SEND that a
// signal to the answering thread interrupts (SIGCHLD reaches any of
// paddock's threads) leaves the notification answered with 0 and the
// descriptor never installed (kernel/seccomp.c marks it replied before
// the caller has taken the descriptor): the caller's open returned 0, its
// standard input. An interrupted ADDFD without SEND is withdrawn, or was
// taken, and is retried or its number read.
func AddFd(fd int, id uint64, src int, cloexec bool) error {
	a := sys.SeccompAddfd{ID: id, Srcfd: uint32(src)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	n, err := sys.SeccompNotifAddfd(fd, &a)
	// paddock's copy is closed before the caller runs on: a file paddock
	// still held open for writing could not be executed (ETXTBSY: cp then
	// exec of the copy).
	unix.Close(src)
	if errors.Is(err, unix.ENOENT) {
		return nil // the caller is gone
	}
	if err != nil {
		// The call must still be answered, or its caller waits for good.
		_ = send(fd, &NotifResp{ID: id, Error: -int32(unix.EIO)})
		return fmt.Errorf("SECCOMP_IOCTL_NOTIF_ADDFD: %w", err)
	}
	return send(fd, &NotifResp{ID: id, Val: int64(n)})
}

func send(fd int, r *NotifResp) error {
	err := sys.SeccompNotifSend(fd, r)
	if errors.Is(err, unix.ENOENT) {
		// The caller was interrupted or died meanwhile; nothing waits for the answer.
		return nil
	}
	return err
}

// IDValid reports whether notification id is still pending, i.e. the pid it
// named still refers to the caller that is waiting for the answer.
func IDValid(fd int, id uint64) bool {
	return sys.SeccompNotifIDValid(fd, id) == nil
}

// SetSyncWakeUp asks the kernel to wake the receiver on the caller's CPU
// (Linux 6.6+), which cuts the round-trip latency several-fold (docs/perf.md,
// "The floor"). Older kernels answer EINVAL; the supervisor works without it.
func SetSyncWakeUp(fd int) error {
	if err := sys.SeccompNotifSetFlags(fd, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); err != nil {
		return fmt.Errorf("SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP): %w", err)
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
