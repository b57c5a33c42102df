// Package procfs reads the few /proc files paddock decides on: a process's
// stat line (parent, process group, start time), its thread-group id, the
// target of a pidfd in another process's fd table, and the list of pids.
//
// Every reader is bounded (fixed-size buffers, no unbounded ReadAll) because
// the files belong to processes paddock does not trust and the callers sit on
// the supervisor's notify loop.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// PFKthread is the PF_KTHREAD bit of the stat flags field: set for kernel threads.
const PFKthread = 0x00200000

// PFExiting is the PF_EXITING bit of the stat flags field: set from the
// start of a task's exit, before it is a zombie.
const PFExiting = 0x00000004

// ErrNotFound reports that the process (or the file asked for) does not exist.
var ErrNotFound = errors.New("no such process")

// FS is a proc filesystem mounted at Root (normally "/proc").
type FS struct {
	Root string
}

// Default is the host's /proc.
func Default() FS { return FS{Root: "/proc"} }

// Stat holds the fields of /proc/PID/stat that paddock uses.
type Stat struct {
	Pid       int
	Comm      string
	State     byte
	PPid      int
	Pgrp      int
	Session   int
	TtyNr     uint64 // field 7: the controlling terminal's device number as the kernel encodes it (0: none)
	Flags     uint64
	StartTime uint64 // field 22: clock ticks since boot; with Pid it identifies a process across PID reuse
}

// KernelThread reports whether the process is a kernel thread.
func (s Stat) KernelThread() bool { return s.Flags&PFKthread != 0 }

// Exiting reports whether the process is exiting or has exited (a zombie
// not yet reaped, or one being reaped).
func (s Stat) Exiting() bool { return s.State == 'Z' || s.State == 'X' || s.Flags&PFExiting != 0 }

// ParseStat parses the contents of /proc/PID/stat. The comm field may hold
// spaces and parentheses, so it is delimited by the first '(' and the last ')'.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 0 || closeIdx < open {
		return s, fmt.Errorf("parse stat: no (comm) in %q", truncate(b))
	}
	pidText := bytes.TrimSpace(b[:open])
	pid, err := strconv.Atoi(string(pidText))
	if err != nil {
		return s, fmt.Errorf("parse stat: pid %q: %w", truncate(pidText), numError(err))
	}
	s.Pid = pid
	s.Comm = string(b[open+1 : closeIdx])
	rest := b[closeIdx+1:]
	// Fields after comm, numbered from 3 (state).
	field := 3
	for len(rest) > 0 && field <= 22 {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		rest = rest[end:]
		if len(tok) == 0 {
			break
		}
		switch field {
		case 3:
			s.State = tok[0]
		case 4:
			s.PPid, err = atoi(tok)
		case 5:
			s.Pgrp, err = atoi(tok)
		case 6:
			s.Session, err = atoi(tok)
		case 7:
			// Printed as a signed int; the encoding fits in 32 bits.
			var n int
			n, err = atoi(tok)
			s.TtyNr = uint64(uint32(n))
		case 9:
			s.Flags, err = strconv.ParseUint(string(tok), 10, 64)
		case 22:
			s.StartTime, err = strconv.ParseUint(string(tok), 10, 64)
		}
		if err != nil {
			return s, fmt.Errorf("parse stat: field %d %q: %w", field, truncate(tok), numError(err))
		}
		field++
	}
	if field <= 22 {
		return s, fmt.Errorf("parse stat: only %d fields in %q", field-1, truncate(b))
	}
	return s, nil
}

func atoi(b []byte) (int, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return int(n), err
}

// numError keeps the reason of a strconv error (syntax, range) and drops
// its copy of the input, which is unbounded; callers quote the input
// themselves, truncated.
func numError(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// truncate bounds what an error quotes of a file: the first 80 bytes.
func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// readSmall reads at most len(buf) bytes of a /proc file into buf.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return 0, fmt.Errorf("open %s: %w", path, ErrNotFound)
		}
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ESRCH) {
				return 0, fmt.Errorf("read %s: %w", path, ErrNotFound)
			}
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		if m == 0 {
			break
		}
		n += m
		if n < len(buf) && buf[n-1] == '\n' {
			// /proc's stat and status files come whole in one read
			// when the buffer holds them (seq_file); skip the read
			// that would only return EOF.
			break
		}
	}
	return n, nil
}

func (fs FS) path(pid int, name string) string {
	return fs.Root + "/" + strconv.Itoa(pid) + "/" + name
}

// Stat reads /proc/PID/stat. A process that no longer exists yields an error
// wrapping ErrNotFound.
func (fs FS) Stat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("stat of pid %d: %w", pid, ErrNotFound)
	}
	var buf [1024]byte
	n, err := readSmall(fs.path(pid, "stat"), buf[:])
	if err != nil {
		return Stat{}, err
	}
	if n == 0 {
		return Stat{}, fmt.Errorf("read %s: empty: %w", fs.path(pid, "stat"), ErrNotFound)
	}
	return ParseStat(buf[:n])
}

// Tgid returns the thread-group id (the process id) of thread tid. It works
// for any thread id, listed in /proc or not.
func (fs FS) Tgid(tid int) (int, error) {
	if tid <= 0 {
		return 0, fmt.Errorf("tgid of tid %d: %w", tid, ErrNotFound)
	}
	var buf [4096]byte
	n, err := readSmall(fs.path(tid, "status"), buf[:])
	if err != nil {
		return 0, err
	}
	tgid, err := ParseTgid(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", fs.path(tid, "status"), err)
	}
	return tgid, nil
}

// SigBlk returns the signal mask of the calling thread (bit N-1 for signal
// N), the SigBlk line of /proc/thread-self/status.
func (fs FS) SigBlk() (uint64, error) {
	name := fs.Root + "/thread-self/status"
	var buf [4096]byte
	n, err := readSmall(name, buf[:])
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("SigBlk:")); ok {
			mask, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("read %s: SigBlk %q: %w", name, bytes.TrimSpace(v), err)
			}
			return mask, nil
		}
	}
	return 0, fmt.Errorf("read %s: no SigBlk line", name)
}

// ParseTgid extracts the thread-group id from the contents of
// /proc/TID/status: the value of the first line starting with "Tgid:", which
// must be a positive integer.
func ParseTgid(b []byte) (int, error) {
	v, ok := field(b, "Tgid:")
	if !ok {
		return 0, errors.New("no Tgid line")
	}
	tgid, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("Tgid %q: %w", truncate([]byte(v)), numError(err))
	}
	if tgid <= 0 {
		return 0, fmt.Errorf("Tgid %d: not a process id", tgid)
	}
	return tgid, nil
}

// Seccomp returns the "Seccomp:" mode of /proc/PID/status (0 none, 1
// strict, 2 filter) and the number of filters attached ("Seccomp_filters:",
// Linux 5.9+; 0 when the line is absent).
func (fs FS) Seccomp(pid int) (mode, filters int, err error) {
	return fs.seccompOf(fs.path(pid, "status"))
}

// ThreadSeccomp is Seccomp of the calling thread (/proc/thread-self): a
// process's threads may run under different filters, and /proc/PID shows
// its main thread's.
func (fs FS) ThreadSeccomp() (mode, filters int, err error) {
	return fs.seccompOf(fs.Root + "/thread-self/status")
}

func (fs FS) seccompOf(name string) (mode, filters int, err error) {
	var buf [4096]byte
	n, err := readSmall(name, buf[:])
	if err != nil {
		return 0, 0, err
	}
	if mode, filters, err = ParseSeccomp(buf[:n]); err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", name, err)
	}
	return mode, filters, nil
}

// ParseSeccomp extracts the "Seccomp:" mode and the "Seccomp_filters:"
// count (0 when the line is absent) from the contents of /proc/PID/status.
func ParseSeccomp(b []byte) (mode, filters int, err error) {
	v, ok := field(b, "Seccomp:")
	if !ok {
		return 0, 0, errors.New("no Seccomp line")
	}
	if mode, err = strconv.Atoi(v); err != nil {
		return 0, 0, fmt.Errorf("Seccomp %q: %w", truncate([]byte(v)), numError(err))
	}
	if v, ok := field(b, "Seccomp_filters:"); ok {
		if filters, err = strconv.Atoi(v); err != nil {
			return 0, 0, fmt.Errorf("Seccomp_filters %q: %w", truncate([]byte(v)), numError(err))
		}
	}
	return mode, filters, nil
}

// FdPid returns the pid that file descriptor fd of process pid designates
// to pidfd_send_signal: for a pidfd, the "Pid:" line of /proc/PID/fdinfo/FD
// (-1 once the process has been reaped); for an open /proc/N directory (which
// pidfd_send_signal also accepts, and killall uses), N, provided the
// directory is the one this FS shows for N (same device and inode), else -1
// (that process is gone). Any other descriptor is an error wrapping ErrNotPidfd.
func (fs FS) FdPid(pid, fd int) (int, error) {
	var buf [2048]byte
	p := fs.path(pid, "fdinfo/"+strconv.Itoa(fd))
	n, err := readSmall(p, buf[:])
	if err != nil {
		return 0, err
	}
	target, err := ParseFdinfoPid(buf[:n])
	if !errors.Is(err, ErrNotPidfd) {
		return target, err
	}
	return fs.procDirPid(pid, fd)
}

// Cgroup returns /proc/PID/cgroup as it reads (the process's cgroup in
// every hierarchy), for comparing two processes' membership. A process
// that no longer exists yields an error wrapping ErrNotFound.
func (fs FS) Cgroup(pid int) (string, error) {
	var buf [8192]byte
	n, err := readSmall(fs.path(pid, "cgroup"), buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// FdTarget is FdPid as pidfd_send_signal judges the descriptor: one that
// is no pidfd (nor /proc/N directory), or that is not open in a process
// still there, is an error wrapping EBADF, the kernel's own answer (a
// program that probes for pidfd support must not read EPERM). Both the
// supervisor's world and the fleet agent's answer with it.
func (fs FS) FdTarget(pid, fd int) (int, error) {
	target, err := fs.FdPid(pid, fd)
	switch {
	case errors.Is(err, ErrNotPidfd):
		return 0, fmt.Errorf("%w: %w", err, unix.EBADF)
	case errors.Is(err, ErrNotFound):
		// No such descriptor, if the caller is still there to have one.
		var st unix.Stat_t
		if unix.Stat(fs.Root+"/"+strconv.Itoa(pid), &st) == nil {
			return 0, fmt.Errorf("descriptor %d of %d is not open: %w", fd, pid, unix.EBADF)
		}
	}
	return target, err
}

// procDirPid resolves a descriptor open on a /proc/N directory.
func (fs FS) procDirPid(pid, fd int) (int, error) {
	link := fs.path(pid, "fd/"+strconv.Itoa(fd))
	var lbuf [256]byte
	n, err := unix.Readlink(link, lbuf[:])
	if err != nil {
		return 0, fmt.Errorf("readlink %s: %w", link, err)
	}
	// A directory of an exited process reads "/proc/N (deleted)".
	dest := strings.TrimSuffix(string(lbuf[:n]), " (deleted)")
	slash := strings.LastIndexByte(dest, '/')
	num, err := strconv.Atoi(dest[slash+1:])
	if slash < 0 || err != nil || num <= 0 {
		return 0, fmt.Errorf("descriptor %d of pid %d (%s): %w", fd, pid, dest, ErrNotPidfd)
	}
	var held, ours unix.Stat_t
	if err := unix.Stat(link, &held); err != nil {
		return 0, fmt.Errorf("stat %s: %w", link, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(link, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC || held.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, fmt.Errorf("descriptor %d of pid %d (%s): %w", fd, pid, dest, ErrNotPidfd)
	}
	if err := unix.Stat(fs.Root+"/"+strconv.Itoa(num), &ours); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		return 0, fmt.Errorf("stat %s/%d: %w", fs.Root, num, err)
	}
	if held.Dev != ours.Dev {
		return 0, fmt.Errorf("descriptor %d of pid %d is a /proc directory of another proc mount (%s): %w", fd, pid, dest, ErrNotPidfd)
	}
	if held.Ino != ours.Ino {
		// The directory held open belongs to an exited process whose pid was reused.
		return -1, nil
	}
	return num, nil
}

// ErrNotPidfd reports an fdinfo without a Pid: line: the descriptor is not a pidfd.
var ErrNotPidfd = errors.New("not a pidfd")

// ParseFdinfoPid extracts the Pid: value of an fdinfo file.
func ParseFdinfoPid(b []byte) (int, error) {
	v, ok := field(b, "Pid:")
	if !ok {
		return 0, ErrNotPidfd
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("fdinfo Pid %q: %w", truncate([]byte(v)), numError(err))
	}
	return n, nil
}

// field returns the trimmed value of the first line starting with key.
func field(b []byte, key string) (string, bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.HasPrefix(line, []byte(key)) {
			return string(bytes.TrimSpace(line[len(key):])), true
		}
	}
	return "", false
}

// Pids lists the process ids (thread-group leaders) currently in /proc.
func (fs FS) Pids() ([]int, error) { return ids(fs.Root) }

// Threads lists the thread ids of process pid, its own included. A process
// that is gone is ErrNotFound.
func (fs FS) Threads(pid int) ([]int, error) {
	tids, err := ids(fs.path(pid, "task"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("threads of pid %d: %w", pid, ErrNotFound)
	}
	return tids, err
}

// ids lists the numeric entries of directory dir, a /proc or task
// listing, in number order (ReadDir's is the names', which puts 10000
// before 9993).
func ids(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if id, err := strconv.Atoi(n); err == nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// GroupMembers lists the processes whose process group is pgid. Processes
// that vanish while the list is read are skipped; any other read error is
// returned, since a caller deciding on a whole group must not decide on a
// partial view.
func (fs FS) GroupMembers(pgid int) ([]Stat, error) {
	return fs.statsWhere(func(st Stat) bool { return st.Pgrp == pgid })
}

// TerminalHolders lists the processes whose controlling terminal is the
// terminal dev (as the kernel encodes it: TIOCGDEV, st_rdev), as
// GroupMembers lists a group: vanished processes skipped, any other read
// error returned.
func (fs FS) TerminalHolders(dev uint64) ([]Stat, error) {
	if dev == 0 {
		return nil, nil
	}
	return fs.statsWhere(func(st Stat) bool { return st.TtyNr == dev })
}

// statsWhere lists the stat lines of the processes that match, in pid
// order: vanished processes skipped, any other read error returned.
func (fs FS) statsWhere(match func(Stat) bool) ([]Stat, error) {
	pids, err := fs.Pids()
	if err != nil {
		return nil, err
	}
	var out []Stat
	for _, pid := range pids {
		st, err := fs.Stat(pid)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		if match(st) {
			out = append(out, st)
		}
	}
	return out, nil
}

// Cmdline returns the argv of pid, at most max bytes of it.
func (fs FS) Cmdline(pid, max int) ([]string, error) {
	buf := make([]byte, max)
	n, err := readSmall(fs.path(pid, "cmdline"), buf)
	if err != nil {
		return nil, err
	}
	return ParseCmdline(buf[:n]), nil
}

// ParseCmdline splits the contents of /proc/PID/cmdline at its NUL bytes.
// Trailing NULs are dropped (and with them trailing empty arguments); an
// empty file, or one of NULs only, yields nil.
func ParseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}
