// Package callerio writes to a trapped caller's own standard error, the
// way paddock's refusal messages reach an agent: through a copy of the
// caller's descriptor 2 taken with pidfd_getfd, which shares the caller's
// open file description (its offset, its access mode), so that nothing is
// reopened by path with paddock's credentials. Both the supervisor and the
// fleet agent use it.
package callerio

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// ErrReadOnly: the caller's descriptor 2 is open for reading only.
var ErrReadOnly = errors.New("descriptor 2 is open read-only")

// Take returns a copy of descriptor fd of thread tid's process, taken with
// pidfd_getfd: the same open file, which the caller closes. pidfd_getfd's
// EBADF (fd not open) stays in the error. The supervisor takes a caller's
// terminal descriptors the same way, to see what they reach.
func Take(fs procfs.FS, tid, fd int) (int, error) {
	pid, err := fs.Tgid(tid)
	if err != nil {
		return -1, err
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_open(%d): %w", pid, err)
	}
	defer unix.Close(pidfd)
	local, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_getfd(%d, %d): %w", pid, fd, err)
	}
	return local, nil
}

// Stderr returns a copy of thread tid's descriptor 2, open for writing.
// The caller closes it.
func Stderr(fs procfs.FS, tid int) (int, error) {
	fd, err := Take(fs, tid, 2)
	if err != nil {
		return -1, err
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil && fl&unix.O_ACCMODE == unix.O_RDONLY {
		err = ErrReadOnly
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ErrNoReader: nothing reads the caller's descriptor 2 any more (a pipe
// whose reader closed, a socket whose peer did); nothing was written.
var ErrNoReader = errors.New("nothing reads it any more")

// noReader reports whether nothing reads fd any more. A write there would
// fail with EPIPE and raise SIGPIPE in paddock, which as an init passes
// every signal it is sent on to its agent: so such a descriptor is not
// written at all. (A reader that closes between this look and the write
// still makes one: the window is a system call wide.)
func noReader(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(p, 0)
	return err == nil && n == 1 && p[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}

// WriteNow writes b to fd as far as the kernel can without blocking, for
// this one call only (pwritev2 with RWF_NOWAIT: the caller's description
// keeps its flags), and returns what is left. A pipe or a socket with room
// takes it all; a terminal or a file answers EOPNOTSUPP, a full pipe
// EAGAIN, and an older kernel EOPNOTSUPP for pipes too: all of b is left.
// Most agent harnesses give their child a pipe or a socket, where a message
// written this way is in before the caller is answered, whatever the load.
func WriteNow(fd int, b []byte) []byte {
	if noReader(fd) {
		return b
	}
	for len(b) > 0 {
		n, err := unix.Pwritev2(fd, [][]byte{b}, -1, unix.RWF_NOWAIT)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		b = b[n:]
	}
	return b
}

// WriteAll writes b to fd whole (a pipe or socket may take it in parts),
// unless nothing reads fd any more (ErrNoReader).
func WriteAll(fd int, b []byte) error {
	if noReader(fd) {
		return ErrNoReader
	}
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
