// Package peer names the process at the other end of a unix socket
// connection: a pidfd that pins it (so that its pid cannot come to name
// another process while it is looked at), and the executable it runs, for
// the log. The control socket charges connections by it, and fleet mode
// logs who asked for a takeover with it.
package peer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5; the same number on amd64 and
// arm64, and not yet in x/sys): a pidfd on the process that connected.
const soPeerPidfd = 77

// Pidfd pins the connector of conn, whose SO_PEERCRED pid is pid:
// SO_PEERPIDFD where the kernel has it, which names the connector itself;
// else pidfd_open on its pid, which names whatever process has that pid
// now. The caller closes it.
func Pidfd(conn *net.UnixConn, pid int32) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("peer pidfd: %w", err)
	}
	fd, gerr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, gerr = unix.GetsockoptInt(int(s), unix.SOL_SOCKET, soPeerPidfd) }); err != nil {
		return -1, fmt.Errorf("peer pidfd: %w", err)
	}
	if gerr == nil {
		return fd, nil
	}
	if !errors.Is(gerr, unix.ENOPROTOOPT) {
		return -1, fmt.Errorf("peer pidfd: getsockopt(SO_PEERPIDFD): %w", gerr)
	}
	fd, err = unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return -1, fmt.Errorf("peer pidfd: pidfd_open(%d): %w", pid, err)
	}
	return fd, nil
}

// Exe is what a process runs: the path of its executable as
// /proc/PID/exe names it, and the file's device and inode.
type Exe struct {
	Path     string
	Dev, Ino uint64
}

// Same reports whether e and o are the same file.
func (e Exe) Same(o Exe) bool { return e.Ino != 0 && e.Dev == o.Dev && e.Ino == o.Ino }

// ExeOf reads the executable of process pid, pinned by pidfd, from
// /proc/PID/exe, and checks afterwards that the pidfd's process is still
// running: only then did pid name it throughout. Reading another user's
// process needs CAP_SYS_PTRACE (root has it).
func ExeOf(pidfd, pid int) (Exe, error) {
	p := "/proc/" + strconv.Itoa(pid) + "/exe"
	path, err := os.Readlink(p)
	if err != nil {
		return Exe{}, fmt.Errorf("read %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return Exe{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if Exited(pidfd) {
		return Exe{}, fmt.Errorf("read %s: pid %d exited meanwhile", p, pid)
	}
	return Exe{Path: path, Dev: st.Dev, Ino: st.Ino}, nil
}

// Self is the calling process's own executable.
func Self() (Exe, error) {
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Exe{}, fmt.Errorf("read /proc/self/exe: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return Exe{}, fmt.Errorf("stat /proc/self/exe: %w", err)
	}
	return Exe{Path: path, Dev: st.Dev, Ino: st.Ino}, nil
}

// Exited reports whether the process pidfd pins has exited (a pidfd is
// readable from then on, reaped or not); an error polling it counts as
// exited.
func Exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// Cred is the connector's credentials (SO_PEERCRED), as they were when
// it connected: its pid (0 when it is in no PID namespace the reader can
// see), uid and gid.
func Cred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}
