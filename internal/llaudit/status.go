package llaudit

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// statusLen is the size of the head of struct audit_status
// (include/uapi/linux/audit.h) that every kernel since 2.6 knows: mask,
// enabled, failure, pid, rate_limit, backlog_limit, lost, backlog, each a
// __u32.
const statusLen = 32

// Status asks the kernel whether auditing is on (AUDIT_GET), which needs
// CAP_AUDIT_CONTROL and the initial PID namespace (EPERM otherwise), and
// which process is its audit daemon (0: none, and the kernel then also
// prints each record to its log, rate-limited).
func Status() (enabled bool, daemon int, err error) {
	reply, err := request(unix.AUDIT_GET, nil, false)
	if err != nil {
		return false, 0, err
	}
	if len(reply) < statusLen {
		return false, 0, fmt.Errorf("llaudit: AUDIT_GET: a reply of %d bytes", len(reply))
	}
	return binary.NativeEndian.Uint32(reply[4:8]) != 0, int(binary.NativeEndian.Uint32(reply[12:16])), nil
}

// SetEnabled turns auditing on or off (AUDIT_SET), as auditctl -e does;
// paddock itself never calls it. Turned on once, auditing leaves every
// process forked afterwards with an audit context until reboot, even once
// it is off again. EPERM where it is locked (auditctl -e 2).
func SetEnabled(on bool) error {
	payload := make([]byte, statusLen)
	binary.NativeEndian.PutUint32(payload[0:4], unix.AUDIT_STATUS_ENABLED)
	if on {
		binary.NativeEndian.PutUint32(payload[4:8], 1)
	}
	_, err := request(unix.AUDIT_SET, payload, true)
	return err
}

// request sends one audit request on a socket of its own and returns the
// reply of its type (or nil once acknowledged, with ack).
func request(typ uint16, payload []byte, ack bool) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) {
		return nil, fmt.Errorf("llaudit: %w", ErrNoAudit)
	}
	if err != nil {
		return nil, fmt.Errorf("llaudit: socket(NETLINK_AUDIT): %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2}); err != nil {
		return nil, fmt.Errorf("llaudit: SO_RCVTIMEO: %w", err)
	}
	flags := uint16(unix.NLM_F_REQUEST)
	if ack {
		flags |= unix.NLM_F_ACK
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], typ)
	binary.NativeEndian.PutUint16(msg[6:8], flags)
	// The kernel sends AUDIT_GET's reply from a thread of its own, maybe
	// after this socket has closed and a later one took its port id: a
	// reply is this request's only if it carries its sequence number.
	seq := nextSeq()
	binary.NativeEndian.PutUint32(msg[8:12], seq)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("llaudit: send audit request %d: %w", typ, err)
	}
	buf := make([]byte, 8192)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("llaudit: audit request %d: %w", typ, err)
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 || n < unix.NLMSG_HDRLEN {
			continue
		}
		l := min(int(binary.NativeEndian.Uint32(buf[0:4])), n)
		if binary.NativeEndian.Uint32(buf[8:12]) != seq {
			continue
		}
		switch binary.NativeEndian.Uint16(buf[4:6]) {
		case unix.NLMSG_ERROR:
			if l < unix.NLMSG_HDRLEN+4 {
				continue
			}
			if errno := -int32(binary.NativeEndian.Uint32(buf[unix.NLMSG_HDRLEN:])); errno != 0 {
				return nil, fmt.Errorf("llaudit: audit request %d: %w", typ, unix.Errno(errno))
			}
			if ack {
				return nil, nil
			}
		case typ:
			return append([]byte(nil), buf[unix.NLMSG_HDRLEN:l]...), nil
		}
	}
	return nil, fmt.Errorf("llaudit: audit request %d: no reply", typ)
}

// nextSeq is a sequence number for a request: random, so that no reply to
// an earlier request (of this process or of another that had the same
// port id) passes for its own.
func nextSeq() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.NativeEndian.Uint32(b[:]) | 1
}
