package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/pidns"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/policy"
)

// callerNames is policy.Names for the caller of one decision: it finds
// the caller's PID namespace the first time a pid argument is to be read
// (a stat of /proc/TID/ns/pid; nothing for a call without one), and
// translates through it (package pidns) only when it is not paddock's
// own. close releases what it opened.
type callerNames struct {
	fs   procfs.FS
	self uint64 // paddock's own PID namespace (0: not read)
	tid  int
	// known, when set, remembers the callers found in paddock's own
	// namespace (a loop's world: sameNS).
	known *sameNS
	// checked: the namespace was looked at; ns is nil when it is
	// paddock's own, and err says why it could not be told.
	checked bool
	ns      *pidns.NS
	err     error
	// pin is the pidfd known holds on the caller when the answer came from
	// it, unchecked (-1: none): the decision stands only if it shows the
	// caller's thread alive afterwards (call.hitsHold).
	pin int
}

// reset makes n the names of thread tid's calls, closing what it held.
func (n *callerNames) reset(fs procfs.FS, self uint64, tid int, known *sameNS) {
	n.close()
	n.fs, n.self, n.tid, n.known = fs, self, tid, known
	n.pin = -1
}

// close releases the namespace n opened.
func (n *callerNames) close() {
	if n.ns != nil {
		n.ns.Close()
	}
	n.checked, n.ns, n.err, n.pin = false, nil, nil, -1
}

// nested reports whether the caller is in a PID namespace other than
// paddock's, opening it the first time.
func (n *callerNames) nested() (*pidns.NS, error) {
	if n.checked {
		return n.ns, n.err
	}
	n.checked = true
	if fd, ok := n.known.lookup(n.tid); ok {
		n.pin = fd
		return nil, nil
	}
	if n.self == 0 {
		n.err = errors.New("paddock's own PID namespace could not be read")
		return nil, n.err
	}
	same, err := pidns.Same(n.fs, n.tid, n.self)
	if err != nil && n.tid > 0 && !errors.Is(err, procfs.ErrNotFound) {
		// ns/pid needs ptrace read access, which a caller that made itself
		// non-dumpable denies a paddock that is not root; its status line
		// does not: one number there is paddock's own namespace.
		if cr, cerr := n.fs.Creds(n.tid); cerr == nil && len(cr.NSpid) == 1 {
			same, err = true, nil
		}
	}
	switch {
	case err != nil:
		n.err = fmt.Errorf("the PID namespace of caller %d: %w", n.tid, err)
	case same:
		n.known.add(n.tid)
	default:
		n.ns, n.err = pidns.Of(n.fs, n.tid)
		if n.err != nil {
			n.err = fmt.Errorf("the PID namespace of caller %d: %w", n.tid, n.err)
		}
	}
	return n.ns, n.err
}

// Host implements policy.Names.
func (n *callerNames) Host(id int) (int, error) {
	ns, err := n.nested()
	if err != nil || ns == nil {
		return id, err
	}
	return ns.Host(id)
}

// Local implements policy.Names.
func (n *callerNames) Local(h int) (int, error) {
	ns, err := n.nested()
	if err != nil || ns == nil {
		return h, err
	}
	return ns.Local(h)
}

// translate reads c's pid arguments in its caller's PID namespace
// (policy.Translate) where that is not paddock's own, so that the
// decision, a deputy's delivery and a probe all name what the caller
// named: done when that is the answer (a pid that names nothing there is
// ESRCH, one that could not be read refused).
func (c *call) translate() (policy.Decision, bool) {
	c.names.reset(c.w.fs, c.w.selfNS, c.req.Tid, c.w.sameNS)
	r, d, done := policy.Translate(c.req, &c.names, c.world())
	if c.names.checked {
		c.touch(c.req.Tid) // its /proc entry was read by its pid
	}
	if done {
		return d, true
	}
	if c.names.ns == nil {
		return policy.Decision{}, false // paddock's own namespace, or no pid read
	}
	c.req = r
	return policy.Decision{}, false
}

// selfPidNS reads paddock's own PID namespace (0 when it cannot be read:
// every pid of a call is then refused as undecidable).
func selfPidNS(fs procfs.FS) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(fs.Root+"/self/ns/pid", &st); err != nil {
		return 0
	}
	return st.Ino
}

// sameNSMax bounds the callers a loop remembers (one descriptor each).
const sameNSMax = 256

// sameNS remembers, across a loop's notifications, the callers found in
// paddock's own PID namespace, each pinned with a pidfd (of the thread,
// Linux 6.9+, where it does not lead its process): a thread never changes
// its PID namespace, and while the pin says it has not been reaped its tid
// names it. The next call of the same caller then reads nothing: its pin
// is checked after the decision, in the one poll(2) that checks the
// decision's other cached pins (call.hitsHold). One belongs to one loop;
// it is not safe for concurrent use. nil remembers nothing.
type sameNS struct {
	fds map[int]int
	// exits watches the pins (each under -tid).
	exits *exitWatch
}

func newSameNS(exits *exitWatch) *sameNS {
	return &sameNS{fds: make(map[int]int), exits: exits}
}

// lookup returns the pin of tid if tid was found in paddock's namespace,
// unchecked: tid names that thread only while the pin shows it unreaped
// (drop it when it does not).
func (s *sameNS) lookup(tid int) (pidfd int, ok bool) {
	if s == nil {
		return -1, false
	}
	fd, ok := s.fds[tid]
	return fd, ok
}

// drop forgets tid if pidfd is still its pin (its thread has exited),
// closing it.
func (s *sameNS) drop(tid, pidfd int) {
	if fd, ok := s.fds[tid]; ok && fd == pidfd {
		unix.Close(fd)
		delete(s.fds, tid)
	}
}

// holds reports whether pidfd is still the pin of tid, not dropped.
func (s *sameNS) holds(tid, pidfd int) bool {
	fd, ok := s.fds[tid]
	return ok && fd == pidfd
}

// add remembers tid, just found in paddock's namespace, if it can be
// pinned.
func (s *sameNS) add(tid int) {
	if s == nil {
		return
	}
	fd, err := unix.PidfdOpen(tid, 0)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.PidfdOpen(tid, pidfdThread) // not a leader: Linux 6.9+
	}
	if err != nil {
		return
	}
	if len(s.fds) >= sameNSMax {
		s.flush()
	}
	if old, ok := s.fds[tid]; ok {
		unix.Close(old)
	}
	if !s.exits.watch(fd, -int32(tid)) {
		unix.Close(fd)
		delete(s.fds, tid)
		return
	}
	s.fds[tid] = fd
}

// flush closes every pin.
func (s *sameNS) flush() {
	if s == nil {
		return
	}
	for tid, fd := range s.fds {
		unix.Close(fd)
		delete(s.fds, tid)
	}
}
