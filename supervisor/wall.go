package supervisor

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/callerpath"
	"github.com/paddock-dev/paddock/internal/dbuswire"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/policy"
)

// WallConfig says what the default wall (docs/deputies.md) guards beyond
// the calls it traps: the deputies' sockets paddock knows by path, and
// which of them the session's profile opens to the agent.
type WallConfig struct {
	// Sockets maps a deputy to the paths of its sockets, as paddock sees
	// them (the Docker and Podman API sockets, the system and session
	// buses); a socket the agent names is compared with them by inode.
	Sockets map[policy.Deputy][]string
	// EnginesAllowed opens the container engines' sockets (Docker,
	// Podman) to the agent (the profile's deputies_allowed).
	EnginesAllowed map[policy.Deputy]bool
}

// wallState is a session's WallConfig, its deputies' sockets found.
type wallState struct {
	cfg WallConfig
	// known are the deputies' sockets by device and inode.
	known map[devIno]policy.Deputy
	// umask is paddock's own file mode mask, which an open it makes for a
	// caller applies on top of the caller's.
	umask uint32
	// strict says the session runs with --strict-wall.
	strict bool
	// control is the session's control socket, and serveControl serves a
	// connection to it that paddock made for one of the session's
	// processes, as that process's (redirect).
	control      devIno
	serveControl func(conn *net.UnixConn, cred unix.Ucred, pidfd int)
	// relayBus relays a connection to a D-Bus bus through paddock's filter
	// (package dbusproxy) for process caller, whose environment is env
	// (abi: the table its connect came through, for the reports).
	relayBus func(client, bus *net.UnixConn, dep policy.Deputy, caller int, abi string, env []string)
	// own is paddock's own credentials, which an open or connect it makes
	// for a caller carries (see asPaddock).
	own ownCreds
}

// ownCreds is what the kernel checks an open or a connect against: the
// filesystem ids, the supplementary groups, the effective capabilities
// and the user namespace they count in.
type ownCreds struct {
	creds  procfs.Creds
	userNS uint64 // its inode (procfs.FS.Namespace)
	// privileged says paddock may do what a process of its session may
	// not (it is root, or holds capabilities); known says creds and
	// userNS were read.
	privileged, known bool
}

// readOwnCreds reads paddock's own credentials (fs: its /proc).
func readOwnCreds(fs procfs.FS) ownCreds {
	var o ownCreds
	c, err := fs.Creds(os.Getpid())
	if err != nil {
		o.privileged = true // unknown: as if it could do anything
		return o
	}
	o.creds, o.privileged = c, c.Uid[1] == 0 || c.CapEff != 0
	ns, err := fs.Namespace(0, "user")
	o.userNS, o.known = ns, err == nil
	return o
}

// asPaddock reports whether c's caller may do whatever paddock may in an
// open or a connect made for it: always where paddock is unprivileged (a
// process of its session has its user and groups, and may not give them
// up: no_new_privs); else only where the caller's filesystem ids, groups
// and user namespace are paddock's and it lacks none of paddock's
// accessCaps. A root paddock's agent may start a process that drops to
// another user or drops capabilities (su, setpriv, a daemon), and an open
// or connect of paddock's would give it root's access; that process's
// calls run as it made them instead, with its own. Anything not read
// counts as different. Without a wall's state (no walled calls), true.
func (c *call) asPaddock() bool {
	if c.w.wall == nil {
		return true
	}
	own := c.w.wall.own
	if !own.privileged {
		return true
	}
	if !own.known {
		return false
	}
	cr, err := c.w.fs.Creds(c.req.Tid)
	if err != nil || !mayAll(cr, own.creds) {
		return false
	}
	ns, err := c.w.fs.Namespace(c.req.Tid, "user")
	return err == nil && ns == own.userNS
}

// mayAll reports whether a process of credentials cr may open and connect
// to all that one of credentials own may (in the same user namespace):
// the same filesystem ids and groups, and none of own's accessCaps
// missing.
func mayAll(cr, own procfs.Creds) bool {
	return cr.Uid[3] == own.Uid[3] && cr.Gid[3] == own.Gid[3] && own.CapEff&accessCaps&^cr.CapEff == 0 && sameSet(cr.Groups, own.Groups)
}

// accessCaps are the capabilities that widen what an open or a connect
// may reach: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER and
// CAP_SYS_ADMIN. A caller that lacks others of paddock's (a root agent
// has no CAP_SYS_PTRACE) loses nothing by paddock's carrying out its open.
const accessCaps = 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_FOWNER | 1<<unix.CAP_SYS_ADMIN

// sameSet reports whether a and b hold the same ids, in any order. The
// kernel lists a process's groups sorted, so the first comparison is
// normally the answer, without copies.
func sameSet(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.Equal(a, b) {
		return true
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

type devIno struct{ dev, ino uint64 }

// newWallState finds cfg's deputies' sockets.
func newWallState(cfg WallConfig, strict bool) *wallState {
	ws := &wallState{cfg: cfg, known: make(map[devIno]policy.Deputy), strict: strict}
	for dep, paths := range cfg.Sockets {
		for _, p := range paths {
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
				ws.known[devIno{st.Dev, st.Ino}] = dep
			}
		}
	}
	old := unix.Umask(0o022)
	unix.Umask(old)
	ws.umask = uint32(old)
	ws.own = readOwnCreds(procfs.Default())
	return ws
}

// wallCall is what was read of a walled call from its caller.
type wallCall struct {
	// An open: its path, directory descriptor, flags and mode, and
	// openat2's resolve flags.
	path    string
	dirfd   int
	flags   uint64
	mode    uint32
	resolve uint64
	// A connect or sendto: the socket, the address as read, and sendto's
	// data and flags.
	sock     int
	addr     []byte
	data     []byte
	sendFlag int
	err      error
}

// maxSendto bounds the data of a sendto paddock carries out for its caller
// (a unix datagram is at most about 200 KiB).
const maxSendto = 1 << 20

// readWall reads what deciding walled call c needs from its caller.
func (c *call) readWall(abi filter.ABI, args [6]uint64) {
	wc := &c.wall
	*wc = wallCall{dirfd: unix.AT_FDCWD, sock: -1}
	c.req.Wall = &policy.Wall{}
	c.callerRead = true
	ps := abi.PointerSize()
	ptr := func(v uint64) uint64 {
		if ps == 4 {
			return uint64(uint32(v))
		}
		return v
	}
	pm := &procMem{tid: c.req.Tid, memFd: -1}
	defer pm.close()
	m := &memReader{mem: pm, buf: c.w.buf[:]}
	str := func(addr uint64) {
		p, trunc, err := m.cstring(ptr(addr), maxPath)
		if err == nil && trunc {
			err = unix.ENAMETOOLONG
		}
		wc.path, wc.err = p, err
	}
	bytesAt := func(addr, n uint64, limit int) []byte {
		if n > uint64(limit) {
			wc.err = fmt.Errorf("%d bytes at %#x: more than paddock reads (%d)", n, addr, limit)
			return nil
		}
		buf := make([]byte, n)
		if n == 0 {
			return buf
		}
		if _, err := readMem(c.req.Tid, ptr(addr), buf); err != nil {
			wc.err = err
			return nil
		}
		return buf
	}
	sc := c.req.Syscall
	switch sc {
	case filter.Open:
		str(args[0])
		wc.flags, wc.mode = args[1], uint32(args[2])
	case filter.Creat:
		str(args[0])
		wc.flags, wc.mode = unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(args[1])
	case filter.Openat:
		wc.dirfd = int(int32(uint32(args[0])))
		str(args[1])
		wc.flags, wc.mode = args[2], uint32(args[3])
	case filter.Openat2:
		wc.dirfd = int(int32(uint32(args[0])))
		str(args[1])
		if how := bytesAt(args[2], min(args[3], unix.SizeofOpenHow), unix.SizeofOpenHow); len(how) == unix.SizeofOpenHow {
			wc.flags = binary.LittleEndian.Uint64(how[0:])
			wc.mode = uint32(binary.LittleEndian.Uint64(how[8:]))
			wc.resolve = binary.LittleEndian.Uint64(how[16:])
		} else if wc.err == nil {
			wc.err = fmt.Errorf("openat2's struct open_how of %d bytes", args[3])
		}
	case filter.Connect:
		wc.sock = int(int32(uint32(args[0])))
		wc.addr = bytesAt(args[1], uint64(uint32(args[2])), unix.SizeofSockaddrAny)
	case filter.Sendto:
		wc.sock = int(int32(uint32(args[0])))
		wc.sendFlag = int(int32(uint32(args[3])))
		wc.addr = bytesAt(args[4], uint64(uint32(args[5])), unix.SizeofSockaddrAny)
		if wc.err == nil {
			wc.data = bytesAt(args[1], args[2], maxSendto)
		}
	case filter.Socketcall:
		// socketcall(call, args): six unsigned longs of i386 (4 bytes).
		a := bytesAt(args[1], 24, 24)
		if wc.err != nil {
			break
		}
		word := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(a[4*i:])) }
		wc.sock = int(int32(uint32(word(0))))
		if uint32(args[0]) == filter.SocketcallConnect {
			wc.addr = bytesAt(word(1), word(2), unix.SizeofSockaddrAny)
		} else {
			wc.sendFlag = int(int32(uint32(word(3))))
			wc.addr = bytesAt(word(4), word(5), unix.SizeofSockaddrAny)
			if wc.err == nil {
				wc.data = bytesAt(word(1), word(2), maxSendto)
			}
		}
	}
	wl := c.req.Wall
	wl.Path, wl.Flags, wl.Err = wc.path, wc.flags, wc.err
	if wc.addr != nil && len(wc.addr) >= 2 {
		wl.Family = int(binary.LittleEndian.Uint16(wc.addr))
	}
	if ws := c.w.wall; ws != nil {
		wl.StrictWall = ws.strict
	}
	wl.Scoped = c.w.scoped
	c.wallRead, c.redecided = *wl, 0
}

// connectLike reports whether a walled call is a connect or a sendto
// (i386's socketcall for either included).
func connectLike(sc filter.Syscall) bool {
	return sc == filter.Connect || sc == filter.Sendto || sc == filter.Socketcall
}

// decideWall decides walled call c and carries it out on its caller's
// behalf: the path resolved as the caller sees it, the target's facts
// found, policy asked, and, where it allows, the open or connect made by
// paddock against the object it resolved (never the caller's memory read
// again): the decision and the call see the same object.
func (c *call) decideWall() (policy.Decision, answer.Answer) {
	wl := c.req.Wall
	if wl.Err != nil && errors.Is(wl.Err, policy.ErrUnreadable) && c.req.AllowUnread {
		// A caller that made itself non-dumpable: paddock may not read
		// what it names, as for its execs (docs/limits.md); reported as
		// unread, not shown to it.
		return policy.Decision{Syscall: c.req.Syscall.String(), Allow: true, Unread: true, Rule: audit.RuleExecUnread,
			Action: audit.WallUnread}, answer.Continue()
	}
	if wl.Err != nil {
		d := policy.Decide(c.req, c.world())
		return d, answer.Refuse(d.Errno)
	}
	if connectLike(c.req.Syscall) {
		return c.wallConnect()
	}
	if c.wall.flags&unix.O_PATH != 0 || (c.req.Syscall == filter.Openat2 && c.wall.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) == 0) {
		// It writes nothing: O_PATH ignores the access mode (and its
		// descriptor could not be handed over), and an openat2 is trapped
		// only because the filter cannot read its flags. The flags of an
		// openat2 were read from memory: docs/limits.md says what a thread
		// rewriting them could do.
		return policy.Decision{Syscall: c.req.Syscall.String(), Allow: true, Rule: audit.RuleWallPassed}, answer.Continue()
	}
	return c.wallOpen()
}

// wallOpen decides and carries out an open for writing.
func (c *call) wallOpen() (policy.Decision, answer.Answer) {
	wc := &c.wall
	v, err := c.view()
	if err != nil {
		return c.wallFail(err)
	}
	defer v.Close()
	if wc.resolve != 0 {
		// openat2 with its own resolve flags: the kernel's rules, from the
		// caller's descriptor.
		if c.here {
			return c.wouldWait()
		}
		return c.wallOpenat2()
	}
	if c.here {
		mounts, proc, tid := c.w.mounts, c.w.fs.Root, c.req.Tid
		v.OnlyCached(func(fd int) (int64, bool) { return mounts.local(fd, proc, tid) })
	}
	follow := wc.flags&unix.O_NOFOLLOW == 0
	res, err := v.Resolve(wc.dirfd, wc.path, follow)
	if errors.Is(err, callerpath.ErrWouldWait) {
		return c.wouldWait()
	}
	if errors.Is(err, callerpath.ErrNoCwd) {
		return c.wallFail(fmt.Errorf("%w: paddock may not read this process's working directory (it is not dumpable)", err))
	}
	if err != nil {
		return c.wallErrno(err)
	}
	defer res.Close()
	return c.finishOpen(&res)
}

// finishOpen decides an open for writing of what res resolved, and carries
// out what policy allows: an open of paddock's own, handed over; or, behind
// the strict wall, for a write into a /proc file (a process's own, or
// /proc/sys, whose sysctls the kernel finds in the opener's namespaces) and
// for a character device (isCharDevice), the call as its caller made it.
// Behind the strict wall the kernel refuses
// writes to /proc/PID and cgroup files to the agent whatever its memory
// says by the time the call runs; for a process's own /proc files, the
// kernel then checks the ptrace-class ones (mem) against the agent's
// Landlock domain, and a user namespace's maps against the opener's, as an
// open of paddock's own would not (docs/limits.md: what a thread rewriting
// the path meanwhile could reach).
func (c *call) finishOpen(res *callerpath.Result) (policy.Decision, answer.Answer) {
	wc, wl := &c.wall, c.req.Wall
	if err := c.wallFacts(res); err != nil {
		wl.Err = err
	}
	d := c.decideForced()
	if !d.Allow {
		return d, answer.Refuse(d.Errno)
	}
	// On the loop only plain files, directories and /dev/null get here
	// (wallhere.go): no device but /dev/null, which sets nothing up. A
	// caller with less than paddock's power opens with its own rights
	// (asPaddock, read last: it costs a /proc read under a root paddock).
	if ws := c.w.wall; (ws != nil && ws.strict) || wl.FS == "proc" || (!c.here && isCharDevice(res)) || !c.asPaddock() {
		return d, answer.Continue()
	}
	fd, err := c.openOnBehalf(res)
	if c.here && errors.Is(err, unix.EWOULDBLOCK) && wc.flags&unix.O_NONBLOCK == 0 {
		// A lease another process holds on the file: its break is waited
		// for off the loop.
		return c.wouldWait()
	}
	if errors.Is(err, errMadeMeanwhile) {
		if c.here {
			return c.wouldWait()
		}
		if c.redecided < maxRedecide {
			c.redecided++
			*wl = c.wallRead
			return c.wallOpen()
		}
		err = unix.EAGAIN
	}
	if err != nil {
		return d, answer.Completed(errnoOf(err))
	}
	return d, answer.Descriptor(fd, wc.flags&unix.O_CLOEXEC != 0)
}

// isCharDevice reports whether res is a character device, which the
// caller opens itself: what a device's open sets up belongs to its opener,
// so an open of paddock's would give the caller a device set up for
// paddock. /dev/tty opens its opener's controlling terminal (paddock's is
// the user's); any other terminal (a pty's slave, a console) becomes the
// controlling terminal of a session leader without one that opens it
// (script, expect, a pty's child that opens its slave after setsid);
// /dev/fuse is mounted only in its opener's user namespace (fuse-overlayfs
// under unshare -r failed with EINVAL); /dev/net/tun makes its devices in
// its opener's network namespace; /dev/ptmx finds the devpts instance
// beside the path it was opened by. None is a file the wall guards.
func isCharDevice(res *callerpath.Result) bool {
	if res.Fd < 0 {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(res.Fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR
}

// decideForced is policy.Decide of c, forced to allow in a test build
// (forceallow.go: the kernel's walls alone).
func (c *call) decideForced() policy.Decision {
	d := policy.Decide(c.req, c.world())
	if forceAllow && d.Refusal {
		d.Allow, d.Refusal, d.Errno, d.Message = true, false, 0, ""
	}
	return d
}

// view opens the filesystem view of c's caller: its own, or, for a
// caller paddock may not inspect (it made itself non-dumpable), paddock's
// root with no working directory (callerpath.HostView).
func (c *call) view() (*callerpath.View, error) {
	tid := c.req.Tid
	v, err := callerpath.Open(c.w.fs.Root, tid, tid)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		v, err = callerpath.HostView(tid, tid)
	}
	if err != nil {
		return nil, err
	}
	// Its process and its numbers in each PID namespace, for procfs's self
	// (in a /proc of a nested one too), read only where a path meets it.
	fs := c.w.fs
	v.NumbersBy(func() (int, []int, []int, uint64) {
		tc, err := fs.Creds(tid)
		if err != nil {
			return 0, nil, nil, 0
		}
		pc := tc
		if tc.Tgid != tid {
			if pc, err = fs.Creds(tc.Tgid); err != nil {
				return 0, nil, nil, 0
			}
		}
		st, err := fs.Stat(tc.Tgid)
		if err != nil {
			return tc.Tgid, nil, nil, 0
		}
		return tc.Tgid, pc.NSpid, tc.NSpid, st.StartTime
	})
	return v, nil
}

// wallFacts finds what policy needs of the object res resolved: its
// filesystem, and for a process's /proc file or a cgroup's, whose it is.
func (c *call) wallFacts(res *callerpath.Result) error {
	wl := c.req.Wall
	probe := res.Fd
	if res.Missing || probe < 0 {
		probe = res.Dir
	}
	if probe < 0 {
		return nil
	}
	fsType := res.FSType
	if fsType == 0 || probe != res.Fd {
		var fs unix.Statfs_t
		if err := unix.Fstatfs(probe, &fs); err != nil {
			return fmt.Errorf("statfs %s: %w", wl.Path, err)
		}
		fsType = int64(fs.Type)
	}
	switch fsType {
	case unix.PROC_SUPER_MAGIC:
		wl.FS = "proc"
		if res.Dir < 0 {
			// A magic link's object on procfs (the caller reopening a
			// process's file through its own descriptor): whose it is
			// cannot be told from here.
			var st unix.Stat_t
			if unix.Fstat(res.Fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return nil
			}
			return fmt.Errorf("%s reaches a /proc file through a descriptor link, whose process paddock cannot tell", wl.Path)
		}
		n, below, ok, err := callerpath.ProcDir(res.Dir, res.Name)
		if err != nil {
			return fmt.Errorf("the /proc directory of %s: %w", wl.Path, err)
		}
		if !ok {
			return nil
		}
		host, err := c.procHost(n, res)
		if err != nil {
			return err
		}
		wl.Proc, wl.ProcFile = host, below
	case unix.CGROUP2_SUPER_MAGIC, unix.CGROUP_SUPER_MAGIC:
		wl.FS = "cgroup"
		dir := res.Dir
		if res.Fd >= 0 {
			var st unix.Stat_t
			if unix.Fstat(res.Fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				dir = res.Fd
			}
		}
		if dir < 0 {
			return fmt.Errorf("%s reaches a cgroup file through a descriptor link, whose cgroup paddock cannot tell", wl.Path)
		}
		if dir == res.Dir {
			// The name the object was looked up by in its cgroup's
			// directory (a cgroup file cannot be renamed).
			wl.CgroupFile = res.Name
		}
		wl.Cgroup, _ = os.Readlink(procfs.FdPath(dir))
		wl.Members, wl.CgroupErr = cgroupMembers(dir)
	}
	return nil
}

// procHost turns the number n of a /proc/N directory, as the procfs mount
// the caller's path reached numbers it, into paddock's, and checks that
// both name the same process (its start time).
func (c *call) procHost(n int, res *callerpath.Result) (int, error) {
	host := n
	c.names.reset(c.w.fs, c.w.selfNS, c.req.Tid, c.w.sameNS)
	if h, err := c.names.Host(n); err == nil && h > 0 {
		host = h
	}
	st, err := c.w.fs.Stat(host)
	if err != nil {
		return 0, fmt.Errorf("process %d of %s: %w", n, c.req.Wall.Path, err)
	}
	theirs, err := procStartTime(res.Dir, res.Name)
	if err != nil {
		return 0, err
	}
	if theirs != st.StartTime {
		return 0, fmt.Errorf("/proc/%d of %s is not paddock's process %d (another PID namespace's /proc)", n, c.req.Wall.Path, host)
	}
	return host, nil
}

// procStartTime reads the start time in the stat file of the /proc/N
// directory that name in dir lies in.
func procStartTime(dir int, name string) (uint64, error) {
	cur, err := unix.Openat(dir, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer func() { unix.Close(cur) }()
	for depth := 0; depth < 16; depth++ {
		fd, err := unix.Openat(cur, "stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			var buf [1024]byte
			n, rerr := unix.Read(fd, buf[:])
			unix.Close(fd)
			if rerr == nil && n > 0 {
				if st := callerpath.StartTime(buf[:n]); st != 0 {
					return st, nil
				}
			}
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		unix.Close(cur)
		cur = up
	}
	return 0, fmt.Errorf("no stat file above %s", name)
}

// maxMembers bounds the processes paddock lists for one cgroup decision.
const maxMembers = 4096

// cgroupMembers lists the processes in cgroup directory dir and every
// cgroup below it.
func cgroupMembers(dir int) ([]int, error) {
	var out []int
	var walk func(d int, depth int) error
	walk = func(d int, depth int) error {
		if depth > 32 {
			return errors.New("cgroups nested deeper than 32")
		}
		fd, err := unix.Openat(d, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("read cgroup.procs: %w", err)
		}
		f := os.NewFile(uintptr(fd), "cgroup.procs")
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err == nil {
				out = append(out, pid)
			}
			if len(out) > maxMembers {
				f.Close()
				return fmt.Errorf("more than %d processes", maxMembers)
			}
		}
		f.Close()
		rd, err := unix.Openat(d, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		df := os.NewFile(uintptr(rd), "cgroup")
		names, err := df.Readdirnames(-1)
		df.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			sub, err := unix.Openat(d, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // a file, not a cgroup
			}
			err = walk(sub, depth+1)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// openOnBehalf opens what res resolved with the caller's flags: the object
// itself reopened, or, for a missing name with O_CREAT, created in the
// directory resolved, with the caller's mode and umask. The descriptor is
// paddock's; the answer hands a copy to the caller.
func (c *call) openOnBehalf(res *callerpath.Result) (int, error) {
	wc := &c.wall
	flags := int(wc.flags)&^unix.O_CLOEXEC | unix.O_CLOEXEC | unix.O_NOCTTY
	if !res.Missing && res.Fd >= 0 {
		// O_NOFOLLOW was the resolution's (a symlink itself pinned fails
		// the same here); on the link that names the pin it would refuse
		// every reopen.
		flags &^= unix.O_NOFOLLOW
		if !c.here || flags&unix.O_NONBLOCK != 0 {
			return unix.Open(procfs.FdPath(res.Fd), flags, 0)
		}
		// On the loop: a lease's break is not waited for (EWOULDBLOCK),
		// and the caller's file does not keep the O_NONBLOCK it did not
		// ask for.
		fd, err := unix.Open(procfs.FdPath(res.Fd), flags|unix.O_NONBLOCK, 0)
		if err != nil {
			return -1, err
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&(unix.O_APPEND|unix.O_DIRECT|unix.O_NOATIME)); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
	if !res.Missing || wc.flags&unix.O_CREAT == 0 || res.Dir < 0 {
		return -1, unix.ENOENT
	}
	cr, err := c.w.fs.Creds(c.req.Tid)
	if err != nil {
		return -1, err
	}
	mode := wc.mode & 0o7777 &^ cr.Umask
	// Made with O_EXCL, so that paddock knows it made the file, and then
	// given the caller's mode exactly: paddock's own umask applies to what
	// it creates, and may take bits the caller's leaves (CPython's
	// test_umask). Made meanwhile by someone else, it is an object paddock
	// has not decided on (a symlink to another process's /proc file, a
	// FIFO): errMadeMeanwhile, and the call is decided again.
	fd, err := unix.Openat(res.Dir, res.Name, flags|unix.O_EXCL, mode)
	if errors.Is(err, unix.EEXIST) && wc.flags&unix.O_EXCL == 0 {
		return -1, errMadeMeanwhile
	}
	if err != nil {
		return -1, err
	}
	if ws := c.w.wall; ws != nil && mode&ws.umask != 0 {
		_ = unix.Fchmod(fd, mode)
	}
	return fd, nil
}

// wallOpenat2 carries out an openat2 that asks for resolve flags of its own
// (RESOLVE_BENEATH, RESOLVE_IN_ROOT, ...): from the caller's directory
// descriptor, with those flags, as the kernel would; the object is then
// decided like any other before paddock hands it over.
func (c *call) wallOpenat2() (policy.Decision, answer.Answer) {
	wc := &c.wall
	base, err := c.dirOf(wc.dirfd)
	if err != nil {
		return c.wallErrno(err)
	}
	defer unix.Close(base)
	how := unix.OpenHow{Flags: wc.flags&(unix.O_DIRECTORY|unix.O_NOFOLLOW) | unix.O_PATH | unix.O_CLOEXEC, Resolve: wc.resolve}
	res := callerpath.Result{Fd: -1, Dir: -1}
	dir, derr := unix.Openat2(base, filepath.Dir(wc.path), &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: wc.resolve})
	if derr != nil {
		return c.wallErrno(derr)
	}
	res.Dir, res.Name = dir, filepath.Base(wc.path)
	defer res.Close()
	pin, err := unix.Openat2(base, wc.path, &how)
	switch {
	case errors.Is(err, unix.ENOENT):
		res.Missing = true
	case err != nil:
		return c.wallErrno(err)
	default:
		res.Fd = pin
	}
	return c.finishOpen(&res)
}

// dirOf opens the caller's directory descriptor dirfd (its working
// directory for AT_FDCWD) as paddock's own.
func (c *call) dirOf(dirfd int) (int, error) {
	name := c.w.fs.Root + "/" + strconv.Itoa(c.req.Tid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		name = c.w.fs.Root + "/" + strconv.Itoa(c.req.Tid) + "/fd/" + strconv.Itoa(dirfd)
	}
	fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, unix.EBADF
	}
	return fd, err
}

// wallConnect decides and carries out a connect or sendto with an address.
func (c *call) wallConnect() (policy.Decision, answer.Answer) {
	wc, wl := &c.wall, c.req.Wall
	sock, err := c.callerFd(wc.sock)
	unread := errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
	if err == nil && !c.asPaddock() {
		// A caller with less than paddock's power (asPaddock): decided on
		// what it names, as one whose socket paddock may not take, and
		// let run, with its own rights; a connect of paddock's would give
		// it paddock's to the listener (its socket file's permissions,
		// SO_PEERCRED).
		unix.Close(sock)
		unread = true
	}
	switch {
	case unread:
		// A caller paddock may not take a descriptor from (it made itself
		// non-dumpable): decided on what it names, then let run
		// (docs/limits.md).
		sock = -1
	case err != nil:
		return c.wallErrno(err)
	default:
		defer unix.Close(sock)
	}
	sendto := wc.data != nil
	if wl.Family != unix.AF_UNIX {
		// Another family (netlink, a scoped IPv6 address, vsock): nothing
		// of the user's is reached by path; carried out from paddock's
		// copy of the address.
		d := policy.Decide(c.req, c.world())
		if !d.Allow {
			return d, answer.Refuse(d.Errno)
		}
		if unread {
			return d, answer.Continue()
		}
		return d, c.rawSockCall(sock, wc.addr, sendto)
	}
	path, abstract := unixAddr(wc.addr)
	var target string
	if abstract {
		wl.Abstract = strings.TrimRight(path, "\x00")
		target = "@" + path
	} else {
		wl.Path = path
		v, err := c.view()
		if err != nil {
			return c.wallFail(err)
		}
		res, err := v.Resolve(unix.AT_FDCWD, path, true)
		v.Close()
		if errors.Is(err, callerpath.ErrNoCwd) {
			return c.wallFail(fmt.Errorf("%w: paddock may not read this process's working directory (it is not dumpable)", err))
		}
		if err != nil {
			return c.wallErrno(err)
		}
		defer res.Close()
		if res.Missing || res.Fd < 0 {
			return c.wallErrno(unix.ENOENT)
		}
		var pin devIno
		var st unix.Stat_t
		if unix.Fstat(res.Fd, &st) == nil {
			pin = devIno{st.Dev, st.Ino}
		}
		if ws := c.w.wall; ws != nil {
			wl.Deputy = ws.known[pin]
			wl.EngineAllowed = ws.cfg.EnginesAllowed[wl.Deputy]
		}
		target = procfs.FdPath(res.Fd)
		if ws := c.w.wall; ws != nil && ws.serveControl != nil && !unread && !sendto && pin.ino != 0 && pin == ws.control {
			// paddock's own control socket: served as the caller's
			// connection, not paddock's.
			return c.redirect(sock, ws.serveControl)
		}
		if wl.Deputy != policy.DeputyNone {
			// Known by its path: decided before anything reaches it.
			d := policy.Decide(c.req, c.world())
			if !d.Allow {
				return d, answer.Refuse(d.Errno)
			}
			if ws := c.w.wall; wl.Deputy.Bus() && ws != nil && ws.relayBus != nil && !unread && !sendto {
				return c.relayBus(sock, target, d)
			}
		}
	}
	if unread {
		return c.wallConnectUnread(target, abstract, sendto)
	}
	if sendto {
		d := policy.Decide(c.req, c.world())
		if !d.Allow {
			return d, answer.Refuse(d.Errno)
		}
		n, err := sendtoUnix(sock, wc.data, wc.sendFlag, target, abstract)
		if err != nil {
			return d, answer.Completed(errnoOf(err))
		}
		return d, answer.Value(int64(n))
	}
	cerr := connectUnix(sock, target, abstract)
	if cerr != nil && !errors.Is(cerr, unix.EINPROGRESS) && !errors.Is(cerr, unix.EAGAIN) {
		return policy.Decision{Syscall: c.req.Syscall.String()}, answer.Completed(errnoOf(cerr))
	}
	if cred, err := unix.GetsockoptUcred(sock, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
		wl.Peer = int(cred.Pid)
		if wl.Deputy == policy.DeputyNone {
			wl.Deputy = deputyByProcess(c.w.fs.Root, wl.Peer)
		}
	}
	d := policy.Decide(c.req, c.world())
	if !d.Allow {
		// Connected already: cut it before the caller can use it.
		_ = unix.Shutdown(sock, unix.SHUT_RDWR)
		return d, answer.Refuse(d.Errno)
	}
	return d, answer.Completed(errnoOf(cerr))
}

// wallConnectUnread decides a unix connect or sendto of a caller paddock
// may not take the socket of: the listener is found through a connection
// of paddock's own (a connect it opens and closes), and an allowed call
// runs as the caller made it.
func (c *call) wallConnectUnread(target string, abstract, sendto bool) (policy.Decision, answer.Answer) {
	wl := c.req.Wall
	if !sendto {
		if probe, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
			if connectUnix(probe, target, abstract) == nil {
				if cred, err := unix.GetsockoptUcred(probe, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil && cred.Pid > 0 {
					wl.Peer = int(cred.Pid)
					if wl.Deputy == policy.DeputyNone {
						wl.Deputy = deputyByProcess(c.w.fs.Root, wl.Peer)
					}
				}
			}
			unix.Close(probe)
		}
	}
	d := policy.Decide(c.req, c.world())
	if !d.Allow {
		return d, answer.Refuse(d.Errno)
	}
	return d, answer.Continue()
}

// redirect carries out a connect of the caller's stream socket sock (a copy)
// to a socket paddock serves itself: serve gets paddock's end (replace),
// with the caller's credentials and a pin of it, as SO_PEERCRED and
// SO_PEERPIDFD would have named it.
func (c *call) redirect(sock int, serve func(conn *net.UnixConn, cred unix.Ucred, pidfd int)) (policy.Decision, answer.Answer) {
	d := policy.Decision{Syscall: c.req.Syscall.String(), Allow: true, Rule: audit.RuleWallPassed}
	tgid, err := c.w.fs.Tgid(c.req.Tid)
	if err != nil {
		return c.wallFail(err)
	}
	cr, err := c.w.fs.Creds(c.req.Tid)
	if err != nil {
		return c.wallFail(err)
	}
	pidfd, err := unix.PidfdOpen(tgid, 0)
	if err != nil {
		return c.wallFail(err)
	}
	conn, e, err := c.replace(sock)
	if err != nil || e != 0 {
		unix.Close(pidfd)
		if err != nil {
			return c.wallFail(err)
		}
		return d, answer.Completed(e)
	}
	serve(conn, unix.Ucred{Pid: int32(tgid), Uid: cr.Uid[1], Gid: cr.Gid[1]}, pidfd)
	return d, answer.Completed(0)
}

// replace puts one end of a new stream socket pair in the place of the
// caller's socket (sock is paddock's copy of it; SECCOMP_ADDFD_FLAG_SETFD,
// with its file flags and close-on-exec) and returns paddock's end. A
// caller's socket that is not a stream socket gets e, the error its
// connect would have had to a stream socket.
func (c *call) replace(sock int) (conn *net.UnixConn, e unix.Errno, err error) {
	if typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		return nil, unix.EPROTOTYPE, nil
	}
	fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0)
	if err != nil {
		return nil, 0, err
	}
	cloexec, err := c.callerCloexec(c.wall.sock)
	if err != nil {
		return nil, 0, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	if fl&unix.O_NONBLOCK != 0 {
		_ = unix.SetNonblock(pair[0], true)
	}
	if err := seccomp.AddFdAt(c.listener, c.id, pair[0], c.wall.sock, cloexec); err != nil {
		unix.Close(pair[1])
		return nil, 0, err
	}
	f := os.NewFile(uintptr(pair[1]), "redirect")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, 0, err
	}
	return fc.(*net.UnixConn), 0, nil
}

// relayBus carries out a connect to a D-Bus bus at target (paddock's path
// to the socket resolved) through paddock's filter: paddock connects to the
// bus, a socket pair takes the place of the caller's socket, and the relay
// (package dbusproxy) carries the messages between them, refusing the
// harmful calls with a D-Bus error, a message and a journal record.
func (c *call) relayBus(sock int, target string, d policy.Decision) (policy.Decision, answer.Answer) {
	wl := c.req.Wall
	up, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return c.wallFail(err)
	}
	if err := unix.Connect(up, &unix.SockaddrUnix{Name: target}); err != nil {
		unix.Close(up)
		return d, answer.Completed(errnoOf(err))
	}
	f := os.NewFile(uintptr(up), "bus")
	bc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return c.wallFail(err)
	}
	client, e, err := c.replace(sock)
	if err != nil || e != 0 {
		bc.Close()
		if err != nil {
			return c.wallFail(err)
		}
		return d, answer.Completed(e)
	}
	tgid, err := c.w.fs.Tgid(c.req.Tid)
	if err != nil {
		tgid = c.req.Tid
	}
	c.w.wall.relayBus(client, bc.(*net.UnixConn), wl.Deputy, tgid, c.req.ABI.String(), readEnviron(c.req.Tid))
	return d, answer.Completed(0)
}

// callerCloexec reads whether the caller's descriptor fd is close-on-exec
// (its fdinfo's flags).
func (c *call) callerCloexec(fd int) (bool, error) {
	b, err := os.ReadFile(c.w.fs.Root + "/" + strconv.Itoa(c.req.Tid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				return false, fmt.Errorf("fdinfo flags %q: %w", v, err)
			}
			return f&unix.O_CLOEXEC != 0, nil
		}
	}
	return false, errors.New("fdinfo has no flags line")
}

// callerFd copies the caller's descriptor fd (pidfd_getfd): the same open
// file, so that what paddock does on it is done on the caller's socket.
func (c *call) callerFd(fd int) (int, error) {
	tgid := c.req.Tid
	pidfd, err := unix.PidfdOpen(tgid, 0)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		// A thread that does not lead its process (EINVAL, or ENOENT on
		// Linux 6.9+): its process's.
		if tgid, err = c.w.fs.Tgid(c.req.Tid); err != nil {
			return -1, err
		}
		pidfd, err = unix.PidfdOpen(tgid, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("pidfd_open(%d): %w", tgid, err)
	}
	defer unix.Close(pidfd)
	own, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return -1, unix.EBADF
		}
		return -1, fmt.Errorf("pidfd_getfd(%d, %d): %w", tgid, fd, err)
	}
	return own, nil
}

// deputyByProcess names the deputy process pid is, by its command name
// (a tmux server calls itself "tmux: server"; GNU screen's is "screen" or
// "SCREEN"). One open and read: it is on every unix connect's path.
func deputyByProcess(proc string, pid int) policy.Deputy {
	fd, err := unix.Open(proc+"/"+strconv.Itoa(pid)+"/comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return policy.DeputyNone
	}
	var buf [64]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return policy.DeputyNone
	}
	comm := strings.TrimSpace(string(buf[:n]))
	switch {
	case strings.HasPrefix(comm, "tmux"):
		return policy.DeputyTmux
	case strings.EqualFold(comm, "screen"):
		return policy.DeputyScreen
	}
	return policy.DeputyNone
}

// unixAddr reads a struct sockaddr_un: its path, or an abstract name.
func unixAddr(addr []byte) (string, bool) {
	if len(addr) <= 2 {
		return "", false
	}
	p := addr[2:]
	if p[0] == 0 {
		return string(p[1:]), true
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), false
}

// connectUnix connects sock to the unix socket at path (an abstract name
// when abstract).
func connectUnix(sock int, path string, abstract bool) error {
	if abstract {
		path = "@" + path
	}
	return unix.Connect(sock, &unix.SockaddrUnix{Name: path})
}

// sendtoUnix sends data on sock to the unix socket at path.
func sendtoUnix(sock int, data []byte, flags int, path string, abstract bool) (int, error) {
	if abstract {
		path = "@" + path
	}
	err := unix.Sendto(sock, data, flags, &unix.SockaddrUnix{Name: path})
	if err != nil {
		return 0, err
	}
	return len(data), nil
}

// rawSockCall carries out a connect (or, with sendto, a sendto of the
// call's data) on sock with the address bytes as read.
func (c *call) rawSockCall(sock int, addr []byte, sendto bool) answer.Answer {
	if !sendto {
		return answer.Completed(errnoOf(sys.ConnectRaw(sock, addr)))
	}
	n, err := sys.SendtoRaw(sock, c.wall.data, c.wall.sendFlag, addr)
	if err != nil {
		return answer.Completed(errnoOf(err))
	}
	return answer.Value(int64(n))
}

// errMadeMeanwhile says that the name an open was to create exists now:
// what it names was not decided on.
var errMadeMeanwhile = errors.New("made meanwhile")

// maxRedecide bounds the decisions an open is taken again for, its name
// made meanwhile each time; then it fails with EAGAIN.
const maxRedecide = 3

// wouldWait defers c, tried on the loop, to a worker: nothing was carried
// out, and nothing is reported.
func (c *call) wouldWait() (policy.Decision, answer.Answer) {
	c.deferred = true
	return policy.Decision{}, answer.Answer{}
}

// wallErrno answers a walled call with the error the kernel would have
// given it (a path that does not exist, a descriptor the caller lacks):
// nothing was reached, so nothing is decided or reported.
func (c *call) wallErrno(err error) (policy.Decision, answer.Answer) {
	var e unix.Errno
	if !errors.As(err, &e) {
		return c.wallFail(err)
	}
	return policy.Decision{Syscall: c.req.Syscall.String(), Errno: e}, answer.Completed(e)
}

// wallFail refuses a walled call whose target could not be established.
func (c *call) wallFail(err error) (policy.Decision, answer.Answer) {
	c.req.Wall.Err = err
	d := policy.Decide(c.req, c.world())
	return d, answer.Refuse(d.Errno)
}

// DefaultWall is the wall of a session whose environment getenv reads:
// the deputies' sockets where they usually are and where the environment
// says they are (DOCKER_HOST, CONTAINER_HOST, DBUS_SYSTEM_BUS_ADDRESS,
// DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR), and allowed, the engines a
// profile opens ("docker", "podman").
func DefaultWall(getenv func(string) string, allowed []string) WallConfig {
	run := getenv("XDG_RUNTIME_DIR")
	socks := map[policy.Deputy][]string{
		policy.DeputyDocker:     {"/run/docker.sock", "/var/run/docker.sock", unixURL(getenv("DOCKER_HOST"))},
		policy.DeputyPodman:     {"/run/podman/podman.sock", joinIf(run, "podman/podman.sock"), unixURL(getenv("CONTAINER_HOST"))},
		policy.DeputySystemBus:  {"/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", dbuswire.UnixPath(getenv("DBUS_SYSTEM_BUS_ADDRESS"))},
		policy.DeputySessionBus: {joinIf(run, "bus"), dbuswire.UnixPath(getenv("DBUS_SESSION_BUS_ADDRESS"))},
	}
	cfg := WallConfig{Sockets: make(map[policy.Deputy][]string), EnginesAllowed: make(map[policy.Deputy]bool)}
	for dep, paths := range socks {
		for _, p := range paths {
			if p != "" {
				cfg.Sockets[dep] = append(cfg.Sockets[dep], p)
			}
		}
	}
	for _, a := range allowed {
		cfg.EnginesAllowed[policy.Deputy(a)] = true
	}
	return cfg
}

// joinIf is dir/name, or "" without dir.
func joinIf(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}

// unixURL is the path of a unix:// URL (DOCKER_HOST), "" for another.
func unixURL(u string) string {
	p, ok := strings.CutPrefix(u, "unix://")
	if !ok {
		return ""
	}
	return p
}
