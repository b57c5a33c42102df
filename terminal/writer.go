package terminal

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// StallWait is how long a bounded write to the user's terminal waits while
// the terminal takes nothing (its output stopped by tcflow(TCOOFF) or ^S,
// a connection that no longer moves) before it gives up what is left: the
// relay's writes once the agent is gone, paddock's own lines always. A
// terminal that takes some of it, however slowly, is waited for.
const StallWait = 3 * time.Second

// errStalled is what a bounded write returns when it gave up.
var errStalled = errors.New("the terminal took no output")

// termWriter writes to one of the user's terminals so that a write never
// waits on it without bound once it is bounded: through an open file of
// its own, non-blocking, whose write a deadline ends (the open file the
// user's shell shares with paddock keeps its flags); where the terminal
// cannot be opened again (it belongs to another user, after su; it is in
// exclusive mode), through the file as given, from a goroutine that is
// left behind at the bound. After a write gave up, the next ones take what
// the terminal takes at once and wait for nothing, until it moves again.
type termWriter struct {
	f  *os.File // the terminal as given
	nb *os.File // a non-blocking open of it, or nil

	// bound is how long a write may go without progress (0: no bound);
	// limited is closed when limit sets it. deadlineMu orders the setting
	// of the bound with the renewal of nb's deadline from it: a write that
	// read no bound must not clear the deadline limit has just set (the
	// write would then wait on a stopped terminal for ever).
	bound      atomic.Int64
	limited    chan struct{}
	limitOnce  sync.Once
	deadlineMu sync.Mutex

	mu sync.Mutex // one write at a time; guards the rest
	// stalled: the last write gave up, and the terminal has taken nothing
	// since.
	stalled bool
	// left is closed when the write left behind (fallback) returns; nil
	// when none is.
	left chan struct{}
	// dropped counts the bytes given up.
	dropped atomic.Int64
}

// newTermWriter writes to terminal f, each write bounded by bound (0: none
// until limit).
func newTermWriter(f *os.File, bound time.Duration) *termWriter {
	w := &termWriter{f: f, limited: make(chan struct{})}
	if nb := reopen(f, unix.O_WRONLY); nb != f {
		w.nb = nb
	}
	w.bound.Store(int64(bound))
	if bound > 0 {
		w.limitOnce.Do(func() { close(w.limited) })
	}
	return w
}

// limit bounds every write from now on, the one under way included.
func (w *termWriter) limit(bound time.Duration) {
	w.deadlineMu.Lock()
	w.bound.Store(int64(bound))
	if w.nb != nil {
		_ = w.nb.SetWriteDeadline(time.Now().Add(bound))
	}
	w.deadlineMu.Unlock()
	w.limitOnce.Do(func() { close(w.limited) })
}

// renewDeadline sets nb's write deadline a bound from now, or none while
// writes are not bounded, and returns the bound.
func (w *termWriter) renewDeadline() time.Duration {
	w.deadlineMu.Lock()
	defer w.deadlineMu.Unlock()
	d := time.Duration(w.bound.Load())
	if d > 0 {
		_ = w.nb.SetWriteDeadline(time.Now().Add(d))
	} else {
		_ = w.nb.SetWriteDeadline(time.Time{})
	}
	return d
}

// close closes the writer's own open of the terminal (not the file as
// given); a write left behind keeps its copy of the bytes.
func (w *termWriter) close() {
	if w.nb != nil {
		_ = w.nb.Close()
	}
}

// Write implements io.Writer: all of p, or the error that ended the write
// (errStalled when it gave up; what was given up is counted).
func (w *termWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int
	var err error
	if w.nb != nil {
		n, err = w.writeNonBlocking(p)
	} else {
		n, err = w.writeLeaving(p)
	}
	if errors.Is(err, errStalled) {
		w.stalled = true
		w.dropped.Add(int64(len(p) - n))
	}
	return n, err
}

// writeNonBlocking writes p through the non-blocking open, renewing the
// deadline at each bit of progress.
func (w *termWriter) writeNonBlocking(p []byte) (int, error) {
	done := 0
	if w.stalled {
		// Only what the terminal takes now.
		n, err := tryWrite(w.nb, p)
		if n <= 0 {
			if err == nil || errors.Is(err, unix.EAGAIN) {
				err = errStalled
			}
			return 0, err
		}
		w.stalled = false
		done = n
	}
	w.renewDeadline()
	for done < len(p) {
		n, err := w.nb.Write(p[done:])
		done += n
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return done, err
		}
		// Not bounded (yet), or it moves: wait on, the deadline renewed
		// from the bound as it is now. A bound set meanwhile by limit is
		// kept, whatever the write had read before.
		if n == 0 && time.Duration(w.bound.Load()) > 0 {
			return done, errStalled
		}
		w.renewDeadline()
	}
	return done, nil
}

// tryWrite makes one write(2) on the non-blocking f, without waiting.
func tryWrite(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), p)
		return true
	}); err != nil {
		return 0, err
	}
	return n, werr
}

// writeLeaving writes p through the file as given, from a goroutine that
// is left behind when the write outlasts the bound.
func (w *termWriter) writeLeaving(p []byte) (int, error) {
	if w.left != nil {
		select {
		case <-w.left:
			w.left = nil
		default:
			if w.stalled || !w.await(w.left) {
				return 0, errStalled
			}
			w.left = nil
		}
		w.stalled = false
	}
	b := bytes.Clone(p)
	type result struct {
		n   int
		err error
	}
	res := make(chan result, 1)
	fin := make(chan struct{})
	go func() {
		n, err := w.f.Write(b)
		res <- result{n, err}
		close(fin)
	}()
	if !w.await(fin) {
		w.left = fin
		return 0, errStalled
	}
	r := <-res
	return r.n, r.err
}

// await waits for done: for ever while writes have no bound, else up to
// the bound (from when it was set, when that was during the wait).
func (w *termWriter) await(done <-chan struct{}) bool {
	if time.Duration(w.bound.Load()) == 0 {
		select {
		case <-done:
			return true
		case <-w.limited:
		}
	}
	t := time.NewTimer(time.Duration(w.bound.Load()))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
