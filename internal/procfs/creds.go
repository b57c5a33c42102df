package procfs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Creds holds what the kernel's signal permission check and a signal's
// sender fields need of one thread, from a single read of
// /proc/TID/status: who it is (user ids, as the reader's user namespace
// shows them), what it may (effective capabilities), which process it
// belongs to, its pid in each PID namespace from the reader's down to its
// own, and how many seccomp filters it runs under.
type Creds struct {
	Tgid int
	// Uid is the real, effective, saved and filesystem user id.
	Uid [4]uint32
	// Gid is the real, effective, saved and filesystem group id (zero
	// where the line is missing).
	Gid [4]uint32
	// Groups are the supplementary group ids, as listed.
	Groups []uint32
	CapEff uint64
	// NSpid is the pid in the reader's PID namespace first, the thread's
	// own namespace last (one entry when they are the same); NSpgid and
	// NSsid are its process group's and session's ids the same way (0
	// where the group or session lies outside a namespace).
	NSpid, NSpgid, NSsid []int
	SeccompFilters       int
	// Umask is the process's file mode creation mask (Linux 4.7+; 0o022
	// where the line is missing, the kernel's default).
	Umask uint32
}

// Creds reads /proc/TID/status. A thread that no longer exists yields an
// error wrapping ErrNotFound.
func (fs FS) Creds(tid int) (Creds, error) {
	if tid <= 0 {
		return Creds{}, fmt.Errorf("status of tid %d: %w", tid, ErrNotFound)
	}
	var buf [4096]byte
	n, err := readSmall(fs.path(tid, "status"), buf[:])
	if err != nil {
		return Creds{}, err
	}
	c, err := ParseCreds(buf[:n])
	if err != nil {
		return Creds{}, fmt.Errorf("read %s: %w", fs.path(tid, "status"), err)
	}
	return c, nil
}

// ParseCreds extracts Creds from the contents of /proc/TID/status. Tgid,
// Uid and CapEff are required; NSpid (Linux 4.1+) defaults to the Tgid
// line's pid and Seccomp_filters (5.9+) to 0.
func ParseCreds(b []byte) (Creds, error) {
	var c Creds
	var err error
	if c.Tgid, err = ParseTgid(b); err != nil {
		return c, err
	}
	v, ok := field(b, "Uid:")
	if !ok {
		return c, fmt.Errorf("no Uid line")
	}
	f := strings.Fields(v)
	if len(f) != 4 {
		return c, fmt.Errorf("Uid %q: want 4 ids", truncate([]byte(v)))
	}
	for i, s := range f {
		u, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return c, fmt.Errorf("Uid %q: %w", truncate([]byte(v)), numError(err))
		}
		c.Uid[i] = uint32(u)
	}
	if v, ok := field(b, "Gid:"); ok {
		if f := strings.Fields(v); len(f) == 4 {
			for i, x := range f {
				g, err := strconv.ParseUint(x, 10, 32)
				if err != nil {
					return c, fmt.Errorf("Gid %q: %w", truncate([]byte(v)), numError(err))
				}
				c.Gid[i] = uint32(g)
			}
		}
	}
	if v, ok := field(b, "Groups:"); ok {
		for _, x := range strings.Fields(v) {
			g, err := strconv.ParseUint(x, 10, 32)
			if err != nil {
				return c, fmt.Errorf("Groups %q: %w", truncate([]byte(v)), numError(err))
			}
			c.Groups = append(c.Groups, uint32(g))
		}
	}
	c.Umask = 0o022
	if v, ok := field(b, "Umask:"); ok {
		u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
		if err != nil {
			return c, fmt.Errorf("Umask %q: %w", truncate([]byte(v)), numError(err))
		}
		c.Umask = uint32(u)
	}
	if v, ok = field(b, "CapEff:"); !ok {
		return c, fmt.Errorf("no CapEff line")
	}
	if c.CapEff, err = strconv.ParseUint(v, 16, 64); err != nil {
		return c, fmt.Errorf("CapEff %q: %w", truncate([]byte(v)), numError(err))
	}
	for _, l := range []struct {
		key  string
		list *[]int
		min  int
	}{{"NSpid:", &c.NSpid, 1}, {"NSpgid:", &c.NSpgid, 0}, {"NSsid:", &c.NSsid, 0}} {
		v, ok := field(b, l.key)
		if !ok {
			continue
		}
		for _, s := range strings.Fields(v) {
			p, err := strconv.Atoi(s)
			if err != nil || p < l.min {
				return c, fmt.Errorf("%s %q: not a list of ids", strings.TrimSuffix(l.key, ":"), truncate([]byte(v)))
			}
			*l.list = append(*l.list, p)
		}
	}
	if len(c.NSpid) == 0 {
		// The Pid line is this thread's id; the process's is Tgid, which is
		// what a signal's sender field names.
		c.NSpid = []int{c.Tgid}
	}
	if _, c.SeccompFilters, err = ParseSeccomp(b); err != nil {
		// Seccomp lines are absent without CONFIG_SECCOMP: no filters.
		c.SeccompFilters = 0
	}
	return c, nil
}

// Namespace is the inode that identifies namespace kind ("pid", "user",
// ...) of process pid, from /proc/PID/ns/KIND; pid 0 is the reader itself
// (/proc/self). Two processes are in the same namespace when the inodes
// are equal. A process that no longer exists yields an error wrapping
// ErrNotFound.
func (fs FS) Namespace(pid int, kind string) (uint64, error) {
	p := fs.Root + "/self/ns/" + kind
	if pid != 0 {
		p = fs.path(pid, "ns/"+kind)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return 0, fmt.Errorf("stat %s: %w", p, ErrNotFound)
		}
		return 0, fmt.Errorf("stat %s: %w", p, err)
	}
	return st.Ino, nil
}

// maxPidNSLevel bounds a walk up PID namespaces: the kernel nests them at
// most 32 deep (MAX_PID_NS_LEVEL).
const maxPidNSLevel = 32

// PidNSWithin reports whether process pid's PID namespace is the one whose
// inode is ns, or one nested in it: it walks up from pid's namespace
// (NS_GET_PARENT), which ends at the reader's own. A process that no
// longer exists yields an error wrapping ErrNotFound.
func (fs FS) PidNSWithin(pid int, ns uint64) (bool, error) {
	p := fs.path(pid, "ns/pid")
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return false, fmt.Errorf("open %s: %w", p, ErrNotFound)
		}
		return false, fmt.Errorf("open %s: %w", p, err)
	}
	defer func() { unix.Close(fd) }()
	for range maxPidNSLevel + 1 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return false, fmt.Errorf("fstat %s: %w", p, err)
		}
		if st.Ino == ns {
			return true, nil
		}
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		if errors.Is(err, unix.EPERM) {
			return false, nil // above the reader's own namespace: not within
		}
		if err != nil {
			return false, fmt.Errorf("NS_GET_PARENT of %s's namespaces: %w", p, err)
		}
		unix.Close(fd)
		fd = parent
	}
	return false, fmt.Errorf("%s: more than %d PID namespaces deep", p, maxPidNSLevel)
}
