package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The files paddock writes (the journal, its rotated files, the --report
// file) may sit in a directory the agent can write. An agent could then
// plant a symbolic link, or a hard link, where paddock will write, and make a
// root paddock append to a file of the agent's choice. So paddock:
//
//   - opens such files with O_NOFOLLOW (a symbolic link is refused, never
//     followed) and O_NONBLOCK (a FIFO cannot block it);
//   - writes only to a regular file owned by its effective user, with one
//     link (a hard link to another file of that user's is refused);
//   - run as root (euid 0), refuses at start a directory that another user
//     can change: one owned by anyone but root, or one that is group- or
//     world-writable without the sticky bit. (With the sticky bit, as in
//     /tmp, others can add names but not remove or replace root's files.)

// OpenOwned opens path with flag (os.O_WRONLY|os.O_CREATE, say; O_NOFOLLOW,
// O_NONBLOCK and O_CLOEXEC are added) and returns it only if it is a regular
// file owned by the effective user with a single link; otherwise it closes
// it and returns an error naming path, what it found and what is accepted.
// Never pass O_TRUNC: it would cut the file before it is checked; call
// Truncate on the result instead.
func OpenOwned(path string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("%s: OpenOwned: O_TRUNC would truncate the file before it is checked", path)
	}
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, openErr(path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: stat: %w", path, err)
	}
	if err := checkOwned(path, &st, os.Geteuid()); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openErr words an error opening path: ELOOP from O_NOFOLLOW means a
// symbolic link, ENXIO from O_NONBLOCK a FIFO with no reader.
func openErr(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: is a symbolic link; paddock never follows one here (whoever can write the directory could point it anywhere): want a regular file", path)
	case errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%s: open: not a regular file (a FIFO or socket): want a regular file", path)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s: is a directory: want a regular file", path)
	}
	return fmt.Errorf("%s: open: %w", path, err)
}

// checkOwned applies OpenOwned's rules to st, the file opened as name.
func checkOwned(name string, st *unix.Stat_t, euid int) error {
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file (%v): want a regular file", name, fileType(t))
	}
	if int(st.Uid) != euid {
		return fmt.Errorf("%s: owned by uid %d, not by paddock's effective uid %d: refusing a file another user controls (want a regular file owned by uid %d; remove or chown it)", name, st.Uid, euid, euid)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s: has %d hard links: refusing a file that may be another one under a second name (want a single link)", name, st.Nlink)
	}
	return nil
}

// fileType maps a stat mode's file type to os.FileMode's, for messages.
func fileType(t uint32) os.FileMode {
	switch t {
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFIFO:
		return os.ModeNamedPipe
	case unix.S_IFSOCK:
		return os.ModeSocket
	case unix.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		return os.ModeDevice
	case unix.S_IFLNK:
		return os.ModeSymlink
	}
	return os.ModeIrregular
}

// CheckDir applies the directory rule for a root paddock to dir, where a
// journal or report is to be written: when the effective user is root, dir
// must be owned by root, and not group- or world-writable unless it has the
// sticky bit. For any other user it checks nothing (an agent running as
// that user could rewrite its files anyway: see Options.Mirror). The error
// names dir, the rule broken and what is accepted.
func CheckDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	return checkDir(dir, &st, os.Geteuid())
}

// checkDir is CheckDir on st, dir's stat, for a process of effective user euid.
func checkDir(dir string, st *unix.Stat_t, euid int) error {
	if euid != 0 {
		return nil
	}
	dir = filepath.Clean(dir)
	const accepted = "a root paddock writes only in a directory owned by root that is not group- or world-writable, or has the sticky bit"
	if st.Uid != 0 {
		return fmt.Errorf("directory %s is owned by uid %d, not root: that user could replace paddock's files in it (%s)", dir, st.Uid, accepted)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("directory %s has mode %04o: group- or world-writable without the sticky bit, so other users could replace paddock's files in it (%s)", dir, st.Mode&0o7777, accepted)
	}
	return nil
}
