package supervisor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/policy"
)

// Bounds on what is read from a caller for one exec. The kernel allows an
// argv and environment of several MiB; the guard needs the command name, its
// arguments and a handful of variables, so reading stops at these bounds and
// the decision is made on what was read (an opt-in past the bound is simply
// not seen, which errs towards refusal).
const (
	maxPath    = 4096    // PATH_MAX
	maxStrings = 4096    // argv + envp entries
	maxBytes   = 1 << 20 // argv + envp bytes
	maxString  = 1 << 17 // one string (the kernel's MAX_ARG_STRLEN)
)

// memory is another process's address space. readPages fills dst[i] (a
// page each) from the page at the page-aligned address pages[i], in order,
// in as few system calls as it can, and returns how many bytes it read in
// all: it stops at the first page it cannot read whole, so a count short of
// len(pages) pages ends inside (or at the start of) the page that stopped
// it, and err then says why.
type memory interface {
	readPages(pages []uint64, dst [][]byte) (int, error)
}

// memReader decodes strings and pointers from a memory, bounded. It reads
// whole pages and keeps the last few (buf holds them): argv and envp pointers
// and strings sit on a handful of pages, so an exec costs a read per page
// touched, not one per pointer and string, and prefetch reads all the pages
// it is about to touch in one call.
type memReader struct {
	mem   memory
	buf   []byte // cachePages pages
	slots [cachePages]cachedPage
	next  int // the slot the next miss replaces
	// Scratch for fetch, kept to spare an allocation per read.
	pages [cachePages]uint64
	dst   [cachePages][]byte
	idx   [cachePages]int
}

// cachedPage is one page of buf: its address and how many bytes are valid
// (0: the slot is empty).
type cachedPage struct {
	page uint64
	n    int
}

const (
	pageSize   = 4096
	cachePages = 8
	// execBufSize is the scratch space decodeExec needs: the page cache.
	execBufSize = pageSize * cachePages
)

// readAt serves p from the page cache, fetching the page holding addr when
// needed; it may return fewer bytes than asked (it never crosses a page
// boundary).
func (m *memReader) readAt(p []byte, addr uint64) (int, error) {
	v, err := m.view(addr)
	if len(v) == 0 {
		return 0, err
	}
	return copy(p, v), nil
}

// cached returns the slot holding page, or -1.
func (m *memReader) cached(page uint64) int {
	for i, c := range m.slots {
		if c.n > 0 && c.page == page {
			return i
		}
	}
	return -1
}

// prefetch reads, in one call, the pages holding addrs that are not cached
// yet (at most a cache's worth; NULL addresses are skipped). A page that
// cannot be read is simply left out: view reads it again on its own and
// reports why.
func (m *memReader) prefetch(addrs ...uint64) {
	k := 0
	for _, a := range addrs {
		if k == cachePages {
			break
		}
		page := a &^ (pageSize - 1)
		if a == 0 || m.cached(page) >= 0 || slices.Contains(m.pages[:k], page) {
			continue
		}
		m.pages[k] = page
		k++
	}
	if k > 1 {
		m.fetch(k)
	}
}

// fetch reads m.pages[:k] into the next k slots and returns the first
// page's slot; the error is why the first page could not be read whole.
func (m *memReader) fetch(k int) (int, error) {
	for i := 0; i < k; i++ {
		slot := m.next
		m.next = (m.next + 1) % cachePages
		m.slots[slot].n = 0
		m.idx[i] = slot
		m.dst[i] = m.buf[slot*pageSize : (slot+1)*pageSize]
	}
	n, err := m.mem.readPages(m.pages[:k], m.dst[:k])
	for i := 0; i < k && n > 0; i++ {
		got := min(n, pageSize)
		m.slots[m.idx[i]] = cachedPage{page: m.pages[i], n: got}
		n -= got
	}
	if m.slots[m.idx[0]].n == 0 && err == nil {
		err = unix.EFAULT
	}
	return m.idx[0], err
}

// view returns the readable bytes from addr to the end of its page, from
// the page cache, without copying them: the slice is valid until the next
// read.
func (m *memReader) view(addr uint64) ([]byte, error) {
	page := addr &^ (pageSize - 1)
	slot := m.cached(page)
	if slot < 0 {
		m.pages[0] = page
		var err error
		if slot, err = m.fetch(1); m.slots[slot].n == 0 {
			return nil, err
		}
	}
	c := m.slots[slot]
	off := int(addr - page)
	if off >= c.n {
		return nil, unix.EFAULT
	}
	return m.buf[slot*pageSize+off : slot*pageSize+c.n], nil
}

// procMem reads a live process's memory, with process_vm_readv and, where
// that is refused (e.g. by a Yama or LSM policy), /proc/PID/mem.
type procMem struct {
	tid   int
	memFd int // /proc/TID/mem, opened on first need (-1: not yet)
	// Scratch for readPages's iovecs.
	local  [cachePages]unix.Iovec
	remote [cachePages]unix.RemoteIovec
}

func (m *procMem) close() {
	if m.memFd >= 0 {
		unix.Close(m.memFd)
	}
}

// readPages reads whole pages, in one process_vm_readv.
func (m *procMem) readPages(pages []uint64, dst [][]byte) (int, error) {
	if len(pages) > cachePages {
		pages, dst = pages[:cachePages], dst[:cachePages]
	}
	for i, p := range pages {
		if p == 0 {
			// The NULL page: nothing past it is read either.
			pages, dst = pages[:i], dst[:i]
			break
		}
		m.local[i] = unix.Iovec{Base: &dst[i][0]}
		m.local[i].SetLen(len(dst[i]))
		m.remote[i] = unix.RemoteIovec{Base: uintptr(p), Len: len(dst[i])}
	}
	if len(pages) == 0 {
		return 0, unix.EFAULT
	}
	n, err := unix.ProcessVMReadv(m.tid, m.local[:len(pages)], m.remote[:len(pages)], 0)
	if err == nil || (!errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS)) {
		return n, err
	}
	total := 0
	for i, p := range pages {
		got, rerr := m.procRead(dst[i], p, err)
		total += got
		if rerr != nil || got < len(dst[i]) {
			return total, rerr
		}
	}
	return total, nil
}

// readAt reads up to len(p) bytes at addr (any address, any length): what
// a pointer argument of a signal call names.
func (m *procMem) readAt(p []byte, addr uint64) (int, error) {
	if addr == 0 {
		return 0, unix.EFAULT
	}
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.tid, local, remote, 0)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
		return 0, err
	}
	return m.procRead(p, addr, err)
}

// procRead reads through /proc/TID/mem, the fallback when process_vm_readv
// failed with vmErr.
func (m *procMem) procRead(p []byte, addr uint64, vmErr error) (int, error) {
	if m.memFd < 0 {
		fd, oerr := unix.Open("/proc/"+strconv.Itoa(m.tid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if oerr != nil {
			if errors.Is(vmErr, unix.EPERM) && (errors.Is(oerr, unix.EACCES) || errors.Is(oerr, unix.EPERM)) {
				return 0, fmt.Errorf("%w: process_vm_readv: %v; open /proc/%d/mem: %v", policy.ErrUnreadable, vmErr, m.tid, oerr)
			}
			return 0, fmt.Errorf("process_vm_readv: %v; open /proc/%d/mem: %w", vmErr, m.tid, oerr)
		}
		m.memFd = fd
	}
	return unix.Pread(m.memFd, p, int64(addr))
}

// cstring reads a NUL-terminated string of at most max bytes at addr.
func (m *memReader) cstring(addr uint64, max int) (string, bool, error) {
	var out []byte
	for len(out) < max {
		v, err := m.view(addr)
		if len(v) == 0 {
			if err == nil {
				err = unix.EFAULT
			}
			return "", false, err
		}
		if len(v) > max-len(out) {
			v = v[:max-len(out)]
		}
		if i := bytes.IndexByte(v, 0); i >= 0 {
			if out == nil {
				return string(v[:i]), false, nil // the common case: one page, one copy
			}
			return string(append(out, v[:i]...)), false, nil
		}
		out = append(out, v...)
		addr += uint64(len(v))
	}
	return string(out), true, nil
}

// pointer reads one pointer of size ps (4 or 8) at addr.
func (m *memReader) pointer(addr uint64, ps int) (uint64, error) {
	var b [8]byte
	n, err := m.readAt(b[:ps], addr)
	if n < ps && n > 0 {
		// The pointer straddles a page boundary.
		var m2 int
		m2, err = m.readAt(b[n:ps], addr+uint64(n))
		n += m2
	}
	if n != ps {
		if err == nil {
			err = unix.EFAULT
		}
		return 0, err
	}
	if ps == 4 {
		return uint64(binary.LittleEndian.Uint32(b[:4])), nil
	}
	return binary.LittleEndian.Uint64(b[:8]), nil
}

// vector reads a NULL-terminated array of string pointers (argv or envp):
// all the pointers first, then the strings, so that the page cache serves
// the pointer array in one read instead of refetching it between strings.
func (m *memReader) vector(addr uint64, ps int, budget *int, count *int) ([]string, bool, error) {
	if addr == 0 {
		return nil, false, nil // a NULL argv or envp is accepted by Linux as empty
	}
	var ptrs []uint64
	truncated := false
	for {
		if *count+len(ptrs) >= maxStrings {
			truncated = true
			break
		}
		p, err := m.pointer(addr, ps)
		if err != nil {
			return nil, false, err
		}
		if p == 0 {
			break
		}
		ptrs = append(ptrs, p)
		addr += uint64(ps)
	}
	// The strings' pages, in one read (often they share the array's page,
	// or the path's, and this reads nothing).
	m.prefetch(ptrs...)
	out := make([]string, 0, len(ptrs))
	for _, p := range ptrs {
		if *budget <= 0 {
			return out, true, nil
		}
		limit := maxString
		if limit > *budget {
			limit = *budget
		}
		s, trunc, err := m.cstring(p, limit)
		if err != nil {
			return out, false, err
		}
		out = append(out, s)
		*budget -= len(s) + 1
		*count++
		if trunc {
			return out, true, nil
		}
	}
	return out, truncated, nil
}

// readExec reads the path, argv and envp of a trapped execve or execveat.
func readExec(tid int, sc filter.Syscall, abi filter.ABI, args [6]uint64, buf []byte) *policy.Exec {
	pm := &procMem{tid: tid, memFd: -1}
	defer pm.close()
	// execveat(fd, "", ...) names its program only once fdlink is read:
	// read the environment then, whatever it runs.
	needEnv := func(path string, argv []string) bool {
		return path == "" || policy.ExecNeedsEnv(path, argv)
	}
	e := decodeExec(pm, sc, abi.PointerSize(), args, buf, needEnv)
	if e.Err != nil {
		e.Err = fmt.Errorf("pid %d: %w", tid, e.Err)
		return e
	}
	if sc == filter.Execveat && e.Path == "" {
		// execveat(fd, "", ..., AT_EMPTY_PATH) runs the file behind fd.
		if target, err := readFdLink(tid, int(int32(uint32(args[0])))); err == nil {
			e.Path = target
		}
	}
	return e
}

// readMem reads exactly len(buf) bytes of thread tid's memory at addr.
func readMem(tid int, addr uint64, buf []byte) ([]byte, error) {
	pm := &procMem{tid: tid, memFd: -1}
	defer pm.close()
	n, err := pm.readAt(buf, addr)
	if err == nil && n < len(buf) {
		err = fmt.Errorf("short read: %d of %d bytes", n, len(buf))
	}
	if err != nil {
		return nil, fmt.Errorf("pid %d at %#x: %w", tid, addr, err)
	}
	return buf, nil
}

// decodeExec decodes the path, argv and envp of an execve or execveat from
// mem: the caller's memory, which it must not trust (any pointer, any bytes,
// any length; reads stop at the bounds above). ps is the ABI's pointer size.
// envp is read only when needEnv (nil: always) says the decision will look
// at it; Exec.Env is nil otherwise.
func decodeExec(mem memory, sc filter.Syscall, ps int, args [6]uint64, buf []byte, needEnv func(path string, argv []string) bool) *policy.Exec {
	if len(buf) < execBufSize {
		buf = make([]byte, execBufSize)
	}
	m := &memReader{mem: mem, buf: buf}
	pathArg, argvArg, envArg := args[0], args[1], args[2]
	if sc == filter.Execveat {
		pathArg, argvArg, envArg = args[1], args[2], args[3]
	}
	if ps != 4 {
		ps = 8
	}
	if ps == 4 {
		pathArg, argvArg, envArg = uint64(uint32(pathArg)), uint64(uint32(argvArg)), uint64(uint32(envArg))
	}
	e := &policy.Exec{}
	// The path's page and the argv array's, in one read.
	m.prefetch(pathArg, argvArg)
	path, trunc, err := m.cstring(pathArg, maxPath)
	if err != nil {
		e.Err = fmt.Errorf("read exec path: %w", err)
		return e
	}
	e.Path, e.Truncated = path, trunc
	budget, count := maxBytes, 0
	var t1, t2 bool
	if e.Argv, t1, err = m.vector(argvArg, ps, &budget, &count); err != nil {
		e.Err = fmt.Errorf("read argv: %w", err)
		return e
	}
	if needEnv != nil && !needEnv(e.Path, e.Argv) {
		e.Truncated = e.Truncated || t1
		return e
	}
	e.Watched = needEnv != nil
	if e.Env, t2, err = m.vector(envArg, ps, &budget, &count); err != nil {
		e.Err = fmt.Errorf("read environment: %w", err)
		return e
	}
	e.Truncated = e.Truncated || t1 || t2
	return e
}

// readFdLink names the file behind descriptor fd of tid.
func readFdLink(tid, fd int) (string, error) {
	var b [4096]byte
	n, err := unix.Readlink("/proc/"+strconv.Itoa(tid)+"/fd/"+strconv.Itoa(fd), b[:])
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// readEnviron reads a process's initial environment (/proc/TID/environ), for
// the power syscalls' opt-in, bounded like an exec's.
func readEnviron(tid int) []string {
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 16<<10)
	for len(buf) < maxBytes {
		n, err := unix.Read(fd, tmp)
		if n <= 0 || err != nil {
			break
		}
		buf = append(buf, tmp[:n]...)
	}
	var env []string
	for _, kv := range bytes.Split(bytes.TrimRight(buf, "\x00"), []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}
