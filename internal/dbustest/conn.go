package dbustest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// maxRecvFDs is how many descriptors one read takes: the kernel's
// SCM_MAX_FD, what one sendmsg may carry.
const maxRecvFDs = 253

// Conn is one D-Bus connection: a client's, or a service's. Reads are
// the caller's to serialise (one reader); sends may come from any
// goroutine.
type Conn struct {
	c *net.UnixConn

	buf []byte // read and not yet taken: buf[r:]
	r   int
	fds []int // received and not yet given to a message

	wmu    sync.Mutex
	serial uint32
}

// Dial connects to the bus whose socket is path, authenticates and says
// Hello: the connection's unique name is what Hello returns.
func Dial(path string) (*Conn, string, error) {
	uc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, "", fmt.Errorf("dial the bus %s: %w", path, err)
	}
	c, err := New(uc)
	if err != nil {
		uc.Close()
		return nil, "", err
	}
	name, err := c.Hello()
	if err != nil {
		c.Close()
		return nil, "", err
	}
	return c, name, nil
}

// DialAddress is Dial of a bus address's first unix:path= entry (as in
// DBUS_SYSTEM_BUS_ADDRESS).
func DialAddress(addr string) (*Conn, string, error) {
	p := dbuswire.UnixPath(addr)
	if p == "" {
		return nil, "", fmt.Errorf("bus address %q has no unix:path= entry, the only kind this client dials", addr)
	}
	return Dial(p)
}

// New authenticates on c (EXTERNAL, as this process's uid, with unix
// descriptors) and returns the connection, which says no Hello: call
// Hello on a bus; a peer-to-peer connection (systemd's private socket)
// has none. The Conn owns c.
func New(c *net.UnixConn) (*Conn, error) {
	conn := &Conn{c: c}
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Getuid())))
	if err := conn.expect("\x00AUTH EXTERNAL "+uid+"\r\n", "OK "); err != nil {
		return nil, err
	}
	if err := conn.expect("NEGOTIATE_UNIX_FD\r\n", "AGREE_UNIX_FD"); err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("BEGIN\r\n")); err != nil {
		return nil, fmt.Errorf("D-Bus authentication: send BEGIN: %w", err)
	}
	return conn, nil
}

// UnixConn is the connection's socket, for a test that writes to it
// past the protocol or closes it.
func (c *Conn) UnixConn() *net.UnixConn { return c.c }

// Close closes the connection; a Read or Serve under way in another
// goroutine then ends (and closes the descriptors it held for no message).
func (c *Conn) Close() error {
	return c.c.Close()
}

// expect sends an authentication line and reads the answer, which must
// start with want.
func (c *Conn) expect(send, want string) error {
	if _, err := c.c.Write([]byte(send)); err != nil {
		return fmt.Errorf("D-Bus authentication: send %q: %w", send, err)
	}
	l, err := c.line()
	if err != nil {
		return fmt.Errorf("D-Bus authentication: the answer to %q: %w", send, err)
	}
	if !strings.HasPrefix(l, want) {
		return fmt.Errorf("D-Bus authentication: the answer to %q is %q, want %q", send, l, want)
	}
	return nil
}

// fill reads until n bytes are buffered.
func (c *Conn) fill(n int) error {
	for len(c.buf)-c.r < n {
		if c.r > 0 {
			c.buf = c.buf[:copy(c.buf, c.buf[c.r:])]
			c.r = 0
		}
		if cap(c.buf)-len(c.buf) < 4096 || cap(c.buf) < n {
			nb := make([]byte, len(c.buf), max(2*cap(c.buf), n, 8192))
			copy(nb, c.buf)
			c.buf = nb
		}
		oob := make([]byte, unix.CmsgSpace(maxRecvFDs*4))
		got, oobn, _, _, err := c.c.ReadMsgUnix(c.buf[len(c.buf):cap(c.buf)], oob)
		if oobn > 0 {
			if ferr := c.takeRights(oob[:oobn]); ferr != nil && err == nil {
				err = ferr
			}
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if got == 0 {
			return io.EOF
		}
		c.buf = c.buf[:len(c.buf)+got]
	}
	return nil
}

// takeRights queues the descriptors of SCM_RIGHTS messages.
func (c *Conn) takeRights(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("parse control messages: %w", err)
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		c.fds = append(c.fds, fds...)
	}
	return nil
}

// line reads one authentication line, up to its \r\n.
func (c *Conn) line() (string, error) {
	for {
		if i := bytes.Index(c.buf[c.r:], []byte("\r\n")); i >= 0 {
			l := string(c.buf[c.r : c.r+i])
			c.r += i + 2
			return l, nil
		}
		if len(c.buf)-c.r > 16384 {
			return "", errors.New("an authentication line over 16384 bytes")
		}
		if err := c.fill(len(c.buf) - c.r + 1); err != nil {
			return "", err
		}
	}
}

// Read returns the next message, with the descriptors its UNIX_FDS field
// claims (the caller closes them). io.EOF: the peer closed.
func (c *Conn) Read() (*Message, error) {
	m, err := c.read()
	if err != nil {
		// The connection is over: no message will claim them.
		closeFDs(c.fds)
		c.fds = nil
	}
	return m, err
}

func (c *Conn) read() (*Message, error) {
	if err := c.fill(dbuswire.FixedLen); err != nil {
		return nil, err
	}
	n, err := dbuswire.MessageLen(c.buf[c.r : c.r+dbuswire.FixedLen])
	if err != nil {
		return nil, fmt.Errorf("read a message: %w", err)
	}
	if err := c.fill(n); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read a message of %d bytes: %w", n, err)
	}
	m, err := Decode(c.buf[c.r : c.r+n])
	c.r += n
	if err != nil {
		return nil, fmt.Errorf("read a message: %w", err)
	}
	if int(m.UnixFDs) > len(c.fds) {
		return nil, fmt.Errorf("read %s: it claims %d descriptors, %d came", m.describe(), m.UnixFDs, len(c.fds))
	}
	m.FDs = append([]int(nil), c.fds[:m.UnixFDs]...)
	c.fds = c.fds[m.UnixFDs:]
	return m, nil
}

// Send sends m with its descriptors, setting its Serial to the
// connection's next, and returns the serial.
func (c *Conn) Send(m *Message) (uint32, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.serial++
	m.Serial = c.serial
	b, err := m.Encode()
	if err != nil {
		return 0, err
	}
	if len(m.FDs) > maxRecvFDs {
		return 0, fmt.Errorf("send %s: %d descriptors, over the %d one sendmsg carries", m.describe(), len(m.FDs), maxRecvFDs)
	}
	var oob []byte
	if len(m.FDs) > 0 {
		oob = unix.UnixRights(m.FDs...)
	}
	// The descriptors go with the message's first bytes, as dbus-daemon
	// sends them; a stream socket may take the rest in more writes.
	n, _, err := c.c.WriteMsgUnix(b, oob, nil)
	if err == nil && n < len(b) {
		_, err = c.c.Write(b[n:])
	}
	if err != nil {
		return 0, fmt.Errorf("send %s: %w", m.describe(), err)
	}
	return m.Serial, nil
}

// Reply reads until the reply (a method return or an error) to the call
// whose serial is serial and returns it, passing over signals (their
// descriptors closed); any other message first is an error.
func (c *Conn) Reply(serial uint32) (*Message, error) {
	for {
		m, err := c.Read()
		if err != nil {
			return nil, fmt.Errorf("waiting for the reply to call %d: %w", serial, err)
		}
		if m.Type == TypeSignal {
			closeFDs(m.FDs)
			continue
		}
		if (m.Type != TypeMethodReturn && m.Type != TypeError) || m.ReplySerial != serial {
			closeFDs(m.FDs)
			return nil, fmt.Errorf("waiting for the reply to call %d, got %s (serial %d, reply to %d)", serial, m.describe(), m.Serial, m.ReplySerial)
		}
		return m, nil
	}
}

// Call sends the call m and returns its reply: a method return, or an
// error reply (m.Err says which).
func (c *Conn) Call(m *Message) (*Message, error) {
	serial, err := c.Send(m)
	if err != nil {
		return nil, err
	}
	return c.Reply(serial)
}

// Hello says Hello to the bus and returns the connection's unique name.
func (c *Conn) Hello() (string, error) {
	r, err := c.Call(MethodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", ""))
	if err != nil {
		return "", fmt.Errorf("Hello: %w", err)
	}
	if err := r.Err(); err != nil {
		return "", fmt.Errorf("Hello: %w", err)
	}
	name, ok := firstString(r)
	if !ok {
		return "", fmt.Errorf("Hello: a reply of signature %q, want s", r.Signature)
	}
	return name, nil
}

// RequestName makes the connection the primary owner of name, or fails.
func (c *Conn) RequestName(name string) error {
	const doNotQueue, primaryOwner = 4, 1
	r, err := c.Call(MethodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", name, doNotQueue))
	if err != nil {
		return fmt.Errorf("RequestName %s: %w", name, err)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("RequestName %s: %w", name, err)
	}
	if len(r.Body) != 1 || r.Body[0] != uint32(primaryOwner) {
		return fmt.Errorf("RequestName %s: answered %v, want %d (the primary owner)", name, r.Body, primaryOwner)
	}
	return nil
}

// Handler answers a method call for Serve: a reply built by Return or
// ErrorReply, with any descriptors to send. Serve closes the call's
// descriptors after it returns, and the reply's once sent.
type Handler func(call *Message) *Message

// Serve answers each method call with what h returns (nothing to a call
// sent with FlagNoReplyExpected), passing over every other message, until
// the connection ends: nil when the peer closed it.
func (c *Conn) Serve(h Handler) error {
	for {
		m, err := c.Read()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if m.Type != TypeMethodCall {
			closeFDs(m.FDs)
			continue
		}
		r := h(m)
		closeFDs(m.FDs)
		if m.Flags&FlagNoReplyExpected != 0 || r == nil {
			if r != nil {
				closeFDs(r.FDs)
			}
			continue
		}
		r.ReplySerial, r.Destination, r.Flags = m.Serial, m.Sender, r.Flags|FlagNoReplyExpected
		_, err = c.Send(r)
		closeFDs(r.FDs)
		if err != nil {
			return fmt.Errorf("serve: the reply to %s: %w", m.describe(), err)
		}
	}
}

// firstString is a message's first argument, when it is a string.
func firstString(m *Message) (string, bool) {
	if len(m.Body) == 0 {
		return "", false
	}
	s, ok := m.Body[0].(string)
	return s, ok
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
