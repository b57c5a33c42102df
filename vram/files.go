package vram

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// DefaultReadTimeout is how long SafeFiles gives one Size, or one Open and
// every read until Close, when ReadLimits.Timeout is 0: a model header on a
// local disk reads in milliseconds; a decision must not wait on a stalled
// network file system for longer than this.
const DefaultReadTimeout = 2 * time.Second

// DefaultMaxRead is how many bytes SafeFiles reads of one opened file when
// ReadLimits.MaxBytes is 0: the most ReadGGUF ever needs (its metadata
// bound), so that a file that never ends (a device, a file growing as it is
// read) cannot make a decision read without end.
const DefaultMaxRead = ggufMaxHeader

// ErrNotRegular is what SafeFiles answers (errors.Is) for a path that
// names something other than a regular file: a named pipe, a device, a
// directory, a socket. Estimators then fall back to the file's name.
var ErrNotRegular = errors.New("not a regular file")

// ReadLimits bound what SafeFiles does for one file.
type ReadLimits struct {
	// Timeout bounds one Size call, or one Open and all reads of the file
	// it opened (the deadline is set at Open). 0: DefaultReadTimeout.
	Timeout time.Duration
	// MaxBytes bounds the bytes read from one opened file; a read past it
	// fails. 0: DefaultMaxRead.
	MaxBytes int64
	// Slots, when set, bounds the calls running at once, those given up
	// at their deadline included; nil: no bound.
	Slots *ReadSlots
}

// ReadSlots bounds the system calls SafeFiles has running at once for
// its callers that share it (a session's decisions). A call given up at
// its deadline (a stalled FUSE or NFS file) keeps its goroutine, and the
// thread under it, until the kernel returns, if ever: without a bound,
// every exec naming such a file would leave one more. Past the bound a
// call fails at once, with an error that says so, instead of starting.
type ReadSlots struct{ c chan struct{} }

// NewReadSlots bounds the calls at n.
func NewReadSlots(n int) *ReadSlots { return &ReadSlots{c: make(chan struct{}, n)} }

// take reports whether a slot was free, and takes it.
func (s *ReadSlots) take() bool {
	if s == nil {
		return true
	}
	select {
	case s.c <- struct{}{}:
		return true
	default:
		return false
	}
}

// give returns a slot taken.
func (s *ReadSlots) give() {
	if s != nil {
		<-s.c
	}
}

// busyError says no slot was free for a call.
type busyError struct {
	op, path string
	slots    int
}

func (e *busyError) Error() string {
	return fmt.Sprintf("%s %s: not tried: %d reads of files are still waiting on the kernel (a stalled FUSE or NFS mount?)", e.op, e.path, e.slots)
}

// Timeout reports true: the file is as unreadable as one that timed out.
func (e *busyError) Timeout() bool { return true }

func (l ReadLimits) timeout() time.Duration {
	if l.Timeout <= 0 {
		return DefaultReadTimeout
	}
	return l.Timeout
}

func (l ReadLimits) maxBytes() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxRead
	}
	return l.MaxBytes
}

// SafeFiles reads files named by untrusted input (a model path in an
// agent's command line) without letting the file make the caller wait:
//
//   - only regular files are read: a named pipe, a device (/dev/zero), a
//     directory or a socket is refused with an error wrapping ErrNotRegular
//     that names the path and what it is ("/tmp/fifo is a named pipe, not a
//     regular file"). Open checks the file itself, through an O_PATH
//     descriptor that opens no device, and only then opens it for reading
//     (O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC, through /proc/thread-self/fd so that
//     the file checked is the file read); Size is a stat, which opens
//     nothing;
//   - each Size, and each Open with every read of what it opened, has a
//     deadline (lim.Timeout): past it the call returns an error wrapping
//     os.ErrDeadlineExceeded ("reading /m/model.gguf: gave up after 2s").
//     The system calls run on their own goroutine, so the answer comes at
//     the deadline even when a call never returns (a stalled FUSE or NFS
//     file); such a goroutine is abandoned, and the descriptor it holds is
//     closed when its call returns;
//   - an opened file yields at most lim.MaxBytes bytes.
//
// resolve maps a path as the command gave it to one this process can open
// (the caller's root and working directory); nil leaves paths as they are.
// Errors name the path as the command gave it, never the resolved one, so
// they read well in the estimator's "cannot read the model file P (ERR)".
// The returned Files holds no state between calls and is safe for
// concurrent use; each opened file is for one goroutine at a time.
func SafeFiles(resolve func(path string) string, lim ReadLimits) Files {
	s := safeFiles{resolve: resolve, lim: lim}
	return Files{Size: s.size, Open: s.open}
}

type safeFiles struct {
	resolve func(string) string
	lim     ReadLimits
}

func (s safeFiles) real(p string) string {
	if s.resolve == nil {
		return p
	}
	return s.resolve(p)
}

// size stats p, bounded in time, and refuses what is not a regular file.
func (s safeFiles) size(p string) (int64, error) {
	real := s.real(p)
	type result struct {
		st  unix.Stat_t
		err error
	}
	timeout := s.lim.timeout()
	r, ok, busy := within(s.lim.Slots, time.Now().Add(timeout), func() result {
		var r result
		r.err = unix.Stat(real, &r.st)
		return r
	}, nil)
	if busy {
		return 0, &busyError{op: "stat", path: p, slots: cap(s.lim.Slots.c)}
	}
	if !ok {
		return 0, &slowError{op: "stat", path: p, after: timeout}
	}
	if r.err != nil {
		return 0, &os.PathError{Op: "stat", Path: p, Err: r.err}
	}
	if err := checkRegular(p, r.st.Mode); err != nil {
		return 0, err
	}
	return r.st.Size, nil
}

// open opens p for reading if it is a regular file, bounded in time.
func (s safeFiles) open(p string) (io.ReadCloser, error) {
	real := s.real(p)
	timeout := s.lim.timeout()
	deadline := time.Now().Add(timeout)
	type result struct {
		fd  int
		err error
	}
	r, ok, busy := within(s.lim.Slots, deadline, func() result {
		fd, err := openRegular(real, p)
		return result{fd, err}
	}, func(r result) {
		if r.err == nil {
			unix.Close(r.fd)
		}
	})
	if busy {
		return nil, &busyError{op: "opening", path: p, slots: cap(s.lim.Slots.c)}
	}
	if !ok {
		return nil, &slowError{op: "opening", path: p, after: timeout}
	}
	if r.err != nil {
		return nil, r.err
	}
	return &safeReader{fd: r.fd, path: p, deadline: deadline, timeout: timeout, max: s.lim.maxBytes(), left: s.lim.maxBytes(), slots: s.lim.Slots}, nil
}

// openFlags open a file for reading without blocking on a FIFO's missing
// writer or a device, and without making a terminal the controlling one.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// openRegular opens real for reading when it is a regular file. It looks
// at the file through an O_PATH descriptor first (which opens no device:
// opening some, a watchdog, has effects) and reopens that very file through
// /proc/thread-self/fd; without /proc it opens real again and checks it is the
// same file. Errors name shown.
func openRegular(real, shown string) (int, error) {
	pfd, err := unix.Open(real, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: shown, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, &os.PathError{Op: "stat", Path: shown, Err: err}
	}
	if err := checkRegular(shown, st.Mode); err != nil {
		return -1, err
	}
	fd, err := unix.Open(procfs.FdPath(pfd), openFlags, 0)
	if err != nil {
		fd, err = unix.Open(real, openFlags, 0)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: shown, Err: err}
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "stat", Path: shown, Err: err}
	}
	if err := checkRegular(shown, st2.Mode); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st2.Dev != st.Dev || st2.Ino != st.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("open %s: the file changed while it was opened", shown)
	}
	return fd, nil
}

// notRegularError says what a path names instead of a regular file.
type notRegularError struct {
	path, kind string
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.path, e.kind)
}

func (e *notRegularError) Is(target error) bool { return target == ErrNotRegular }

// checkRegular refuses a file mode (st_mode) other than a regular file's.
func checkRegular(path string, mode uint32) error {
	var kind string
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFIFO:
		kind = "a named pipe"
	case unix.S_IFCHR:
		kind = "a character device"
	case unix.S_IFBLK:
		kind = "a block device"
	case unix.S_IFDIR:
		kind = "a directory"
	case unix.S_IFSOCK:
		kind = "a socket"
	case unix.S_IFLNK:
		kind = "a symbolic link"
	default:
		kind = fmt.Sprintf("of unknown type %#o", mode&unix.S_IFMT)
	}
	return &notRegularError{path: path, kind: kind}
}

// slowError is a call given up at its deadline.
type slowError struct {
	op, path string
	after    time.Duration
}

func (e *slowError) Error() string {
	return fmt.Sprintf("%s %s: gave up after %v", e.op, e.path, e.after)
}

func (e *slowError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// Timeout reports true, as net and os deadline errors do.
func (e *slowError) Timeout() bool { return true }

// within runs f on its own goroutine, in a slot of slots, and returns its
// result, or ok=false at deadline, or busy=true at once when no slot is
// free. A call given up is abandoned: when f returns at last, its result
// goes to abandon (nil: dropped), which releases what it holds, and its
// slot is free again.
func within[T any](slots *ReadSlots, deadline time.Time, f func() T, abandon func(T)) (r T, ok, busy bool) {
	if !slots.take() {
		return r, false, true
	}
	ch := make(chan T, 1)
	go func() {
		defer slots.give()
		ch <- f()
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, true, false
	case <-timer.C:
	}
	// The result may have come with the deadline: take it if so.
	select {
	case r := <-ch:
		return r, true, false
	default:
	}
	if abandon != nil {
		go func() { abandon(<-ch) }()
	}
	return r, false, false
}

// safeReader reads an opened regular file within a deadline and a byte
// budget. Not for concurrent use.
type safeReader struct {
	fd       int
	path     string
	deadline time.Time
	timeout  time.Duration
	max      int64  // the byte bound
	left     int64  // what remains of it
	buf      []byte // the reading goroutine's; reused only once it returned
	err      error  // sticky: a deadline or the byte bound
	slots    *ReadSlots
	// stuck: a read was abandoned; its goroutine closes fd when it returns.
	stuck  bool
	closed bool
}

type readResult struct {
	n   int
	err error
}

// Read implements io.Reader.
func (r *safeReader) Read(p []byte) (int, error) {
	switch {
	case r.closed:
		return 0, &os.PathError{Op: "read", Path: r.path, Err: os.ErrClosed}
	case r.err != nil:
		return 0, r.err
	case len(p) == 0:
		return 0, nil
	case r.left <= 0:
		r.err = fmt.Errorf("reading %s: stopped after %d bytes, the most read of one file", r.path, r.max)
		return 0, r.err
	case !time.Now().Before(r.deadline):
		r.err = &slowError{op: "reading", path: r.path, after: r.timeout}
		return 0, r.err
	}
	n := int(min(int64(len(p)), r.left, 1<<20))
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	buf, fd := r.buf[:n], r.fd
	res, ok, busy := within(r.slots, r.deadline, func() readResult {
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue
			}
			return readResult{n, err}
		}
	}, func(readResult) { unix.Close(fd) })
	if busy {
		r.err = &busyError{op: "reading", path: r.path, slots: cap(r.slots.c)}
		return 0, r.err
	}
	if !ok {
		r.stuck = true
		r.buf = nil // the abandoned goroutine may still write to it
		r.err = &slowError{op: "reading", path: r.path, after: r.timeout}
		return 0, r.err
	}
	if res.err != nil {
		return 0, &os.PathError{Op: "read", Path: r.path, Err: res.err}
	}
	if res.n == 0 {
		return 0, io.EOF
	}
	r.left -= int64(res.n)
	return copy(p, buf[:res.n]), nil
}

// Close implements io.Closer. After an abandoned read the descriptor is
// closed by the reading goroutine when its call returns, not here.
func (r *safeReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.stuck {
		return nil
	}
	if err := unix.Close(r.fd); err != nil {
		return &os.PathError{Op: "close", Path: r.path, Err: err}
	}
	return nil
}
