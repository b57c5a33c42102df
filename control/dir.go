package control

import (
	"errors"
	"fmt"
	"math/rand/v2"
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

// listenIn makes a fresh 0700 directory under base, with the owner record
// (owner, the Identity of the paddock whose session it is: see Sweep) in
// it, checks it, binds the socket in it through the directory's
// descriptor, and checks that the socket's path leads there. It returns
// the directory and the socket's path.
//
// The directory is made under a staging name that says whose it is
// (stagingPrefix), gets its owner record there, and only then takes its
// session name, with a rename that replaces nothing: a paddock killed at
// any point leaves either a staging directory whose name, or a session
// directory whose owner record, says it is gone.
func listenIn(base string, owner procfs.Identity) (l *net.UnixListener, dir, path string, err error) {
	euid := os.Geteuid()
	if err := checkBase(base, euid); err != nil {
		return nil, "", "", err
	}
	// The longest name a session directory takes: the check does not
	// depend on the name drawn.
	if longest := filepath.Join(base, dirPrefix+"4294967295", socketName); len(longest) >= maxSocketPath {
		return nil, "", "", fmt.Errorf("control socket: %s is %d bytes long, and a unix socket's path must be shorter than %d; set XDG_RUNTIME_DIR or TMPDIR to a shorter directory (now %s)", longest, len(longest), maxSocketPath, base)
	}
	made, err := os.MkdirTemp(base, stagingPrefix(owner))
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(made)
		}
	}()
	dirfd, err := unix.Open(made, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket: open %s: %w", made, err)
	}
	defer unix.Close(dirfd)
	if err := unix.Fchmod(dirfd, 0o700); err != nil {
		return nil, "", "", fmt.Errorf("control socket: chmod %s: %w", made, err)
	}
	if err := checkDir(made, dirfd, euid); err != nil {
		return nil, "", "", err
	}
	if err := writeOwner(dirfd, owner); err != nil {
		return nil, "", "", fmt.Errorf("control socket: in %s: %w", made, err)
	}
	if dir, err = takeSessionName(base, made); err != nil {
		return nil, "", "", err
	}
	made = dir
	path = filepath.Join(dir, socketName)
	if err := checkDir(dir, dirfd, euid); err != nil {
		return nil, "", "", err
	}
	// Bound through the descriptor: whatever happens to the names above,
	// the socket is made in the directory just checked.
	via := procfs.FdPath(dirfd) + "/" + socketName
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

// takeSessionName renames the staging directory stage under base to a
// fresh session directory name (dirPrefix and random digits, as
// os.MkdirTemp draws them) that no entry has: the rename replaces nothing
// (RENAME_NOREPLACE). On a file system without RENAME_NOREPLACE it makes an
// empty directory of the name first and renames over it, which a rename
// may do: that empty directory, until the rename, is the one moment a
// session directory is without its owner record (see judge).
func takeSessionName(base, stage string) (string, error) {
	name, err := renameFresh(unix.AT_FDCWD, stage, filepath.Join(base, dirPrefix))
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		var empty string
		if empty, err = os.MkdirTemp(base, dirPrefix); err != nil {
			return "", fmt.Errorf("control socket: %w", err)
		}
		if err = unix.Rename(stage, empty); err != nil {
			os.Remove(empty)
			return "", fmt.Errorf("control socket: rename %s to %s: %w", stage, empty, err)
		}
		return empty, nil
	}
	if err != nil {
		return "", fmt.Errorf("control socket: %w", err)
	}
	return name, nil
}

// renameFresh renames from, under the directory open as dirfd, to prefix
// and random digits (as os.MkdirTemp draws them), a name no entry has:
// the rename replaces nothing (RENAME_NOREPLACE), and a name taken is
// drawn again. It returns the name given. An error wrapping EINVAL or
// ENOSYS says the file system has no RENAME_NOREPLACE.
func renameFresh(dirfd int, from, prefix string) (string, error) {
	for try := 0; ; try++ {
		to := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) && try < 10000 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("rename %s to %s: %w", from, to, err)
		}
		return to, nil
	}
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
