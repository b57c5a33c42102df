// Package callerpath resolves a path the way a trapped caller would: from
// its root and working directory (or one of its descriptors), in its mount
// namespace, with procfs's "self" meaning the caller, not paddock. The
// result is a descriptor on the object itself (O_PATH), so that what paddock
// decides on is what it then acts on for the caller (a connect or an open
// carried out on its behalf): a path read from a caller's memory is never
// handed back to the kernel to resolve again.
//
// The fast path is one openat2(2) that refuses symlinks and ".." above its
// start (most paths have neither); anything else is walked a component at
// a time, with the symlinks read and followed here: procfs's "self" and
// "thread-self" become the caller's numbers, and its magic links (a
// process's fd/N, cwd, root, exe) are followed by the kernel from the
// process directory the walk is in, which names that process, never paddock.
package callerpath

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// maxLinks bounds the symlinks one resolution follows (the kernel's
// MAXSYMLINKS is 40).
const maxLinks = 40

// procRootIno is the inode number of a procfs mount's root (PROC_ROOT_INO).
const procRootIno = 1

// View is one thread's view of the filesystem: its root and its working
// directory, as paddock opened them (O_PATH, through /proc/TID/root and
// /proc/TID/cwd, which name them in the thread's own mount namespace).
type View struct {
	proc      string
	tid, tgid int
	root, cwd int
	// tgids and tids are the caller's numbers in each PID namespace from
	// paddock's down to its own, and started its process's start time:
	// procfs's self names whichever a procfs mount has. numbers, when set,
	// finds them (and the tgid) the first time self is met (NumbersBy).
	tgids, tids []int
	started     uint64
	numbers     func() (tgid int, tgids, tids []int, start uint64)
	// lazyCwd: the working directory is opened when first needed.
	lazyCwd bool
	// local, when set, makes the view's lookups take nothing that may wait
	// on a filesystem (OnlyCached).
	local func(fd int) (magic int64, ok bool)
}

// ErrWouldWait is Resolve's error, in a view made OnlyCached, for a path
// whose lookup or object might have to wait on a filesystem: a name not in
// the kernel's dentry cache, an object on a filesystem the view's gate does
// not vouch for, a path with a symlink or a directory descriptor. Nothing
// was done; the caller resolves it again where it may wait.
var ErrWouldWait = errors.New("the lookup might wait on a filesystem")

// OnlyCached makes the view's later lookups take nothing that may wait on
// a filesystem (a FUSE daemon, a network server): each is served from the
// dentry cache alone (RESOLVE_CACHED), and what it reaches must be vouched
// for by local, which tells, without asking the filesystem, whether the
// object pinned by fd lies on one whose calls wait on nothing but memory
// and disks, and its statfs magic. Anything else fails with ErrWouldWait.
// A supervisor's hot loop resolves so, and hands the rest to a thread that
// may wait.
func (v *View) OnlyCached(local func(fd int) (magic int64, ok bool)) {
	v.local = local
}

// NumbersBy tells the view how to find the caller's process (tgid), its
// numbers in each PID namespace from paddock's down to its own (status's
// NSpid of its process and of its thread) and its start time, the first
// time procfs's self is met (most paths never meet it, and finding them
// reads /proc): "self" in a /proc mounted for a nested PID namespace
// (bwrap --proc, unshare --mount-proc) then names the caller there.
// Without it self is the tgid the view was opened with.
func (v *View) NumbersBy(find func() (tgid int, tgids, tids []int, start uint64)) {
	v.numbers = find
}

// Open opens the view of thread tid of process tgid, through the procfs
// mounted at proc (normally "/proc").
func Open(proc string, tid, tgid int) (*View, error) {
	v := &View{proc: proc, tid: tid, tgid: tgid, root: -1, cwd: -1, lazyCwd: true}
	base := proc + "/" + strconv.Itoa(tid)
	var err error
	if v.root, err = unix.Open(base+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("open %s/root: %w", base, err)
	}
	return v, nil
}

// workdir opens the thread's working directory the first time a relative
// path needs it.
func (v *View) workdir() (int, error) {
	if v.cwd >= 0 || !v.lazyCwd {
		return v.cwd, nil
	}
	v.lazyCwd = false
	name := v.proc + "/" + strconv.Itoa(v.tid) + "/cwd"
	fd, err := unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	v.cwd = fd
	return fd, nil
}

// ErrNoCwd is Resolve's error for a relative path in a view without a
// working directory (HostView).
var ErrNoCwd = errors.New("the caller's working directory could not be read")

// HostView is the view of a thread whose /proc entries paddock may not
// read (a process that made itself non-dumpable): paddock's own root, the
// thread's numbers for procfs's self, and no working directory.
func HostView(tid, tgid int) (*View, error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	return &View{proc: "/proc", tid: tid, tgid: tgid, root: root, cwd: -1}, nil
}

// Close releases the view.
func (v *View) Close() {
	if v == nil {
		return
	}
	unix.Close(v.root)
	if v.cwd >= 0 {
		unix.Close(v.cwd)
	}
}

// Result is the object a path names.
type Result struct {
	// Fd is an O_PATH descriptor on the object, or -1 where it does not
	// exist (Missing) and only its directory could be resolved.
	Fd int
	// Dir is an O_PATH descriptor on the directory the last component was
	// looked up in (-1 where the path was "/" or ended at a magic link).
	Dir int
	// Name is the last component ("" where the path ended at its start).
	Name string
	// Missing says the last component does not exist in Dir.
	Missing bool
	// FSType is the filesystem Fd lies on (statfs's f_type) where the
	// resolution read it, 0 where it did not.
	FSType int64
}

// Close releases r's descriptors.
func (r *Result) Close() {
	if r.Fd >= 0 {
		unix.Close(r.Fd)
	}
	if r.Dir >= 0 {
		unix.Close(r.Dir)
	}
	r.Fd, r.Dir = -1, -1
}

// Resolve resolves p as the view's thread would for a call that takes a
// directory descriptor: dirfd is the caller's own number (unix.AT_FDCWD
// for its working directory), used for a relative p. follow says whether
// a symlink in the last component is followed (O_NOFOLLOW clears it). A
// last component that does not exist is not an error: Result.Missing.
func (v *View) Resolve(dirfd int, p string, follow bool) (Result, error) {
	if p == "" {
		return Result{Fd: -1, Dir: -1}, unix.ENOENT
	}
	if v.local != nil {
		return v.cached(dirfd, p, follow)
	}
	start, owned, err := v.start(dirfd, p)
	if err != nil {
		return Result{Fd: -1, Dir: -1}, err
	}
	if owned {
		defer unix.Close(start)
	}
	if r, err := v.fast(start, p, follow); err == nil {
		return r, nil
	} else if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EAGAIN) {
		return r, err
	}
	return v.walk(start, p, follow)
}

// start finds where a lookup of p begins: the root for an absolute p, the
// working directory or the caller's dirfd for a relative one. The view's
// own descriptors are lent (owned false); a dirfd's is opened for the
// lookup (owned true: the caller closes it).
func (v *View) start(dirfd int, p string) (fd int, owned bool, err error) {
	switch {
	case strings.HasPrefix(p, "/"):
		return v.root, false, nil
	case dirfd == unix.AT_FDCWD:
		cwd, err := v.workdir()
		if err != nil {
			return -1, false, err
		}
		if cwd < 0 {
			return -1, false, ErrNoCwd
		}
		return cwd, false, nil
	case dirfd < 0:
		return -1, false, unix.EBADF
	}
	name := v.proc + "/" + strconv.Itoa(v.tid) + "/fd/" + strconv.Itoa(dirfd)
	fd, err = unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, false, unix.EBADF
	}
	if err != nil {
		return -1, false, fmt.Errorf("open %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return -1, false, unix.ENOTDIR
	}
	return fd, true, nil
}

// cached is Resolve in a view made OnlyCached: the fast path's lookups
// from the dentry cache alone, for an absolute path or one relative to the
// working directory, that follows its last component and has no symlink;
// a missing last component is looked up in its directory once that
// directory is vouched for.
func (v *View) cached(dirfd int, p string, follow bool) (Result, error) {
	r := Result{Fd: -1, Dir: -1}
	dir, name := path.Split(p)
	if (dirfd != unix.AT_FDCWD && !strings.HasPrefix(p, "/")) || !follow || name == "" || name == "." || name == ".." {
		return r, ErrWouldWait
	}
	start, _, err := v.start(dirfd, p) // the view's own: lent
	if err != nil {
		return r, err
	}
	res := plainLookup(p) | sys.ResolveCached
	fd, err := unix.Openat2(start, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: res})
	if err == nil {
		magic, ok := v.local(fd)
		if !ok {
			unix.Close(fd)
			return r, ErrWouldWait
		}
		r.Fd, r.Name, r.FSType = fd, name, magic
		return r, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return r, ErrWouldWait
	}
	if dir == "" {
		dir = "."
	}
	d, err := unix.Openat2(start, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: res})
	if err != nil {
		return r, ErrWouldWait
	}
	if _, ok := v.local(d); !ok {
		unix.Close(d)
		return r, ErrWouldWait
	}
	r.Dir, r.Name = d, name
	if err := v.last(&r, follow, false); err != nil || !r.Missing {
		// Made meanwhile, or not readable: looked up again where it may
		// wait (it may be a mount of another filesystem).
		r.Close()
		return r, ErrWouldWait
	}
	return r, nil
}

// plainLookup is the openat2 resolve flags of a lookup of p that follows
// no symlink and climbs nowhere above its start (the root, for an
// absolute p): exact wherever it succeeds.
func plainLookup(p string) uint64 {
	if strings.HasPrefix(p, "/") {
		return unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_IN_ROOT
	}
	return unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH
}

func dup(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// fast resolves p with one openat2 that follows no symlink and climbs
// nowhere above start (the root, for an absolute p): exact wherever it
// succeeds. ELOOP (a symlink) and EXDEV (".." above start) send the
// caller to walk.
func (v *View) fast(start int, p string, follow bool) (Result, error) {
	r := Result{Fd: -1, Dir: -1}
	res := plainLookup(p)
	dir, name := path.Split(strings.TrimRight(p, "/"))
	if name == "" || name == "." || name == ".." {
		fd, err := unix.Openat2(start, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: res})
		if err != nil {
			return r, err
		}
		r.Fd = fd
		return r, nil
	}
	if follow && !strings.HasSuffix(p, "/") {
		// The whole path in one lookup, where it names an object that
		// exists on neither procfs nor cgroupfs (whose decisions need the
		// directory the object was found in): most opens for writing.
		// Anything else takes the lookup below.
		fd, err := unix.Openat2(start, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: res})
		if err == nil {
			var fs unix.Statfs_t
			if err := unix.Fstatfs(fd, &fs); err != nil {
				unix.Close(fd)
				return r, err
			}
			if t := int64(fs.Type); t != unix.PROC_SUPER_MAGIC && t != unix.CGROUP2_SUPER_MAGIC && t != unix.CGROUP_SUPER_MAGIC {
				r.Fd, r.Name, r.FSType = fd, name, t
				return r, nil
			}
			unix.Close(fd)
		}
	}
	if dir == "" {
		dir = "."
	}
	d, err := unix.Openat2(start, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: res})
	if err != nil {
		return r, err
	}
	r.Dir, r.Name = d, name
	if err := v.last(&r, follow, strings.HasSuffix(p, "/")); err != nil {
		r.Close()
		return r, err
	}
	return r, nil
}

// last looks r.Name up in r.Dir, without following a symlink there: a
// symlink (that must be followed) sends the caller to walk with ELOOP.
func (v *View) last(r *Result, follow, dirOnly bool) error {
	fd, err := unix.Openat(r.Dir, r.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		r.Missing = true
		return nil
	}
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && (follow || dirOnly) {
		unix.Close(fd)
		return unix.ELOOP
	}
	if dirOnly && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return unix.ENOTDIR
	}
	r.Fd = fd
	return nil
}

// walk resolves p a component at a time from start, reading symlinks here
// (see the package comment).
func (v *View) walk(start int, p string, follow bool) (Result, error) {
	r := Result{Fd: -1, Dir: -1}
	cur, err := dup(start)
	if err != nil {
		return r, err
	}
	closeCur := func() {
		if cur >= 0 {
			unix.Close(cur)
		}
	}
	rest := components(p)
	dirOnly := strings.HasSuffix(p, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		lastComp := len(rest) == 0
		switch name {
		case ".":
			continue
		case "..":
			up, err := v.parent(cur)
			if err != nil {
				closeCur()
				return r, err
			}
			unix.Close(cur)
			cur = up
			continue
		}
		fd, err := unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && lastComp {
			r.Dir, r.Name, r.Missing = cur, name, true
			return r, nil
		}
		if err != nil {
			closeCur()
			return r, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			closeCur()
			return r, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK || (lastComp && !follow && !dirOnly) {
			if lastComp {
				if dirOnly && st.Mode&unix.S_IFMT != unix.S_IFDIR {
					unix.Close(fd)
					closeCur()
					return r, unix.ENOTDIR
				}
				r.Dir, r.Name, r.Fd = cur, name, fd
				return r, nil
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				unix.Close(fd)
				closeCur()
				return r, unix.ENOTDIR
			}
			unix.Close(cur)
			cur = fd
			continue
		}
		links++
		if links > maxLinks {
			unix.Close(fd)
			closeCur()
			return r, unix.ELOOP
		}
		magic, target, err := v.link(cur, fd, name)
		unix.Close(fd)
		if err != nil {
			closeCur()
			return r, err
		}
		if magic {
			// A process's fd/N, cwd, root or exe: the kernel follows it from
			// the process directory the walk is in.
			next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				closeCur()
				return r, err
			}
			if lastComp {
				r.Fd = next
				closeCur()
				return r, nil
			}
			unix.Close(cur)
			cur = next
			continue
		}
		if strings.HasPrefix(target, "/") {
			unix.Close(cur)
			if cur, err = dup(v.root); err != nil {
				return r, err
			}
		}
		rest = append(components(target), rest...)
	}
	// The path ended at a directory it started from or climbed to.
	r.Fd = cur
	return r, nil
}

// link reads symlink fd (named name in cur): magic says it is one of
// procfs's links the kernel follows itself (a process's fd/N, cwd, root,
// exe, map_files, ns); otherwise target is what it says, with procfs's
// "self" and "thread-self" read as the caller's.
func (v *View) link(cur, fd int, name string) (magic bool, target string, err error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(cur, &fs); err != nil {
		return false, "", err
	}
	if fs.Type == unix.PROC_SUPER_MAGIC {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return false, "", err
		}
		if st.Ino != procRootIno {
			return true, "", nil
		}
		switch name {
		case "self":
			tgid, _ := v.numbered(cur)
			return false, strconv.Itoa(tgid), nil
		case "thread-self":
			tgid, tid := v.numbered(cur)
			return false, strconv.Itoa(tgid) + "/task/" + strconv.Itoa(tid), nil
		}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return false, "", err
	}
	return false, string(buf[:n]), nil
}

// numbered is the caller's tgid and tid as the procfs mount whose root is
// procRoot numbers them: the level of the caller's PID namespaces whose
// /proc/N has the caller's start time.
func (v *View) numbered(procRoot int) (tgid, tid int) {
	if v.numbers != nil {
		if g, gs, ts, st := v.numbers(); g > 0 {
			v.tgid, v.tgids, v.tids, v.started = g, gs, ts, st
		}
		v.numbers = nil
	}
	for i, n := range v.tgids {
		if i >= len(v.tids) || v.started == 0 {
			break
		}
		fd, err := unix.Openat(procRoot, strconv.Itoa(n)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var buf [1024]byte
		k, rerr := unix.Read(fd, buf[:])
		unix.Close(fd)
		if rerr == nil && k > 0 && StartTime(buf[:k]) == v.started {
			return n, v.tids[i]
		}
	}
	return v.tgid, v.tid
}

// StartTime reads the start time (field 22) of a /proc/PID/stat line (0
// where it cannot).
func StartTime(stat []byte) uint64 {
	line := string(stat)
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(line[i+1:])
	if len(f) <= 19 {
		return 0
	}
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// parent is ".." of cur as the view's thread sees it: cur itself at its
// root.
func (v *View) parent(cur int) (int, error) {
	same, err := sameObject(cur, v.root)
	if err != nil {
		return -1, err
	}
	if same {
		return dup(cur)
	}
	return unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// sameObject reports whether a and b name the same directory of the same
// mount (a bind mount of it elsewhere is another place).
func sameObject(a, b int) (bool, error) {
	var sa, sb unix.Statx_t
	mask := unix.STATX_INO | unix.STATX_MNT_ID
	if err := unix.Statx(a, "", unix.AT_EMPTY_PATH, mask, &sa); err != nil {
		return false, err
	}
	if err := unix.Statx(b, "", unix.AT_EMPTY_PATH, mask, &sb); err != nil {
		return false, err
	}
	return sa.Ino == sb.Ino && sa.Dev_major == sb.Dev_major && sa.Dev_minor == sb.Dev_minor && sa.Mnt_id == sb.Mnt_id, nil
}

// components splits p into its names, empty ones dropped.
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// ProcDir finds, for name in directory dir on a procfs mount, the /proc/N
// directory it lies in: N as that mount numbers it, and the path below it
// ("oom_score_adj", "task/12/comm"); ok is false where dir is not on
// procfs or the object lies in no process's directory (/proc/sys/...,
// /proc itself). It climbs from dir with "..", never by name.
func ProcDir(dir int, name string) (n int, below string, ok bool, err error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(dir, &fs); err != nil {
		return 0, "", false, err
	}
	if fs.Type != unix.PROC_SUPER_MAGIC {
		return 0, "", false, nil
	}
	cur, err := dup(dir)
	if err != nil {
		return 0, "", false, err
	}
	defer func() { unix.Close(cur) }()
	names := []string{name}
	for depth := 0; depth < 16; depth++ {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return 0, "", false, err
		}
		if st.Ino == procRootIno {
			return 0, "", false, nil
		}
		here, err := nameOf(cur)
		if err != nil {
			return 0, "", false, err
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, "", false, err
		}
		var pst unix.Stat_t
		if err := unix.Fstat(up, &pst); err != nil {
			unix.Close(up)
			return 0, "", false, err
		}
		unix.Close(cur)
		cur = up
		if pst.Ino == procRootIno {
			pid, err := strconv.Atoi(here)
			if err != nil || pid <= 0 {
				return 0, "", false, nil
			}
			return pid, path.Join(names...), true, nil
		}
		names = append([]string{here}, names...)
	}
	return 0, "", false, nil
}

// nameOf is the last component of the path the kernel has for fd.
func nameOf(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/thread-self/fd/"+strconv.Itoa(fd), buf)
	if err != nil {
		return "", err
	}
	return path.Base(string(buf[:n])), nil
}
