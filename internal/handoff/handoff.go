// Package handoff is the protocol between the supervisor and the agent's
// init (the re-executed paddock binary that installs the filter and then
// execs the agent), over a SOCK_SEQPACKET socket pair: one typed message a
// packet, so that neither side parses raw bytes of its own. Like runc's
// sync protocol between `runc init` and its parent, each step is a message
// the other side waits for:
//
//	init -> supervisor: Listener (the seccomp listener, as SCM_RIGHTS)
//	                 or Trace (this thread's id and why: trace it),
//	                 each with why the init is not behind its Landlock
//	                 wall ("" when it is)
//	supervisor -> init: GoAhead (exec the agent now)
package handoff

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Kind names a message.
type Kind byte

// The messages, in the order the protocol sends them.
const (
	// Listener carries the init's seccomp listener (Msg.Fd).
	Listener Kind = 'L'
	// Trace asks the supervisor to seize thread Msg.Tid for the ptrace
	// backend; Msg.Why says why no listener was handed over.
	Trace Kind = 'T'
	// GoAhead lets the init exec the agent.
	GoAhead Kind = 'G'
)

func (k Kind) String() string {
	switch k {
	case Listener:
		return "listener"
	case Trace:
		return "trace request"
	case GoAhead:
		return "go-ahead"
	}
	return fmt.Sprintf("unknown message %q", byte(k))
}

// Msg is one message. Fd is set for Listener (received descriptors are
// close-on-exec), Tid and Why for Trace, Wall for both.
type Msg struct {
	Kind Kind
	Fd   int
	Tid  int
	Why  string
	// Wall is why the init is not in its Landlock domain, which the agent
	// inherits ("": it is), so that the supervisor says what is up.
	Wall string
}

// maxMsg bounds a message: a kind, a thread id and two reasons.
const maxMsg = 1024

// maxWhy bounds each reason, so that both fit.
const maxWhy = (maxMsg - 7) / 2

// ErrClosed is Recv's error when the other side closed the socket (the
// init died, or the supervisor went away) before sending.
var ErrClosed = errors.New("the other side closed the handoff socket")

// Send sends m on socket fd.
func Send(fd int, m Msg) error {
	b := []byte{byte(m.Kind)}
	var oob []byte
	switch m.Kind {
	case Listener, Trace:
		// kind, tid (4 bytes), len(why) (2 bytes), why, wall
		if m.Kind == Listener {
			oob = unix.UnixRights(m.Fd)
		}
		why, wall := bounded(m.Why), bounded(m.Wall)
		b = binary.LittleEndian.AppendUint32(b, uint32(m.Tid))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(why)))
		b = append(append(b, why...), wall...)
	case GoAhead:
	default:
		return fmt.Errorf("handoff: send %v", m.Kind)
	}
	if err := unix.Sendmsg(fd, b, oob, nil, 0); err != nil {
		return fmt.Errorf("handoff: send %v: %w", m.Kind, err)
	}
	return nil
}

// Recv receives one message from socket fd, retrying on EINTR. A message
// that is not of the protocol is an error naming what came; a descriptor
// received with it is closed then.
func Recv(fd int) (Msg, error) {
	buf := make([]byte, maxMsg)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return Msg{}, fmt.Errorf("handoff: receive: %w", err)
	}
	if n == 0 {
		return Msg{}, ErrClosed
	}
	fds, ferr := rights(oob[:oobn])
	m := Msg{Kind: Kind(buf[0]), Fd: -1}
	switch {
	case (m.Kind == Listener && ferr == nil && len(fds) == 1 || m.Kind == Trace && len(fds) == 0) && n >= 7 &&
		7+int(binary.LittleEndian.Uint16(buf[5:7])) <= n:
		if m.Kind == Listener {
			m.Fd = fds[0]
		}
		w := 7 + int(binary.LittleEndian.Uint16(buf[5:7]))
		m.Tid, m.Why, m.Wall = int(binary.LittleEndian.Uint32(buf[1:5])), string(buf[7:w]), string(buf[w:n])
		return m, nil
	case m.Kind == GoAhead && n == 1 && len(fds) == 0:
		return m, nil
	}
	for _, f := range fds {
		unix.Close(f)
	}
	if ferr != nil {
		return Msg{}, fmt.Errorf("handoff: %v with unreadable descriptors: %w", m.Kind, ferr)
	}
	return Msg{}, fmt.Errorf("handoff: malformed %v (%d bytes, %d descriptors)", m.Kind, n, len(fds))
}

// bounded cuts a reason to maxWhy bytes.
func bounded(s string) string {
	if len(s) > maxWhy {
		return s[:maxWhy]
	}
	return s
}

// rights returns the descriptors an SCM_RIGHTS control message carried.
func rights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}
