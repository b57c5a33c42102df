package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
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

// takeoverRequest is the message that asks for a takeover.
const takeoverRequest = `{"paddockTakeover":1}`

// isTakeoverRequest reports whether msg is a takeover request.
func isTakeoverRequest(msg []byte) bool {
	return bytes.Equal(bytes.TrimSpace(msg), []byte(takeoverRequest))
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
	Lifelines   map[int]uint64    `json:"lifelines"`
}

// batch is one message of a takeover: containers described (each once),
// the container of each descriptor that comes with it, and at the end the
// listening socket.
type batch struct {
	Containers []containerRecord `json:"containers,omitempty"`
	Listeners  []string          `json:"listeners,omitempty"`
	Socket     bool              `json:"socket,omitempty"`
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
	sent := map[*container]bool{}
	for len(items) > 0 {
		n := min(len(items), MaxFds)
		var b batch
		var fds []int
		for _, it := range items[:n] {
			if !sent[it.c] {
				sent[it.c] = true
				b.Containers = append(b.Containers, it.c.record())
			}
			b.Listeners = append(b.Listeners, it.c.id)
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
	if _, _, err := conn.WriteMsgUnix(msg, unix.UnixRights(fds...), nil); err != nil {
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
		PidNS: c.pidns, Shared: c.shared, Cgroup: c.cgroup, Lifelines: l}
}

// Taken is what TakeOver received: the listening socket and every
// container with its listeners, for Server.Serve to go on with.
type Taken struct {
	Listener   *net.UnixListener
	containers map[string]*container
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
	if _, err := conn.Write([]byte(takeoverRequest)); err != nil {
		return nil, fmt.Errorf("--takeover: %w", err)
	}
	t := &Taken{containers: map[string]*container{}, listeners: map[int]*container{}}
	fail := func(err error) (*Taken, error) {
		t.Close()
		return nil, fmt.Errorf("--takeover: %w", err)
	}
	buf := make([]byte, MaxStateSize+1)
	oob := make([]byte, unix.CmsgSpace(MaxFds*4))
	for {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return fail(fmt.Errorf("read: %w (the old agent ended before handing over its socket)", err))
		}
		fds, err := parseRights(oob[:oobn])
		if err == nil && flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			err = errors.New("a batch over the bounds")
		}
		var b batch
		if err == nil {
			err = json.Unmarshal(buf[:n], &b)
		}
		if err == nil && (b.Socket && len(fds) != 1 || !b.Socket && len(fds) != len(b.Listeners)) {
			err = fmt.Errorf("a batch names %d descriptors, %d came", len(b.Listeners), len(fds))
		}
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
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
			t.containers[r.ID] = &container{id: r.ID, bundle: r.Bundle, metadata: r.Metadata, annotations: r.Annotations,
				pidns: r.PidNS, shared: r.Shared, cgroup: r.Cgroup, lifelines: r.Lifelines, hosts: map[int]int{}}
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
		}
	}
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
