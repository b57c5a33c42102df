package llaudit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// Options configure a Reader. Its functions are called on the reader's
// own goroutine, one at a time, never after Close has returned.
type Options struct {
	// Ours reports whether the domain of an "allocated" record is one
	// whose denials the reader hands to Denied; a denial of a domain it
	// did not claim, or whose record never came, is not handed on.
	Ours func(Domain) bool
	// Denied receives each denial of a claimed domain, in the order the
	// kernel logged them, once its event is complete (its AUDIT_EOE came,
	// or holdEvent passed: an event without an audit context has none).
	Denied func(Denial)
	// Audit, when set, receives once what the kernel said of its audit
	// status (AUDIT_GET): whether auditing is on, or why it would not say
	// (EPERM without CAP_AUDIT_CONTROL, or outside the initial PID
	// namespace).
	Audit func(enabled bool, err error)
	// Lost, when set, is told each time the socket lost records because
	// the reader fell behind (ENOBUFS).
	Lost func()
}

// Reader receives the kernel's audit records from the read-only
// multicast group and hands on the Landlock denials of the domains its
// Options claim. Close ends it.
type Reader struct {
	o    Options
	fd   int
	wake int    // eventfd: Sync and Close wake the loop
	seq  uint32 // AUDIT_GET's sequence number: its reply carries it
	done chan struct{}

	mu      sync.Mutex
	marks   map[string]chan struct{} // Sync's marks, by the joining thread's name
	syncs   int
	closing bool

	// The loop's own (no lock).
	pending []*event
	domains map[uint64]bool
}

// event is the records of one audit event seen so far: its denials, and
// when it is handed on even without an AUDIT_EOE.
type event struct {
	serial   uint64
	denials  []Denial
	deadline time.Time
}

// holdEvent is how long a denial waits for the rest of its event (the
// AUDIT_SYSCALL record that names the refused process, and AUDIT_EOE),
// which come at the call's exit, or not at all where the process has no
// audit context.
const holdEvent = 250 * time.Millisecond

// maxPending bounds the events held at once; past it the oldest is
// handed on as it is.
const maxPending = 1024

// maxDomains bounds the domains remembered; past it the others' are
// forgotten (a forgotten domain's denials are not handed on).
const maxDomains = 4096

// rcvBuf is the receive buffer asked for: room for a burst of records
// while the reader is not scheduled.
const rcvBuf = 4 << 20

// ErrNoAudit: this kernel has no audit subsystem (CONFIG_AUDIT).
var ErrNoAudit = errors.New("the kernel has no audit (NETLINK_AUDIT is not supported)")

// ErrNotPermitted: reading the audit records needs CAP_AUDIT_READ in the
// initial user namespace (root has it).
var ErrNotPermitted = errors.New("reading the kernel's audit records needs CAP_AUDIT_READ (root)")

// Open binds a reader to the audit multicast group and starts reading;
// the reader first asks the kernel whether auditing is on (the answer goes
// to Options.Audit).
func Open(o Options) (*Reader, error) {
	fd, err := bindGroup()
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("llaudit: eventfd: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	// Only the kernel may send to a connected netlink socket: a process
	// of the agent's cannot forge records into it by its port id.
	if err := unix.Connect(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		unix.Close(wake)
		return nil, fmt.Errorf("llaudit: connect to the kernel: %w", err)
	}
	r := &Reader{o: o, fd: fd, wake: wake, done: make(chan struct{}), marks: map[string]chan struct{}{}, domains: map[uint64]bool{}}
	go r.loop()
	return r, nil
}

// bindGroup opens a NETLINK_AUDIT socket bound to AUDIT_NLGRP_READLOG.
// Binding makes the kernel log an AUDIT_EVENT_LISTENER record naming the
// calling thread and whether it was let in: a process without
// CAP_AUDIT_READ is turned away before it tries, so that an unprivileged
// paddock leaves no record of a refused bind at each start.
func bindGroup() (int, error) {
	if !canRead() {
		return -1, fmt.Errorf("llaudit: %w", ErrNotPermitted)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) {
		return -1, fmt.Errorf("llaudit: %w", ErrNoAudit)
	}
	if err != nil {
		return -1, fmt.Errorf("llaudit: socket(NETLINK_AUDIT): %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return -1, fmt.Errorf("llaudit: bind to AUDIT_NLGRP_READLOG: %w (%w)", ErrNotPermitted, err)
		}
		return -1, fmt.Errorf("llaudit: bind to AUDIT_NLGRP_READLOG: %w", err)
	}
	return fd, nil
}

// askStatus sends AUDIT_GET; the answer comes to the loop. The kernel
// answers from a thread it starts for the purpose, inside this call: a
// millisecond, which the loop spends rather than its opener.
func (r *Reader) askStatus() error {
	msg := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(msg[0:4], unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint16(msg[4:6], unix.AUDIT_GET)
	binary.NativeEndian.PutUint16(msg[6:8], unix.NLM_F_REQUEST)
	r.seq = nextSeq()
	binary.NativeEndian.PutUint32(msg[8:12], r.seq)
	if err := unix.Sendto(r.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("llaudit: AUDIT_GET: %w", err)
	}
	return nil
}

// Sync waits, at most timeout, until the reader has received every
// record the kernel logged before Sync was called, and has handed on the
// denials among them (events still without their AUDIT_EOE included). It
// makes the kernel log a record of its own and waits for it, since the
// kernel sends records in the order it logged them: a thread joins the
// group with a second socket, which the kernel logs as an
// AUDIT_EVENT_LISTENER record with the thread's name (its comm, which the
// thread takes for the moment: the record's pid is the process's, the
// same for every thread). It reports whether that record came: it does
// not where auditing is off, or that record type is filtered out.
func (r *Reader) Sync(timeout time.Duration) bool {
	mark := make(chan struct{})
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return false
	}
	r.syncs++
	name := fmt.Sprintf("paddock-s%x", r.syncs%(1<<20))
	r.marks[name] = mark
	r.mu.Unlock()
	err := joinNamed(name)
	ok := false
	if err == nil {
		t := time.NewTimer(timeout)
		select {
		case <-mark:
			ok = true
		case <-t.C:
		case <-r.done:
		}
		t.Stop()
	}
	r.mu.Lock()
	delete(r.marks, name)
	r.mu.Unlock()
	return ok
}

// joinNamed joins the group with a socket of its own, closed at once,
// from a thread named name meanwhile.
func joinNamed(name string) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := sys.ThreadName()
	if err != nil {
		return fmt.Errorf("llaudit: PR_GET_NAME: %w", err)
	}
	if err := sys.SetThreadName(name); err != nil {
		return fmt.Errorf("llaudit: PR_SET_NAME: %w", err)
	}
	fd, err := bindGroup()
	_ = sys.SetThreadName(old)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// Close stops the reader, handing on the denials of the events it holds
// as they are; Options' functions are not called afterwards. Close may be
// called again.
func (r *Reader) Close() {
	r.mu.Lock()
	first := !r.closing
	r.closing = true
	r.mu.Unlock()
	if first {
		r.poke()
	}
	<-r.done
}

// poke wakes the loop.
func (r *Reader) poke() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(r.wake, one[:])
}

// loop receives until Close.
func (r *Reader) loop() {
	defer close(r.done)
	defer unix.Close(r.wake)
	defer unix.Close(r.fd)
	if r.o.Audit != nil {
		if err := r.askStatus(); err != nil {
			r.o.Audit(false, err)
			r.o.Audit = nil
		}
	}
	buf := make([]byte, 1<<16)
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
	for {
		timeout := -1
		if len(r.pending) > 0 {
			timeout = max(int(time.Until(r.pending[0].deadline).Milliseconds())+1, 0)
		}
		_, err := unix.Poll(fds, timeout)
		if err != nil && err != unix.EINTR {
			r.completeAll()
			return
		}
		r.drain(buf)
		r.completeDue(time.Now())
		r.mu.Lock()
		closing := r.closing
		r.mu.Unlock()
		if closing {
			r.drain(buf)
			r.completeAll()
			return
		}
		if fds[1].Revents != 0 {
			var b [8]byte
			_, _ = unix.Read(r.wake, b[:])
		}
	}
}

// drain receives every datagram queued on the socket.
func (r *Reader) drain(buf []byte) {
	for {
		n, from, err := unix.Recvfrom(r.fd, buf, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EWOULDBLOCK):
			return
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			if r.o.Lost != nil {
				r.o.Lost()
			}
			continue
		case err != nil:
			return
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			continue // not the kernel's
		}
		r.messages(buf[:n])
	}
}

// messages handles the netlink messages of one datagram. The kernel's
// multicast copies of audit records carry one message each, whose length
// is not padded to the netlink alignment; a reply may carry several.
func (r *Reader) messages(b []byte) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		seq := binary.NativeEndian.Uint32(b[8:12])
		if l < unix.NLMSG_HDRLEN {
			return
		}
		end := min(l, len(b))
		// A reply of another sequence is to another socket that had this
		// port id before: the kernel sends AUDIT_GET's from a thread of
		// its own, maybe late.
		if reply := typ == unix.AUDIT_GET || typ == unix.NLMSG_ERROR; !reply || seq == r.seq {
			r.message(typ, b[unix.NLMSG_HDRLEN:end])
		}
		next := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if next >= len(b) {
			return
		}
		b = b[next:]
	}
}

// message handles one record (or reply).
func (r *Reader) message(typ uint16, data []byte) {
	switch typ {
	case unix.AUDIT_GET:
		// struct audit_status (include/uapi/linux/audit.h): __u32 mask,
		// then __u32 enabled.
		if r.o.Audit != nil && len(data) >= 8 {
			r.o.Audit(binary.NativeEndian.Uint32(data[4:8]) != 0, nil)
			r.o.Audit = nil
		}
		return
	case unix.NLMSG_ERROR:
		// struct nlmsgerr: int error, then the request's header.
		if len(data) >= 4+unix.NLMSG_HDRLEN && r.o.Audit != nil && binary.NativeEndian.Uint16(data[8:10]) == unix.AUDIT_GET {
			if errno := -int32(binary.NativeEndian.Uint32(data[0:4])); errno > 0 {
				r.o.Audit(false, fmt.Errorf("llaudit: AUDIT_GET: %w", unix.Errno(errno)))
				r.o.Audit = nil
			}
		}
		return
	case typeAccess, typeDomain, typeSyscall, typeEOE, typeListener:
	default:
		return
	}
	text := string(trimNUL(data))
	st, body, err := splitStamp(text)
	if err != nil {
		return
	}
	switch typ {
	case typeAccess:
		d, err := parseAccess(st, body)
		if err != nil {
			return
		}
		ev := r.held(st.Serial)
		ev.denials = append(ev.denials, d)
	case typeDomain:
		d, err := parseDomain(st, body)
		if err != nil {
			return
		}
		switch d.Status {
		case "allocated":
			if _, known := r.domains[d.ID]; !known {
				if len(r.domains) >= maxDomains {
					r.forgetOthers()
				}
				r.domains[d.ID] = r.o.Ours != nil && r.o.Ours(d)
			}
		case "deallocated":
			if ours := r.domains[d.ID]; !ours {
				delete(r.domains, d.ID)
			}
		}
	case typeSyscall:
		if ev := r.find(st.Serial); ev != nil {
			if s, err := parseSyscall(body); err == nil {
				for i := range ev.denials {
					d := &ev.denials[i]
					d.Caller, d.Comm, d.Exe, d.Arch, d.Syscall, d.Exit = s.pid, s.comm, s.exe, s.arch, s.nr, s.exit
				}
			}
		}
	case typeEOE:
		if ev := r.find(st.Serial); ev != nil {
			r.complete(ev)
		}
	case typeListener:
		l := parseListener(body)
		if l.op != "connect" {
			return
		}
		r.mu.Lock()
		mark, ok := r.marks[l.comm]
		delete(r.marks, l.comm)
		r.mu.Unlock()
		if ok {
			// Everything logged before the mark has come.
			r.completeAll()
			close(mark)
		}
	}
}

// trimNUL drops the NUL bytes a record's text may end with.
func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// find returns the held event of serial (nil: none).
func (r *Reader) find(serial uint64) *event {
	for _, ev := range r.pending {
		if ev.serial == serial {
			return ev
		}
	}
	return nil
}

// held returns the held event of serial, holding a new one if need be.
func (r *Reader) held(serial uint64) *event {
	if ev := r.find(serial); ev != nil {
		return ev
	}
	if len(r.pending) >= maxPending {
		r.complete(r.pending[0])
	}
	ev := &event{serial: serial, deadline: time.Now().Add(holdEvent)}
	r.pending = append(r.pending, ev)
	return ev
}

// complete hands on ev's denials of claimed domains and forgets ev.
func (r *Reader) complete(ev *event) {
	for i, p := range r.pending {
		if p == ev {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			break
		}
	}
	for _, d := range ev.denials {
		if r.domains[d.Domain] && r.o.Denied != nil {
			r.o.Denied(d)
		}
	}
}

// completeDue completes the held events whose time is up.
func (r *Reader) completeDue(now time.Time) {
	for len(r.pending) > 0 && !r.pending[0].deadline.After(now) {
		r.complete(r.pending[0])
	}
}

// completeAll completes every held event.
func (r *Reader) completeAll() {
	for len(r.pending) > 0 {
		r.complete(r.pending[0])
	}
}

// forgetOthers forgets the domains not claimed.
func (r *Reader) forgetOthers() {
	for id, ours := range r.domains {
		if !ours {
			delete(r.domains, id)
		}
	}
}

// canRead reports whether this thread has CAP_AUDIT_READ in its effective
// set (capget(2)); true where it cannot tell, so that bind decides.
func canRead() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	c := uint(unix.CAP_AUDIT_READ)
	return data[c/32].Effective&(1<<(c%32)) != 0
}
