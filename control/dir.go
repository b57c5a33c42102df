package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// The socket's directory is never one somebody else planted: paddock makes
// it fresh (mkdir fails on any name that exists, symlinks included), holds
// it open while it checks it and binds the socket through that descriptor,
// and then checks that the names clients use lead to what it made.

// socketName is the socket's name in its directory.
const socketName = "control.sock"

// checkBase decides whether a paddock running as euid may make its socket
// directory under base. base is where the user pointed paddock
// ($XDG_RUNTIME_DIR, $TMPDIR) and may be reached through symlinks. A root
// paddock refuses a base that other users may write without the sticky bit
// (they could rename its directory away and plant their own), and a base
// another user owns (its owner may do that even with the sticky bit).
func checkBase(base string, euid int) error {
	var st unix.Stat_t
	if err := unix.Stat(base, &st); err != nil {
		return fmt.Errorf("control socket: runtime directory %s (from %s): %w. Way out: set XDG_RUNTIME_DIR or TMPDIR to an existing directory", base, baseVar(base), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("control socket: runtime directory %s (from %s) is not a directory. Way out: set XDG_RUNTIME_DIR or TMPDIR to an existing directory", base, baseVar(base))
	}
	if euid != 0 {
		return nil
	}
	perm := os.FileMode(st.Mode & 0o7777)
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("control socket: runtime directory %s (mode %#o) is writable by other users and has no sticky bit: a root paddock makes its socket directory only under a directory that no other user can write, or one with the sticky bit (like /tmp, mode 1777). Set XDG_RUNTIME_DIR or TMPDIR to such a directory", base, perm)
	}
	if st.Uid != 0 {
		return fmt.Errorf("control socket: runtime directory %s is owned by uid %d: a root paddock makes its socket directory only under a directory root owns (that directory's owner could replace it). Set XDG_RUNTIME_DIR or TMPDIR to such a directory", base, st.Uid)
	}
	return nil
}

// checkDir checks that name still names the directory open as dirfd, a
// real directory (not a symlink) owned by euid with mode 0700.
func checkDir(name string, dirfd, euid int) error {
	var fst, lst unix.Stat_t
	if err := unix.Fstat(dirfd, &fst); err != nil {
		return fmt.Errorf("control socket: directory %s: fstat: %w", name, err)
	}
	if err := unix.Lstat(name, &lst); err != nil {
		return fmt.Errorf("control socket: directory %s: %w", name, err)
	}
	switch {
	case lst.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("control socket: %s is not a real directory (a symlink, or something else, has taken its name)", name)
	case lst.Dev != fst.Dev || lst.Ino != fst.Ino:
		return fmt.Errorf("control socket: %s is no longer the directory paddock made", name)
	case int64(fst.Uid) != int64(euid):
		return fmt.Errorf("control socket: directory %s is owned by uid %d, not by paddock's uid %d", name, fst.Uid, euid)
	case fst.Mode&0o7777 != 0o700:
		return fmt.Errorf("control socket: directory %s has mode %#o, want 0700", name, fst.Mode&0o7777)
	}
	return nil
}

// checkSocket checks that path, the name clients use, leads to the socket
// named socketName in the directory open as dirfd.
func checkSocket(path string, dirfd int) error {
	var want, got unix.Stat_t
	if err := unix.Fstatat(dirfd, socketName, &want, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("control socket: %s in its directory: %w", socketName, err)
	}
	if err := unix.Stat(path, &got); err != nil {
		return fmt.Errorf("control socket: %s: %w", path, err)
	}
	if want.Mode&unix.S_IFMT != unix.S_IFSOCK || got.Dev != want.Dev || got.Ino != want.Ino {
		return fmt.Errorf("control socket: %s does not lead to the socket paddock made", path)
	}
	return nil
}

// listenIn makes a fresh 0700 directory under base, checks it, writes the
// owner record (owner, the Identity of the paddock whose session it is:
// see Sweep) in it, binds the socket in it through the directory's
// descriptor, and checks that the socket's path leads there. It returns
// the directory and the socket's path.
func listenIn(base string, owner procfs.Identity) (l *net.UnixListener, dir, path string, err error) {
	euid := os.Geteuid()
	if err := checkBase(base, euid); err != nil {
		return nil, "", "", err
	}
	made, err := os.MkdirTemp(base, dirPrefix)
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(made)
		}
	}()
	dir = made
	path = filepath.Join(dir, socketName)
	if len(path) >= maxSocketPath {
		return nil, "", "", fmt.Errorf("control socket: %s is %d bytes long, and a unix socket's path must be shorter than %d; set XDG_RUNTIME_DIR or TMPDIR to a shorter directory (now %s)", path, len(path), maxSocketPath, base)
	}
	dirfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket: open %s: %w", dir, err)
	}
	defer unix.Close(dirfd)
	if err := unix.Fchmod(dirfd, 0o700); err != nil {
		return nil, "", "", fmt.Errorf("control socket: chmod %s: %w", dir, err)
	}
	if err := checkDir(dir, dirfd, euid); err != nil {
		return nil, "", "", err
	}
	// Before the socket: a directory with a socket and no owner record is
	// never one of this paddock's being made (see judge).
	if err := writeOwner(dirfd, owner); err != nil {
		return nil, "", "", fmt.Errorf("control socket: in %s: %w", dir, err)
	}
	// Bound through the descriptor: whatever happens to the names above,
	// the socket is made in the directory just checked.
	via := "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + socketName
	l, err = net.ListenUnix("unix", &net.UnixAddr{Name: via, Net: "unix"})
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket: bind in %s: %w", dir, err)
	}
	l.SetUnlinkOnClose(false) // Close removes the whole directory by its name
	if err := errors.Join(checkDir(dir, dirfd, euid), checkSocket(path, dirfd)); err != nil {
		l.Close()
		return nil, "", "", err
	}
	return l, dir, path, nil
}

// baseVar names where the runtime directory base came from, for errors.
func baseVar(base string) string {
	switch {
	case base == os.Getenv("XDG_RUNTIME_DIR"):
		return "$XDG_RUNTIME_DIR"
	case base == os.Getenv("TMPDIR"):
		return "$TMPDIR"
	}
	return "the default temporary directory"
}
