// Package pidns translates process ids between PID namespaces: the number
// a process in a namespace nested in paddock's wrote (kill(2)'s pid, a
// control request's PID) and the number paddock's own namespace gives the
// same process, thread, group or session; and back, for messages.
//
// It asks the kernel (the nsfs ioctls NS_GET_PID_FROM_PIDNS and
// NS_GET_PID_IN_PIDNS, Linux 6.11+) and, where the kernel has no answer
// (an older kernel, or a group or session whose leader has exited), reads
// the NSpid, NSpgid and NSsid lines of /proc/PID/status. A number that
// names nothing in the namespace translates to 0, never to another
// process.
package pidns

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// NS is one PID namespace as paddock reads it, held open by a descriptor
// of /proc/PID/ns/pid so that its identity cannot change under a
// translation. Close releases it.
type NS struct {
	fs procfs.FS
	fd int
	// Ino identifies the namespace (the inode of its ns/pid file).
	Ino uint64
	// level is how many namespaces it lies below the reader's: the index
	// of its numbers in NSpid lists read from the reader's /proc.
	level int
}

// Of opens the PID namespace of process (or thread) pid, as fs names it
// (0: the reader's own). An error wrapping procfs.ErrNotFound means pid is
// gone. An NS does not change once made: goroutines may share it.
func Of(fs procfs.FS, pid int) (*NS, error) {
	p := fs.Root + "/" + strconv.Itoa(pid) + "/ns/pid"
	if pid == 0 {
		p = fs.Root + "/self/ns/pid"
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("open %s: %w", p, procfs.ErrNotFound)
		}
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fstat %s: %w", p, err)
	}
	n := &NS{fs: fs, fd: fd, Ino: st.Ino}
	if pid != 0 {
		cr, err := fs.Creds(pid)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("the depth of PID namespace %d: %w", st.Ino, err)
		}
		// ns/pid is the thread's own namespace, the last of its NSpid.
		n.level = len(cr.NSpid) - 1
	}
	return n, nil
}

// Close releases the namespace's descriptor.
func (n *NS) Close() error {
	if n == nil || n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	if err != nil {
		return fmt.Errorf("close PID namespace %d: %w", n.Ino, err)
	}
	return nil
}

// Host is the reader's number of the process, thread, process group or
// session that n numbers id: 0 with a nil error when n numbers nothing id
// (what the kernel answers ESRCH for in n). An error means it could not be
// read, and the caller must not guess.
func (n *NS) Host(id int) (int, error) {
	if id <= 0 {
		return 0, nil
	}
	h, err := ioctlArg(n.fd, unix.NS_GET_PID_FROM_PIDNS, id)
	switch {
	case err == nil && h > 0:
		return h, nil
	case err == nil, errors.Is(err, unix.ESRCH):
		// No task has pid id in n; a group or session may still have it
		// (its leader exited, members remain), which only /proc shows.
		return n.scan(id, groupsOnly)
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
		return n.scan(id, everything) // a kernel before 6.11
	}
	return 0, fmt.Errorf("translate pid %d of PID namespace %d: %w", id, n.Ino, err)
}

// Local is the number n gives the reader's process or thread h: 0 when h
// is gone or not visible in n (it lies above n, or in another branch).
func (n *NS) Local(h int) (int, error) {
	if h <= 0 {
		return 0, nil
	}
	l, err := ioctlArg(n.fd, unix.NS_GET_PID_IN_PIDNS, h)
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, unix.ESRCH):
		return 0, nil
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
	default:
		return 0, fmt.Errorf("translate pid %d into PID namespace %d: %w", h, n.Ino, err)
	}
	// A kernel before 6.11: h's NSpid line, where h is within n.
	lv := n.level
	cr, err := n.fs.Creds(h)
	if errors.Is(err, procfs.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(cr.NSpid) <= lv {
		return 0, nil
	}
	if within, err := n.fs.PidNSWithin(h, n.Ino); err != nil || !within {
		if errors.Is(err, procfs.ErrNotFound) {
			return 0, nil
		}
		return 0, err
	}
	return cr.NSpid[lv], nil
}

// ioctlArg is ioctl(fd, req, arg) for the nsfs translations, which take
// the pid as the argument itself and return the translation.
func ioctlArg(fd int, req uint, arg int) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// scope says what scan looks for.
type scope int

const (
	groupsOnly scope = iota // process groups and sessions
	everything              // processes, threads, groups, sessions
)

// scan finds in /proc the reader's number of what n numbers id: a
// process, thread, group or session (sc) of a process within n. 0 when
// none.
func (n *NS) scan(id int, sc scope) (int, error) {
	lv := n.level
	pids, err := n.fs.Pids()
	if err != nil {
		return 0, fmt.Errorf("translate pid %d of PID namespace %d: %w", id, n.Ino, err)
	}
	var within []int
	for _, p := range pids {
		cr, err := n.fs.Creds(p)
		if err != nil || len(cr.NSpid) <= lv {
			continue // gone, or in a namespace above n
		}
		in, err := n.fs.PidNSWithin(p, n.Ino)
		if err != nil || !in {
			continue
		}
		within = append(within, p)
		if sc == everything && cr.NSpid[lv] == id {
			return cr.NSpid[0], nil
		}
		for _, l := range [][]int{cr.NSpgid, cr.NSsid} {
			if len(l) > lv && l[lv] == id && l[0] > 0 {
				return l[0], nil
			}
		}
	}
	if sc != everything {
		return 0, nil
	}
	for _, p := range within {
		tids, err := n.fs.Threads(p)
		if err != nil {
			continue
		}
		for _, t := range tids {
			if t == p {
				continue
			}
			if cr, err := n.fs.Creds(t); err == nil && len(cr.NSpid) > lv && cr.NSpid[lv] == id {
				return cr.NSpid[0], nil
			}
		}
	}
	return 0, nil
}

// Same reports whether process (or thread) pid is in the reader's own PID
// namespace, whose inode is self; a stat of /proc/PID/ns/pid, no
// descriptor. An error wrapping procfs.ErrNotFound means pid is gone; pid
// 0 (how the kernel names a process the reader cannot see) is an error.
func Same(fs procfs.FS, pid int, self uint64) (bool, error) {
	if pid <= 0 {
		// The kernel names a process in a namespace the reader cannot see
		// (not nested in its own) 0: never the reader's own.
		return false, fmt.Errorf("pid %d: a process in a PID namespace the reader does not see", pid)
	}
	ino, err := fs.Namespace(pid, "pid")
	if err != nil {
		return false, err
	}
	return ino == self, nil
}
