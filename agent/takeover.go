package agent

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Upgrades without breaking running containers: a new agent started with
// --takeover connects to the running one's socket (as root, like a
// runtime) and asks for everything it serves. The running agent stops its
// event loop (calls that arrive meanwhile wait in the kernel's queue),
// sends each container's description with its listeners, at most MaxFds
// per message (SCM_RIGHTS), then its own listening socket, so that the
// runtime's connections never find the path without a listener, and exits.
// The new agent serves the same listeners and socket from then on.
//
// Nothing is handed over before the new agent has proved that it may take
// descriptors out of the old one (challenge): the kernel lets a process
// pidfd_getfd from another only when it may ptrace-attach it (root with
// CAP_SYS_PTRACE, or the same credentials and capabilities), which is
// what it would take to steal the listeners without asking. A root process
// that can reach the socket but not the old agent (a container's root
// without CAP_SYS_PTRACE, say) is refused, and the old agent goes on
// serving. docs/fleet.md says why this and not the binary's identity.

// takeoverRequest is the message that asks for a takeover.
const takeoverRequest = `{"paddockTakeover":1}`

// isTakeoverRequest reports whether msg is a takeover request.
func isTakeoverRequest(msg []byte) bool {
	return bytes.Equal(bytes.TrimSpace(msg), []byte(takeoverRequest))
}

// challenge is the old agent's first answer to a takeover request: the
// number of a descriptor in its own table, one end of a socket pair whose
// other end holds proofSize random bytes. The new agent, which asked for
// the sender's credentials (SO_PASSCRED: the kernel gives the old agent's
// pid in the new agent's PID namespace), takes a copy of that descriptor
// (pidfd_getfd), reads the bytes and sends them back as proof. Neither
// /proc/PID/fd nor fdinfo shows what waits in a socket, so only a process
// the kernel lets take the old agent's descriptors can answer. Nothing is
// sent to the peer with it: no descriptor goes to a peer not yet proved.
type challenge struct {
	Fd int `json:"paddockTakeoverChallenge"`
}

// proof is the new agent's answer to a challenge: the bytes, in hex.
type proof struct {
	Proof string `json:"paddockTakeoverProof"`
}

// proofSize is how many random bytes a challenge holds.
const proofSize = 32

// challengePeer asks the peer on conn to prove that it may take
// descriptors out of this process, and checks its answer (read within
// conn's deadline). Nothing else is sent before it succeeds.
func challengePeer(conn *net.UnixConn) error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("challenge: socketpair: %w", err)
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	secret := make([]byte, proofSize)
	defer clear(secret)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	if _, err := unix.Write(pair[0], secret); err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	msg, err := json.Marshal(challenge{Fd: pair[1]})
	if err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("challenge: send: %w", err)
	}
	buf := make([]byte, 1024)
	n, err := conn.Read(buf)
	if err != nil {
		return fmt.Errorf("challenge: no answer: %w", err)
	}
	var p proof
	if err := json.Unmarshal(buf[:n], &p); err != nil {
		return fmt.Errorf("challenge: answer: %w", err)
	}
	got, err := hex.DecodeString(p.Proof)
	if err != nil || subtle.ConstantTimeCompare(got, secret) != 1 {
		return errors.New("challenge: wrong proof (the peer could not take a descriptor out of this agent: it lacks the privilege to ptrace it)")
	}
	return nil
}

// answerChallenge proves to the old agent, pid (the sender of the
// challenge, as the kernel named it), that this process may take its
// descriptors: a copy of its descriptor c.Fd, read without waiting.
func answerChallenge(conn *net.UnixConn, c challenge, pid int) error {
	if pid <= 0 {
		return errors.New("challenge: the old agent is in no PID namespace this one sees (run both with the node's, hostPID)")
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("challenge: pidfd_open(%d), the old agent: %w", pid, err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, c.Fd, 0)
	if err != nil {
		return fmt.Errorf("challenge: pidfd_getfd of the old agent's descriptor %d: %w (a takeover needs root with CAP_SYS_PTRACE)", c.Fd, err)
	}
	defer unix.Close(fd)
	secret := make([]byte, proofSize)
	defer clear(secret)
	n, _, err := unix.Recvfrom(fd, secret, unix.MSG_DONTWAIT)
	if err != nil || n != proofSize {
		return fmt.Errorf("challenge: read %d of %d bytes: %v", n, proofSize, err)
	}
	msg, err := json.Marshal(proof{Proof: hex.EncodeToString(secret)})
	if err != nil {
		return fmt.Errorf("challenge: %w", err)
	}
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("challenge: send the proof: %w", err)
	}
	return nil
}

// containerRecord is a container as one agent hands it to the next.
type containerRecord struct {
	ID          string            `json:"id"`
	Bundle      string            `json:"bundle,omitempty"`
	Metadata    string            `json:"metadata,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	PidNS       uint64            `json:"pidns"`
	Shared      bool              `json:"shared,omitempty"`
	Cgroup      string            `json:"cgroup"`
	// ByDescent is container.byDescent.
	ByDescent bool           `json:"by_descent,omitempty"`
	Lifelines map[int]uint64 `json:"lifelines"`
	// Key names the container in the batches' Listeners, unique in one
	// takeover: two containers can have the same id (a restarted one,
	// while the old one's listener is still open). An older agent sends
	// none: its Listeners name ids.
	Key string `json:"key,omitempty"`
	// Detached marks a container no new session may join: one a newer
	// container of the same id replaced, or a refused handoff's.
	Detached bool `json:"detached,omitempty"`
	// Refused is why its handoff was refused (container.refused).
	Refused string `json:"refused,omitempty"`
	// First, Shim and ShimPlaced: its first process, and whether that is
	// an init shim whose first child is placed (container.first).
	First      int  `json:"first,omitempty"`
	Shim       bool `json:"shim,omitempty"`
	ShimPlaced bool `json:"shimPlaced,omitempty"`
}

// batch is one message of a takeover: containers described (each once),
// the container of each descriptor that comes with it, and at the end the
// listening socket.
type batch struct {
	Containers []containerRecord `json:"containers,omitempty"`
	Listeners  []string          `json:"listeners,omitempty"`
	// Pending marks, for each of Listeners, a session whose first
	// process is not placed yet (container.pending).
	Pending []bool `json:"pending,omitempty"`
	Socket  bool   `json:"socket,omitempty"`
}

// handOver sends everything s serves to the new agent on conn, and its
// listening socket ln last. The event loop must be stopped.
func (s *Server) handOver(conn *net.UnixConn, ln *net.UnixListener) error {
	s.mu.Lock()
	type item struct {
		fd int
		c  *container
	}
	var items []item
	for fd, c := range s.byFd {
		items = append(items, item{fd, c})
	}
	s.mu.Unlock()
	keys := map[*container]string{}
	for len(items) > 0 {
		n := min(len(items), MaxFds)
		var b batch
		var fds []int
		for _, it := range items[:n] {
			key, sent := keys[it.c]
			if !sent {
				key = strconv.Itoa(len(keys))
				keys[it.c] = key
				r := it.c.record()
				r.Key = key
				s.mu.Lock()
				r.Detached = r.Refused != "" || s.byID[it.c.id] != it.c
				s.mu.Unlock()
				b.Containers = append(b.Containers, r)
			}
			b.Listeners = append(b.Listeners, key)
			it.c.mu.Lock()
			b.Pending = append(b.Pending, it.c.pending[it.fd])
			it.c.mu.Unlock()
			fds = append(fds, it.fd)
		}
		if err := sendBatch(conn, b, fds); err != nil {
			return err
		}
		items = items[n:]
	}
	raw, err := ln.SyscallConn()
	if err != nil {
		return fmt.Errorf("takeover: %w", err)
	}
	var sendErr error
	if err := raw.Control(func(fd uintptr) { sendErr = sendBatch(conn, batch{Socket: true}, []int{int(fd)}) }); err != nil {
		return fmt.Errorf("takeover: %w", err)
	}
	return sendErr
}

func sendBatch(conn *net.UnixConn, b batch, fds []int) error {
	msg, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("takeover: %w", err)
	}
	if len(msg) > MaxStateSize {
		return fmt.Errorf("takeover: a batch of %d bytes is over %d", len(msg), MaxStateSize)
	}
	// The socket is non-blocking under Go's poller: a large batch may go
	// in part, the descriptors with its first bytes; the rest follows.
	n, _, err := conn.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	if err == nil && n < len(msg) {
		_, err = conn.Write(msg[n:])
	}
	if err != nil {
		return fmt.Errorf("takeover: send: %w", err)
	}
	return nil
}

// record describes c for the next agent.
func (c *container) record() containerRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := make(map[int]uint64, len(c.lifelines))
	for k, v := range c.lifelines {
		l[k] = v
	}
	return containerRecord{ID: c.id, Bundle: c.bundle, Metadata: c.metadata, Annotations: c.annotations,
		PidNS: c.pidns, Shared: c.shared, Cgroup: c.cgroup, ByDescent: c.byDescent, Lifelines: l, Refused: c.refused,
		First: c.first, Shim: c.shim, ShimPlaced: c.shimPlaced}
}

// Taken is what TakeOver received: the listening socket and every
// container with its listeners, for Server.Serve to go on with.
type Taken struct {
	Listener *net.UnixListener
	// containers maps each container's key (containerRecord.Key, or its
	// id from an older agent) to it; detached names those no new session
	// may join.
	containers map[string]*container
	detached   map[*container]bool
	listeners  map[int]*container
}

// ErrNoAgent: nothing accepts on the socket a takeover was asked of.
var ErrNoAgent = errors.New("no agent accepts on it")

// TakeOver asks the agent serving socket for everything it serves and
// returns it once the whole of it has come, the listening socket last;
// the old agent stops serving then. An error wrapping ErrNoAgent means
// there is nothing to take over.
func TakeOver(socket string) (*Taken, error) {
	if err := checkSocket(socket); err != nil {
		return nil, err
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--takeover %s: %w (%w)", socket, ErrNoAgent, err)
	}
	defer conn.Close()
	// The kernel names the sender of each message (SCM_CREDENTIALS): the
	// challenge's is the old agent, whatever process listened first.
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("--takeover: %w", err)
	}
	var optErr error
	if err := raw.Control(func(fd uintptr) { optErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1) }); err != nil || optErr != nil {
		return nil, fmt.Errorf("--takeover: SO_PASSCRED: %w", errors.Join(err, optErr))
	}
	if _, err := conn.Write([]byte(takeoverRequest)); err != nil {
		return nil, fmt.Errorf("--takeover: %w", err)
	}
	t := &Taken{containers: map[string]*container{}, detached: map[*container]bool{}, listeners: map[int]*container{}}
	fail := func(err error) (*Taken, error) {
		t.Close()
		return nil, fmt.Errorf("--takeover: %w", err)
	}
	v := &valueStream{conn: conn}
	defer v.close()
	for {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		msg, err := v.next()
		if err != nil {
			return fail(fmt.Errorf("read: %w (the old agent ended before handing over its socket)", err))
		}
		var c struct {
			challenge
			batch
		}
		c.Fd = -1
		if err := json.Unmarshal(msg, &c); err != nil {
			return fail(err)
		}
		if c.Fd >= 0 {
			// The old agent asks for proof first (an agent of an older
			// release does not).
			if len(v.fds) != 0 {
				err = fmt.Errorf("a challenge came with %d descriptors, want none", len(v.fds))
			} else {
				err = answerChallenge(conn, c.challenge, v.pid)
			}
			if err != nil {
				return fail(err)
			}
			continue
		}
		b := c.batch
		want := len(b.Listeners)
		if b.Socket {
			want = 1
		}
		fds, err := v.take(want)
		if err != nil {
			return fail(err)
		}
		if b.Socket {
			f := os.NewFile(uintptr(fds[0]), "agent socket")
			l, err := net.FileListener(f)
			f.Close()
			if err != nil {
				return fail(fmt.Errorf("the listening socket: %w", err))
			}
			t.Listener = l.(*net.UnixListener)
			t.Listener.SetUnlinkOnClose(true)
			return t, nil
		}
		for _, r := range b.Containers {
			key := r.Key
			if key == "" {
				key = r.ID
			}
			c := &container{id: r.ID, bundle: r.Bundle, metadata: r.Metadata, annotations: r.Annotations,
				pidns: r.PidNS, shared: r.Shared, cgroup: r.Cgroup, byDescent: r.ByDescent, lifelines: r.Lifelines, hosts: map[int]int{}, refused: r.Refused,
				first: r.First, shim: r.Shim, shimPlaced: r.ShimPlaced}
			if c.lifelines == nil {
				c.lifelines = map[int]uint64{}
			}
			t.containers[key] = c
			if r.Detached || r.Refused != "" {
				t.detached[c] = true
			}
		}
		for i, id := range b.Listeners {
			c := t.containers[id]
			if c == nil || isListener(fds[i]) != nil {
				for _, fd := range fds[i:] {
					unix.Close(fd)
				}
				return fail(fmt.Errorf("descriptor %d of a batch: not a listener of a described container", i))
			}
			c.listeners++
			t.listeners[fds[i]] = c
			if i < len(b.Pending) && b.Pending[i] {
				if c.pending == nil {
					c.pending = map[int]bool{}
				}
				c.pending[fds[i]] = true
			}
		}
	}
}

// senderPid is the pid of the SCM_CREDENTIALS message in oob (0: none).
func senderPid(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_CREDENTIALS {
			if cred, err := unix.ParseUnixCredentials(&m); err == nil {
				return int(cred.Pid)
			}
		}
	}
	return 0
}

// Close releases what t holds (when it will not be served).
func (t *Taken) Close() {
	for fd := range t.listeners {
		unix.Close(fd)
	}
	if t.Listener != nil {
		t.Listener.Close()
	}
}

// valueStream reads the JSON values of a takeover one after another, and
// the descriptors that come with them in order: a batch of several
// containers with large annotations is split by the kernel into parts
// (about 32 KiB each on a stream socket), and one read may end inside a
// batch or hold the end of one and the beginning of the next.
type valueStream struct {
	conn *net.UnixConn
	buf  []byte
	fds  []int
	// pid is the sender's pid as the last read's SCM_CREDENTIALS named it
	// (0: none).
	pid int
}

// next returns the next whole JSON value, reading within conn's deadline;
// more than MaxStateSize bytes of one value is an error.
func (v *valueStream) next() ([]byte, error) {
	part := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(MaxFds*4)+unix.CmsgSpace(unix.SizeofUcred))
	for {
		if len(bytes.TrimSpace(v.buf)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(v.buf))
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == nil {
				v.buf = v.buf[dec.InputOffset():]
				return raw, nil
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("a batch: %w", err)
			}
		}
		if len(v.buf) > MaxStateSize {
			return nil, fmt.Errorf("a batch over %d bytes", MaxStateSize)
		}
		n, oobn, flags, _, err := v.conn.ReadMsgUnix(part, oob)
		if n == 0 && err == nil {
			err = io.EOF
		}
		if err != nil {
			return nil, err
		}
		fds, ferr := parseRights(oob[:oobn])
		v.fds = append(v.fds, fds...)
		if ferr == nil && flags&unix.MSG_CTRUNC != 0 {
			ferr = errors.New("more descriptors than a batch holds")
		}
		if ferr != nil {
			return nil, ferr
		}
		if p := senderPid(oob[:oobn]); p != 0 {
			v.pid = p
		}
		v.buf = append(v.buf, part[:n]...)
	}
}

// take returns the next n descriptors received, in order.
func (v *valueStream) take(n int) ([]int, error) {
	if n > len(v.fds) {
		return nil, fmt.Errorf("a batch names %d descriptors, %d came", n, len(v.fds))
	}
	fds := v.fds[:n:n]
	v.fds = v.fds[n:]
	return fds, nil
}

// close closes every descriptor received and not taken.
func (v *valueStream) close() {
	for _, fd := range v.fds {
		unix.Close(fd)
	}
	v.fds = nil
}
