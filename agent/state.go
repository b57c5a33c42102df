// Package agent holds fleet mode's receiving end: `paddock agent` is handed
// each container's seccomp listener by the OCI runtime (runc, crun) over a
// unix socket named in the container's seccomp profile (listenerPath),
// with the container's state, and serves it with the same policy core as
// `paddock run`. This file reads and checks what the runtime sends; a
// malformed or hostile message is an error, never a crash.
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/peer"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Bounds on one handoff message: the runtime sends its state with one
// descriptor (runc and crun send the seccomp listener alone). The state
// holds the container's annotations, which Kubernetes bounds at 256 KiB a
// pod; a message over MaxStateSize is refused.
const (
	MaxStateSize = 1 << 20
	MaxFds       = 8
)

// Handoff is one connection's message: the container process state and
// the seccomp listener it names (owned by the receiver from then on).
type Handoff struct {
	State    specs.ContainerProcessState
	Listener int
	// Takeover marks a request from a new agent for this one's listeners
	// (TakeOver): no state, no descriptor.
	Takeover bool
	// Peer is who sent it (SO_PEERCRED): the agent's uid, with its pid in this
	// agent's PID namespace (0 when it has none there).
	Peer unix.Ucred
}

// ParseState decodes the runtime's message and checks it against the nfds
// descriptors that came with it: valid JSON of a ContainerProcessState, a
// pid of 0 or more (crun's exec sends 0: Server.join finds the session by
// its listener), a container id, one name per descriptor, no name twice,
// and a seccompFd among them, whose index it returns.
func ParseState(msg []byte, nfds int) (specs.ContainerProcessState, int, error) {
	var st specs.ContainerProcessState
	if len(msg) == 0 {
		return st, -1, errors.New("empty message: want the container process state as JSON")
	}
	if len(msg) > MaxStateSize {
		return st, -1, fmt.Errorf("message of %d bytes: at most %d accepted", len(msg), MaxStateSize)
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if err := dec.Decode(&st); err != nil {
		return st, -1, fmt.Errorf("container process state: %w", err)
	}
	if dec.More() {
		return st, -1, errors.New("container process state: more than one JSON value")
	}
	switch {
	case st.Pid < 0:
		return st, -1, fmt.Errorf("container process state: pid %d: want the container process's pid (> 0; 0 where the runtime did not say, as crun's exec)", st.Pid)
	case st.State.ID == "":
		return st, -1, errors.New("container process state: no container id (state.id)")
	case len(st.Fds) != nfds:
		return st, -1, fmt.Errorf("container process state names %d descriptors (fds), %d came with it", len(st.Fds), nfds)
	}
	index := -1
	seen := make(map[string]bool, len(st.Fds))
	for i, name := range st.Fds {
		if seen[name] {
			return st, -1, fmt.Errorf("container process state: descriptor name %q given twice", name)
		}
		seen[name] = true
		if name == specs.SeccompFdName {
			index = i
		}
	}
	if index < 0 {
		return st, -1, fmt.Errorf("container process state: no %q among the descriptors %q", specs.SeccompFdName, st.Fds)
	}
	return st, index, nil
}

// Receive reads one handoff from conn, a connection the runtime opened:
// the peer must have uid owner (SO_PEERCRED, which names a peer in a user
// namespace by its uid in the receiver's: a rootless runtime's root is its
// user), root for a node's agent, the user for a per-user agent of a
// rootless engine, the message one JSON value of at
// most MaxStateSize bytes, read within conn's deadline in as many parts as
// the kernel splits it into (a stream socket carries about 32 KiB a part:
// a state with a large annotation comes in several), its descriptors (at
// most MaxFds) with the first part, the state valid (ParseState), and the
// descriptor it names seccompFd a seccomp listener.
//
// The message ends where its JSON value does, not at EOF: crun's helper
// sends from a descriptor table the container's process shares, which
// keeps the connection open until it execs, and a process that made a
// trapped call before that would wait on the agent for ever.
//
// Every descriptor received but the listener is closed. On an error, the
// Handoff's Listener is still the seccomp listener that came with the
// message, if one did (-1 if none): the runtime, or the container's
// process, may hold another copy and wait on it, so the caller must keep
// it and answer its calls (Server.refuse), never just close it.
func Receive(conn *net.UnixConn, owner uint32) (Handoff, error) {
	cred, err := peer.Cred(conn)
	if err != nil {
		return Handoff{Listener: -1}, fmt.Errorf("handoff: %w", err)
	}
	if cred.Uid != owner {
		return Handoff{Listener: -1}, fmt.Errorf("handoff from pid %d, uid %d: only uid %d, the agent's own, may hand over a listener (the container runtime: root for a node's agent, the user for a per-user agent of a rootless engine)", cred.Pid, cred.Uid, owner)
	}
	msg, fds, err := readValue(conn, MaxStateSize, MaxFds)
	// keep returns the listener among fds (the one at index, else the
	// first that is one) with err, closing the rest.
	keep := func(index int, err error) (Handoff, error) {
		h := Handoff{Listener: -1, Peer: *cred}
		if index < 0 || index >= len(fds) || isListener(fds[index]) != nil {
			index = -1
			for i, fd := range fds {
				if isListener(fd) == nil {
					index = i
					break
				}
			}
		}
		for i, fd := range fds {
			if i == index {
				h.Listener = fd
			} else {
				unix.Close(fd)
			}
		}
		return h, err
	}
	if err != nil {
		return keep(-1, fmt.Errorf("handoff from pid %d: %w", cred.Pid, err))
	}
	if len(fds) == 0 && isTakeoverRequest(msg) {
		return Handoff{Takeover: true, Listener: -1, Peer: *cred}, nil
	}
	st, index, err := ParseState(msg, len(fds))
	if err != nil {
		h, err := keep(-1, fmt.Errorf("handoff from pid %d: %w", cred.Pid, err))
		h.State = st
		return h, err
	}
	if err := isListener(fds[index]); err != nil {
		h, err := keep(-1, fmt.Errorf("handoff from pid %d: %s: %w", cred.Pid, specs.SeccompFdName, err))
		h.State = st
		return h, err
	}
	h, _ := keep(index, nil)
	h.State = st
	return h, nil
}

// readValue reads one JSON value from conn, within its deadline: the first
// part with its descriptors (at most maxFds), then more parts until the
// value is whole, at most max bytes in all. Descriptors that come with a
// later part are closed, and make the message an error (the runtime sends
// them with its first write); so does anything after the value but
// whitespace, and an EOF before its end. On an error, the descriptors of
// the first part are returned too, for the caller to close or keep.
func readValue(conn *net.UnixConn, max, maxFds int) ([]byte, []int, error) {
	buf := make([]byte, 0, 64<<10)
	part := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(maxFds*4))
	var fds []int
	for first := true; ; first = false {
		n, oobn, flags, _, err := conn.ReadMsgUnix(part, oob)
		got, rerr := parseRights(oob[:oobn])
		if first {
			fds = got
		} else {
			for _, fd := range got {
				unix.Close(fd)
			}
			if len(got) > 0 {
				return nil, fds, fmt.Errorf("descriptors came after the first %d bytes: want them with the message's first part", len(buf))
			}
		}
		if rerr != nil {
			return nil, fds, rerr
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return nil, fds, fmt.Errorf("more than %d descriptors", maxFds)
		}
		if len(buf)+n > max {
			return nil, fds, fmt.Errorf("message over %d bytes: at most %d accepted", len(buf)+n, max)
		}
		buf = append(buf, part[:n]...)
		if n > 0 {
			whole, err := wholeValue(buf)
			if err != nil {
				return nil, fds, err
			}
			if whole {
				return buf, fds, nil
			}
		}
		switch {
		case err == nil && n == 0, errors.Is(err, io.EOF):
			if len(buf) == 0 {
				return nil, fds, errors.New("empty message: want the container process state as JSON")
			}
			return nil, fds, fmt.Errorf("the message ended after %d bytes, inside its JSON value", len(buf))
		case err != nil:
			return nil, fds, fmt.Errorf("read after %d bytes: %w", len(buf), err)
		}
	}
}

// wholeValue reports whether msg holds a whole JSON value (and nothing
// after it but whitespace), false while it is a beginning of one, and an
// error when it can be neither.
func wholeValue(msg []byte) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("container process state: %w", err)
	}
	if len(bytes.TrimSpace(msg[dec.InputOffset():])) > 0 {
		return false, errors.New("container process state: more than one JSON value")
	}
	return true, nil
}

// parseRights returns the descriptors of the SCM_RIGHTS messages in oob.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		rights, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, fmt.Errorf("SCM_RIGHTS: %w", err)
		}
		for _, fd := range rights {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, rights...)
	}
	return fds, nil
}

// isListener checks that fd is a seccomp user-notification listener, the
// anonymous inode the kernel names "[seccomp notify]".
func isListener(fd int) error {
	target, err := os.Readlink(procfs.FdPath(fd))
	if err != nil {
		return fmt.Errorf("descriptor %d: %w", fd, err)
	}
	if target != "anon_inode:seccomp notify" {
		return fmt.Errorf("descriptor %d is %s, not a seccomp listener", fd, target)
	}
	return nil
}
