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
	"net"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/peer"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Bounds on one handoff message: the runtime sends its state in a single
// sendmsg, with one descriptor (runc and crun send the seccomp listener
// alone); anything larger is refused unread.
const (
	MaxStateSize = 64 << 10
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
	// Peer is who sent it (SO_PEERCRED): root, with its pid in this
	// agent's PID namespace (0 when it has none there).
	Peer unix.Ucred
}

// ParseState decodes the runtime's message and checks it against the nfds
// descriptors that came with it: valid JSON of a ContainerProcessState, a
// positive pid, a container id, one name per descriptor, no name twice,
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
	case st.Pid <= 0:
		return st, -1, fmt.Errorf("container process state: pid %d: want the container process's pid (> 0)", st.Pid)
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
// the peer must be root (SO_PEERCRED), the message one bounded sendmsg
// with at most MaxFds descriptors, the state valid (ParseState), and the
// descriptor it names seccompFd a seccomp listener. Every descriptor
// received but the listener is closed, all of them on an error.
func Receive(conn *net.UnixConn) (Handoff, error) {
	cred, err := peer.Cred(conn)
	if err != nil {
		return Handoff{}, fmt.Errorf("handoff: %w", err)
	}
	if cred.Uid != 0 {
		return Handoff{}, fmt.Errorf("handoff from pid %d, uid %d: only root (the container runtime) may hand over a listener", cred.Pid, cred.Uid)
	}
	buf := make([]byte, MaxStateSize+1)
	oob := make([]byte, unix.CmsgSpace(MaxFds*4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return Handoff{}, fmt.Errorf("handoff: read: %w", err)
	}
	fds, err := parseRights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err != nil {
		closeAll()
		return Handoff{}, fmt.Errorf("handoff: %w", err)
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeAll()
		return Handoff{}, fmt.Errorf("handoff: message over %d bytes or %d descriptors", MaxStateSize, MaxFds)
	}
	if len(fds) == 0 && isTakeoverRequest(buf[:n]) {
		return Handoff{Takeover: true, Listener: -1, Peer: *cred}, nil
	}
	st, index, err := ParseState(buf[:n], len(fds))
	if err != nil {
		closeAll()
		return Handoff{}, fmt.Errorf("handoff from pid %d: %w", cred.Pid, err)
	}
	if err := isListener(fds[index]); err != nil {
		closeAll()
		return Handoff{}, fmt.Errorf("handoff from pid %d: %s: %w", cred.Pid, specs.SeccompFdName, err)
	}
	for i, fd := range fds {
		if i != index {
			unix.Close(fd)
		}
	}
	return Handoff{State: st, Listener: fds[index], Peer: *cred}, nil
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
