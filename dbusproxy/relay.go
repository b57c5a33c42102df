package dbusproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// Bounds of the relay's reading.
const (
	maxLine    = 16 << 10 // an authentication line (libdbus allows 16 KiB)
	readChunk  = 64 << 10 // bytes asked of the kernel at a time
	scmMaxFD   = 253      // descriptors the kernel passes in one sendmsg (SCM_MAX_FD)
	maxQueued  = 2 * maxFDs
	maxPendErr = 4096 // refusals awaiting their error reply
)

// wire reads a D-Bus connection: bytes, and the unix descriptors that come
// with them, which belong, in order, to the messages whose UNIX_FDS header
// field claims them.
type wire struct {
	c    *net.UnixConn
	name string // "client" or "bus", for errors
	buf  []byte // buf[r:] is read and not yet taken
	r    int
	fds  []int // received, not yet taken by a message
	oob  []byte
}

func newWire(c *net.UnixConn, name string) *wire {
	return &wire{c: c, name: name, oob: make([]byte, unix.CmsgSpace(scmMaxFD*4)+unix.CmsgSpace(unix.SizeofUcred))}
}

// fill reads until n bytes are buffered. io.EOF: the peer closed with
// nothing buffered; io.ErrUnexpectedEOF: in the middle of something.
func (w *wire) fill(n int) error {
	for len(w.buf)-w.r < n {
		if w.r > 0 {
			// Keep what is left at the start; let go of a large buffer
			// once the message that needed it is gone.
			rest := len(w.buf) - w.r
			if cap(w.buf) > 4*readChunk && rest < readChunk {
				w.buf = append(make([]byte, 0, 2*readChunk), w.buf[w.r:]...)
			} else {
				w.buf = w.buf[:copy(w.buf, w.buf[w.r:])]
			}
			w.r = 0
		}
		w.buf = slices.Grow(w.buf, readChunk)
		got, oobn, flags, _, err := w.c.ReadMsgUnix(w.buf[len(w.buf):cap(w.buf)], w.oob)
		if oobn > 0 {
			if ferr := w.takeRights(w.oob[:oobn]); ferr != nil {
				return ferr
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return fmt.Errorf("read %s: descriptors were cut off (more than %d in one write)", w.name, scmMaxFD)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", w.name, err)
		}
		w.buf = w.buf[:len(w.buf)+max(got, 0)]
		if got == 0 {
			if len(w.buf) == w.r {
				return io.EOF
			}
			return fmt.Errorf("read %s: %w", w.name, io.ErrUnexpectedEOF)
		}
	}
	return nil
}

// takeRights queues the descriptors of the control messages b.
func (w *wire) takeRights(b []byte) error {
	msgs, err := unix.ParseSocketControlMessage(b)
	if err != nil {
		return fmt.Errorf("read %s: control message: %w", w.name, err)
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fmt.Errorf("read %s: SCM_RIGHTS: %w", w.name, err)
		}
		w.fds = append(w.fds, fds...)
	}
	if len(w.fds) > maxQueued {
		return fmt.Errorf("read %s: %d descriptors sent ahead of the messages that claim them", w.name, len(w.fds))
	}
	return nil
}

// line returns the next authentication line, "\r\n" included (aliasing
// the buffer, good until the next read).
func (w *wire) line() ([]byte, error) {
	searched := 0 // of w.buf[w.r:], bytes that hold no "\r\n" but maybe the last's '\r'
	for {
		rest := w.buf[w.r:]
		if i := bytes.Index(rest[searched:], []byte("\r\n")); i >= 0 {
			l := rest[:searched+i+2]
			w.r += len(l)
			return l, nil
		}
		if len(rest) > maxLine {
			return nil, fmt.Errorf("read %s: an authentication line longer than %d bytes", w.name, maxLine)
		}
		searched = max(len(rest)-1, 0)
		if err := w.fill(len(rest) + 1); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("read %s: %w in authentication", w.name, io.ErrUnexpectedEOF)
			}
			return nil, err
		}
	}
}

// message returns the next message (aliasing the buffer, good until the
// next read), its header, and the descriptors it claims.
func (w *wire) message() ([]byte, header, []int, error) {
	if err := w.fill(dbuswire.FixedLen); err != nil {
		return nil, header{}, nil, err
	}
	n, err := dbuswire.MessageLen(w.buf[w.r : w.r+dbuswire.FixedLen])
	if err != nil {
		return nil, header{}, nil, fmt.Errorf("read %s: %w", w.name, err)
	}
	if err := w.fill(n); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("read %s: %w", w.name, io.ErrUnexpectedEOF)
		}
		return nil, header{}, nil, err
	}
	msg := w.buf[w.r : w.r+n]
	w.r += n
	h, err := parseHeader(msg)
	if err != nil {
		return nil, h, nil, fmt.Errorf("read %s: message %d: %w", w.name, h.serial, err)
	}
	if int(h.unixFDs) > len(w.fds) {
		return nil, h, nil, fmt.Errorf("read %s: message %d claims %d unix fds, %d came with it", w.name, h.serial, h.unixFDs, len(w.fds))
	}
	fds := append([]int(nil), w.fds[:h.unixFDs]...)
	w.fds = w.fds[h.unixFDs:]
	return msg, h, fds, nil
}

// close closes the descriptors no message took.
func (w *wire) close() {
	closeFDs(w.fds)
	w.fds = nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// send writes one message with its descriptors: they go with its first
// bytes (SCM_MAX_FD at a time, a byte each but the last batch), as
// dbus-daemon sends them, so a reader that takes a message's descriptors
// with its bytes (GLib, sd-bus) finds them there.
func send(c *net.UnixConn, b []byte, fds []int) error {
	for len(fds) > scmMaxFD && len(b) > 1 {
		n, _, err := c.WriteMsgUnix(b[:1], unix.UnixRights(fds[:scmMaxFD]...), nil)
		if err != nil {
			return err
		}
		b, fds = b[n:], fds[scmMaxFD:]
	}
	if len(fds) > 0 {
		n, _, err := c.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	for len(b) > 0 {
		n, err := c.Write(b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// owed is a refusal whose error reply is not yet sent.
type owed struct {
	serial uint32
	sender string
	text   string
}

// relay is one client connection's relay.
type relay struct {
	client, bus *net.UnixConn
	d           *decider
	refused     func(Refusal)

	begun atomic.Bool   // the client sent BEGIN: the bus's next message byte is binary
	hello atomic.Uint32 // the serial of the client's Hello, 0 before it
	peer  atomic.Bool   // the client sent something else first: a peer-to-peer connection, no Hello will come

	mu     sync.Mutex
	owing  []owed
	wake   chan struct{}
	serial uint32 // the last serial the relay gave an error reply
}

// Relay relays one agent connection to a D-Bus bus, refusing the method
// calls p refuses, until either side closes; it closes both. client is the
// agent's end (paddock's socketpair in place of the agent's socket), bus
// paddock's connection to the real bus, made with the agent's
// credentials; bus names the bus in messages ("system", "session").
// refused is called for each refusal, before the caller gets its error.
//
// Authentication passes through unchanged both ways, and so does every
// message but a refused call, with its unix descriptors; a refused call's
// descriptors are closed. Relay returns nil when a side closed cleanly,
// else what went wrong: malformed input from the client (which the bus
// would have refused too) ends the connection, never the process.
func Relay(client, bus *net.UnixConn, busName string, p Policy, refused func(Refusal)) error {
	r := &relay{client: client, bus: bus, d: newDecider(busName, p), refused: refused, wake: make(chan struct{}, 1)}
	return r.run()
}

type ended struct {
	who string
	err error
}

func (r *relay) run() error {
	frames := make(chan frame, 16)
	quit := make(chan struct{})
	done := make(chan ended, 3)
	cw, bw := newWire(r.client, "client"), newWire(r.bus, "bus")
	go func() { done <- ended{"client", r.fromClient(cw)} }()
	go func() { done <- ended{"bus", r.fromBus(bw, frames, quit)} }()
	go func() { done <- ended{"writer", r.toClient(frames)} }()

	var first error
	closed, clientGone := false, false
	shut := func() {
		if !closed {
			closed = true
			close(quit)
			r.client.Close()
			r.bus.Close()
		}
	}
	for range 3 {
		e := <-done
		switch {
		case e.err != nil:
			// After paddock closed the sockets, or once the client went,
			// the errors that follow are the closing's; a peer that hung
			// up (EPIPE, ECONNRESET) closed.
			if first == nil && !closed && !(clientGone && e.who == "writer") && !hungUp(e.err) {
				first = e.err
			}
			shut()
		case e.who == "client":
			// The client is done sending: let the bus know, and pass on
			// what it still sends until it closes too.
			clientGone = true
			if !closed {
				r.bus.CloseWrite()
			}
		case e.who == "writer":
			// The bus closed and the client got all it sent.
			shut()
		}
	}
	shut()
	cw.close()
	bw.close()
	for f := range frames {
		closeFDs(f.fds)
	}
	return first
}

// hungUp reports whether err says the peer closed its end.
func hungUp(err error) bool {
	return errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)
}

// fromClient relays the client's authentication, then its messages,
// deciding each.
func (r *relay) fromClient(w *wire) error {
	if err := w.fill(1); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if w.buf[w.r] != 0 {
		return fmt.Errorf("client: authentication starts with byte %q, not the NUL byte D-Bus requires", w.buf[w.r])
	}
	w.r++
	if err := r.toBus([]byte{0}, nil); err != nil {
		return err
	}
	for {
		l, err := w.line()
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		cmd, _, _ := bytes.Cut(bytes.TrimSuffix(l, []byte("\r\n")), []byte(" "))
		cmd, _, _ = bytes.Cut(cmd, []byte("\t"))
		if string(cmd) == "BEGIN" {
			r.begun.Store(true)
		}
		if err := r.toBus(l, nil); err != nil {
			return err
		}
		if r.begun.Load() {
			break
		}
	}
	for first := true; ; first = false {
		msg, h, fds, err := w.message()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("client: %w", err)
		}
		if first {
			if h.typ == dbuswire.TypeMethodCall && h.member == "Hello" && h.dest == "org.freedesktop.DBus" &&
				(h.iface == "" || h.iface == "org.freedesktop.DBus") {
				r.hello.Store(h.serial)
			} else {
				r.peer.Store(true)
				r.poke()
			}
		}
		if ref := r.d.decide(&h, msg, fds); ref != nil {
			closeFDs(fds)
			if r.refused != nil {
				r.refused(*ref)
			}
			if h.flags&dbuswire.FlagNoReplyExpected == 0 {
				if err := r.owe(owed{serial: h.serial, sender: h.dest, text: ref.Message}); err != nil {
					return err
				}
			}
			continue
		}
		err = r.toBus(msg, fds)
		closeFDs(fds)
		if err != nil {
			return err
		}
	}
}

func (r *relay) toBus(b []byte, fds []int) error {
	if err := send(r.bus, b, fds); err != nil {
		return fmt.Errorf("write bus: %w", err)
	}
	return nil
}

// owe queues an error reply for the writer.
func (r *relay) owe(o owed) error {
	r.mu.Lock()
	n := len(r.owing)
	if n < maxPendErr {
		r.owing = append(r.owing, o)
	}
	r.mu.Unlock()
	if n >= maxPendErr {
		return fmt.Errorf("client: %d refused calls whose errors it has not read", n)
	}
	r.poke()
	return nil
}

func (r *relay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// frame is what the bus sent, for the client: a message or an
// authentication line.
type frame struct {
	b     []byte
	fds   []int
	hello bool // the reply to the client's Hello: refusals may be answered after it
}

// fromBus reads the bus's authentication lines, then its messages, and
// hands them to the writer.
func (r *relay) fromBus(w *wire, frames chan<- frame, quit <-chan struct{}) error {
	defer close(frames)
	put := func(f frame) error {
		select {
		case frames <- f:
			return nil
		case <-quit:
			closeFDs(f.fds)
			return errors.New("bus: relay closed")
		}
	}
	for {
		if err := w.fill(1); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("bus: %w", err)
		}
		// The bus answers in lines until the client's BEGIN; its
		// messages then start with 'l' or 'B', which no line of a
		// server's (OK, REJECTED, DATA, ERROR, AGREE_UNIX_FD) does.
		if c := w.buf[w.r]; r.begun.Load() && (c == 'l' || c == 'B') {
			break
		}
		l, err := w.line()
		if err != nil {
			return fmt.Errorf("bus: %w", err)
		}
		if err := put(frame{b: bytes.Clone(l)}); err != nil {
			return err
		}
	}
	for {
		msg, h, fds, err := w.message()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("bus: %w", err)
		}
		hello := r.d.learn(&h, msg, r.hello.Load())
		if err := put(frame{b: bytes.Clone(msg), fds: fds, hello: hello}); err != nil {
			return err
		}
	}
}

// toClient writes what the bus sent, and the error replies of refused
// calls once the client may read them: after the reply to its Hello
// (sd-bus takes any other first message for a broken bus), or at once on
// a peer-to-peer connection.
func (r *relay) toClient(frames <-chan frame) error {
	ready := false
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				if ready || r.peer.Load() {
					return r.flush()
				}
				return nil
			}
			err := send(r.client, f.b, f.fds)
			closeFDs(f.fds)
			if err != nil {
				return fmt.Errorf("write client: %w", err)
			}
			ready = ready || f.hello
		case <-r.wake:
		}
		if ready || r.peer.Load() {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
}

// flush writes the error replies owed.
func (r *relay) flush() error {
	r.mu.Lock()
	owe := r.owing
	r.owing = nil
	r.mu.Unlock()
	dest := r.d.uniqueName()
	for _, o := range owe {
		if err := send(r.client, r.errorReply(o, dest), nil); err != nil {
			return fmt.Errorf("write client: %w", err)
		}
	}
	return nil
}

// errorReply is the AccessDenied error answering a refused call: from the
// name the call was sent to, to the client's unique name, with paddock's
// message. Its serial is the relay's own, counted down from the top of
// the range: a message's serial is its sender's, unique only among that
// sender's messages, and clients match an error to its call by
// REPLY_SERIAL alone; the bus's own messages count up from 1.
func (r *relay) errorReply(o owed, dest string) []byte {
	r.serial++
	fields := []field{
		{code: dbuswire.FieldReplySerial, typ: 'u', u: o.serial},
		{code: dbuswire.FieldErrorName, typ: 's', s: errAccessDenied},
	}
	if dest != "" {
		fields = append(fields, field{code: dbuswire.FieldDestination, typ: 's', s: dest})
	}
	if o.sender != "" {
		fields = append(fields, field{code: dbuswire.FieldSender, typ: 's', s: o.sender})
	}
	fields = append(fields, field{code: dbuswire.FieldSignature, typ: 'g', s: "s"})
	var e encoder
	e.str(o.text)
	return encodeMessage(dbuswire.TypeError, dbuswire.FlagNoReplyExpected, ^uint32(0)-r.serial+1, fields, e.b)
}
