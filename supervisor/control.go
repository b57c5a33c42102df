package supervisor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
)

// SocketEnv names the environment variable that tells the agent (and the
// paddock clients it runs) where its supervisor's control socket is.
const SocketEnv = "PADDOCK_SOCKET"

// Request is one control-socket request: one JSON object per connection.
type Request struct {
	Op         string `json:"op"` // "adopt", "release", "ps", "kill"
	Pid        int    `json:"pid,omitempty"`
	Reason     string `json:"reason,omitempty"`
	LifelineOK bool   `json:"lifeline_ok,omitempty"`
	Signal     int    `json:"signal,omitempty"`
}

// Response is the supervisor's answer. Error holds a refusal's message.
type Response struct {
	OK        bool        `json:"ok"`
	Error     string      `json:"error,omitempty"`
	Lease     *LeaseInfo  `json:"lease,omitempty"`
	Processes []Process   `json:"processes,omitempty"`
	Signalled *Signalled  `json:"signalled,omitempty"`
	Released  *LeaseInfo  `json:"released,omitempty"`
	Session   SessionInfo `json:"session"`
}

// SessionInfo identifies the answering supervisor.
type SessionInfo struct {
	Supervisor int `json:"supervisor_pid"`
	Agent      int `json:"agent_pid"`
}

// LeaseInfo is a lease as reported to clients.
type LeaseInfo struct {
	Pid              int       `json:"pid"`
	Comm             string    `json:"comm"`
	StartTime        uint64    `json:"start_time"`
	Reason           string    `json:"reason"`
	AdoptedBy        string    `json:"adopted_by"`
	AdoptedAt        time.Time `json:"adopted_at"`
	LifelineOverride bool      `json:"lifeline_override,omitempty"`
}

// Process is one owned process as `paddock ps` shows it.
type Process struct {
	Pid       int        `json:"pid"`
	PPid      int        `json:"ppid"`
	Comm      string     `json:"comm"`
	StartTime uint64     `json:"start_time"`
	OwnedBy   string     `json:"owned_by"` // "tree" or "adopted"
	Agent     bool       `json:"agent,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	AdoptedAt *time.Time `json:"adopted_at,omitempty"`
	Lease     int        `json:"lease,omitempty"` // the adopted ancestor it is owned through
}

// Signalled reports what `paddock kill` signalled.
type Signalled struct {
	Pid     int    `json:"pid"`
	Signal  int    `json:"signal"`
	Group   bool   `json:"group"`
	Members []int  `json:"members,omitempty"`
	Comm    string `json:"comm"`
}

func leaseInfo(l ownership.Lease) *LeaseInfo {
	return &LeaseInfo{Pid: l.Pid, Comm: l.Comm, StartTime: l.StartTime, Reason: l.Reason, AdoptedBy: l.AdoptedBy, AdoptedAt: l.AdoptedAt, LifelineOverride: l.LifelineOverride}
}

// control serves the control socket and implements the session's adoption,
// release, listing and kill operations for the socket and the library alike.
type control struct {
	s        *Session
	dir      string
	path     string
	listener *net.UnixListener
	timeout  time.Duration // requestTimeout when the socket was started
	conns    chan struct{} // one token per connection being served
}

// Bounds of the control socket. Its clients run as the session's user (or
// root), the agent included, and are not trusted to be polite: whatever
// they send, or fail to send, costs one goroutine and one descriptor for a
// bounded time, and never touches the notify loop, which does not read the
// socket.
const (
	// maxRequest bounds one request's size, its '\n' not counted.
	maxRequest = 64 << 10
	// maxConns bounds the connections served at once; past it a client is
	// answered at once that paddock is busy, so that the socket cannot use
	// up the descriptors the notify loop needs for its pidfds.
	maxConns = 64
)

// requestTimeout is how long a client has to send its request, and then to
// take the answer, before the connection is dropped (with an answer saying
// so when it can still be written). A variable so that tests can shorten it
// before a session starts.
var requestTimeout = 5 * time.Second

// runtimeDir is where session directories go: $XDG_RUNTIME_DIR, else the temp dir.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return os.TempDir()
}

// maxSocketPath is the size of sockaddr_un's sun_path, terminating NUL included.
const maxSocketPath = 108

// startControl creates a fresh 0700 directory with the socket in it.
func startControl(s *Session) (*control, error) {
	dir, err := os.MkdirTemp(runtimeDir(), "paddock-")
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	path := filepath.Join(dir, "control.sock")
	if len(path) >= maxSocketPath {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("control socket: %s is %d bytes long, and a unix socket's path must be shorter than %d; set XDG_RUNTIME_DIR or TMPDIR to a shorter directory (now %s)", path, len(path), maxSocketPath, runtimeDir())
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	c := &control{s: s, dir: dir, path: path, listener: l, timeout: requestTimeout, conns: make(chan struct{}, maxConns)}
	go c.serve()
	return c, nil
}

func (c *control) close() {
	_ = c.listener.Close()
	_ = os.RemoveAll(c.dir)
}

// serve accepts connections and serves each on a goroutine of its own.
func (c *control) serve() {
	for {
		conn, err := c.listener.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			c.s.cfg.Log.Warn().Err(err).Msg("control socket accept")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case c.conns <- struct{}{}:
			go func() {
				defer func() { <-c.conns }()
				c.handleConn(conn)
			}()
		default:
			c.busy(conn)
		}
	}
}

// busy answers a connection past maxConns without reading it. A fresh
// connection's buffer is empty, so the write does not block the accept loop
// (and its deadline makes sure of it).
func (c *control) busy(conn *net.UnixConn) {
	resp := Response{Error: fmt.Sprintf("paddock is busy: %d control requests are in progress on this session; try again", maxConns)}
	if cred, err := peer(conn); err != nil || allowedPeer(cred.Uid, os.Geteuid()) != nil {
		resp = Response{Error: "paddock refused a control request: only the session's user and root may control this session"}
	}
	c.reply(conn, resp)
}

// peer identifies the other end of a connection with SO_PEERCRED.
func peer(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// describePeer names a peer for the journal: "pid 4242 (bash) uid 1000".
func describePeer(fs procfs.FS, cred *unix.Ucred) string {
	comm := "?"
	if st, err := fs.Stat(int(cred.Pid)); err == nil {
		comm = st.Comm
	}
	return fmt.Sprintf("pid %d (%s) uid %d", cred.Pid, comm, cred.Uid)
}

// handleConn answers one connection and closes it.
func (c *control) handleConn(conn *net.UnixConn) {
	c.reply(conn, c.answer(conn))
}

// reply writes resp, within the timeout, and closes conn.
func (c *control) reply(conn *net.UnixConn, resp Response) {
	defer conn.Close()
	resp.Session = SessionInfo{Supervisor: os.Getpid(), Agent: c.s.tree.Root().Pid}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(Response{Error: fmt.Sprintf("paddock could not encode its answer: %v", err), Session: resp.Session})
	}
	_ = conn.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		c.s.cfg.Log.Debug().Err(err).Msg("control socket: the client did not take its answer")
	}
}

// answer checks the client's user, then reads and serves its request.
func (c *control) answer(conn *net.UnixConn) Response {
	cred, err := peer(conn)
	if err != nil {
		return Response{Error: fmt.Sprintf("paddock could not identify the client (SO_PEERCRED): %v", err)}
	}
	if err := allowedPeer(cred.Uid, os.Geteuid()); err != nil {
		c.s.cfg.Log.Warn().Uint32("uid", cred.Uid).Int32("pid", cred.Pid).Msg("control request refused: another user")
		return Response{Error: err.Error()}
	}
	_ = conn.SetReadDeadline(time.Now().Add(c.timeout))
	return serveRequest(conn, c.timeout, c.s, int(cred.Pid), func() string { return describePeer(c.s.fs, cred) })
}

// allowedPeer decides who may use the socket: the session's own user and
// root. The socket's 0700 directory already keeps others out; this check
// holds even if that directory is opened up. (SO_PEERCRED names whoever
// connected: a connection handed on to another process still counts as
// theirs.)
func allowedPeer(uid uint32, euid int) error {
	if uid == 0 || int64(uid) == int64(euid) {
		return nil
	}
	return fmt.Errorf("paddock refused a control request from uid %d: only uid %d (the session's user) and root may control this session", uid, euid)
}

// sessionOps is what the control socket asks of a session. *Session
// implements it; tests substitute a recorder.
type sessionOps interface {
	adopt(pid int, reason string, lifelineOK bool, by string) (ownership.Lease, error)
	release(pid int, by string) (ownership.Lease, error)
	Owned() ([]Process, error)
	kill(requester, pid, sig int) (*Signalled, error)
}

// serveRequest reads one request from r and carries it out on ops for the
// client process requester, named by by (called only for a well-formed
// request). timeout is what a read deadline on r was set to, for the error.
func serveRequest(r io.Reader, timeout time.Duration, ops sessionOps, requester int, by func() string) Response {
	req, err := readRequest(r, timeout)
	if err != nil {
		return Response{Error: err.Error()}
	}
	return dispatch(ops, req, requester, by())
}

// maxSignal is the largest signal number on Linux (SIGRTMAX, _NSIG-1).
const maxSignal = 64

// readRequest reads one request: a JSON object on one line, at most
// maxRequest bytes. The '\n' may be left out by a client that closes its
// side of the connection after the object.
func readRequest(r io.Reader, timeout time.Duration) (Request, error) {
	line, err := bufio.NewReader(io.LimitReader(r, maxRequest+1)).ReadBytes('\n')
	body := bytes.TrimSuffix(line, []byte{'\n'})
	switch {
	case len(body) > maxRequest:
		return Request{}, fmt.Errorf("bad request: larger than %d KiB (a request is one JSON object on one line)", maxRequest>>10)
	case err == nil, errors.Is(err, io.EOF) && len(body) > 0:
	case errors.Is(err, os.ErrDeadlineExceeded):
		return Request{}, fmt.Errorf("bad request: no complete request within %v (send one JSON object, then a newline)", timeout)
	case errors.Is(err, io.EOF):
		return Request{}, errors.New("bad request: empty (the client sent nothing before closing its side)")
	default:
		return Request{}, fmt.Errorf("bad request: read: %w", err)
	}
	return decodeRequest(body)
}

// decodeRequest parses and checks one request line.
func decodeRequest(b []byte) (Request, error) {
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, fmt.Errorf("bad request: not a JSON request object: %v", err)
	}
	switch req.Op {
	case "adopt", "release", "ps":
	case "kill":
		if req.Signal < 0 || req.Signal > maxSignal {
			return Request{}, fmt.Errorf("bad request: signal %d is not a signal number (0 to %d)", req.Signal, maxSignal)
		}
	default:
		op := req.Op
		if len(op) > 32 {
			op = op[:32] + "..."
		}
		return Request{}, fmt.Errorf("bad request: unknown op %q (want adopt, release, ps or kill)", op)
	}
	return req, nil
}

// dispatch carries out a decoded request.
func dispatch(ops sessionOps, req Request, requester int, by string) Response {
	switch req.Op {
	case "adopt":
		l, err := ops.adopt(req.Pid, req.Reason, req.LifelineOK, by)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Lease: leaseInfo(l)}
	case "release":
		l, err := ops.release(req.Pid, by)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Released: leaseInfo(l)}
	case "ps":
		ps, err := ops.Owned()
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Processes: ps}
	case "kill":
		sd, err := ops.kill(requester, req.Pid, req.Signal)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Signalled: sd}
	}
	return Response{Error: fmt.Sprintf("bad request: unknown op %q (want adopt, release, ps or kill)", req.Op)}
}

// Call sends one request to the control socket at path and returns the answer.
func Call(path string, req Request) (Response, error) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return Response{}, fmt.Errorf("no paddock supervisor is reachable at %s: %w", path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return Response{}, fmt.Errorf("control socket %s: write: %w", path, err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("control socket %s: read answer: %w", path, err)
	}
	return resp, nil
}

// adopt records a lease and journals it; an adoption that cannot be
// journaled (and fsync'd) is refused, since an unaudited widening of what the
// agent may signal is exactly what the journal exists to prevent.
func (s *Session) adopt(pid int, reason string, lifelineOK bool, by string) (ownership.Lease, error) {
	if s.cfg.Journal == nil {
		return ownership.Lease{}, errors.New("adoption refused: this session has no audit journal, and adoptions must be journaled. Way out: restart paddock run with --journal FILE")
	}
	s.adoptMu.Lock()
	defer s.adoptMu.Unlock()
	l, err := s.tree.Adopt(ownership.AdoptRequest{Pid: pid, Reason: reason, By: by, LifelineOK: lifelineOK, Now: time.Now()})
	if err != nil {
		return l, err
	}
	fields := map[string]any{"reason": l.Reason, "comm": l.Comm, "start_time": l.StartTime, "adopted_by": by}
	if l.LifelineOverride {
		fields["self_lifeline_opt_in"] = true
	}
	err = s.cfg.Journal.Append(journal.Record{TS: l.AdoptedAt, Action: "adopted", Pid: l.Pid, Fields: fields})
	if err == nil && l.LifelineOverride {
		err = s.cfg.Journal.Append(journal.Record{TS: l.AdoptedAt, Action: "self_lifeline_override", Pid: l.Pid, Fields: map[string]any{
			"reason": l.Reason, "comm": l.Comm, "adopted_by": by, "self_lifeline_opt_in": true,
		}})
	}
	if err == nil {
		err = s.cfg.Journal.Sync()
	}
	if err != nil {
		s.tree.Release(l.Pid)
		s.cfg.Log.Error().Err(err).Int("pid", pid).Msg("adoption refused: the audit journal could not be written")
		return ownership.Lease{}, fmt.Errorf("adoption of pid %d refused: the audit journal could not be written (%v); nothing was adopted", pid, err)
	}
	s.cfg.Log.Info().Int("pid", l.Pid).Str("comm", l.Comm).Str("reason", l.Reason).Str("by", by).Bool("lifeline_override", l.LifelineOverride).Msg("adopted")
	return l, nil
}

// release drops a lease and journals it.
func (s *Session) release(pid int, by string) (ownership.Lease, error) {
	l, ok := s.tree.Release(pid)
	if !ok {
		return l, fmt.Errorf("release of pid %d refused: pid %d is not adopted by this session (paddock ps lists what is)", pid, pid)
	}
	s.journal("released", pid, map[string]any{"reason": l.Reason, "comm": l.Comm, "released_by": by})
	return l, nil
}

// journal appends a record, loudly when it fails (the action itself stands).
func (s *Session) journal(action audit.Action, pid int, fields map[string]any) {
	if s.cfg.Journal == nil {
		return
	}
	if err := s.cfg.Journal.Append(journal.Record{Action: action, Pid: pid, Fields: fields}); err != nil {
		s.cfg.Log.Error().Err(err).Str("action", string(action)).Msg("paddock could not write the audit journal")
	}
}

// sweepLeases expires leases whose process is gone, every interval, until done.
func (s *Session) sweepLeases(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.expireLeases()
		case <-s.done:
			return
		}
	}
}

func (s *Session) expireLeases() {
	for _, e := range s.tree.Sweep() {
		s.journal("lease_expired", e.Pid, map[string]any{"why": e.Why, "reason": e.Reason, "comm": e.Comm, "start_time": e.StartTime})
	}
}

// kill decides `paddock kill` exactly as the kernel path would decide a
// kill(2) from the requesting process, then delivers it from the supervisor:
// to the whole process group only when the target leads it and every member
// is owned, otherwise to the pinned process alone.
func (s *Session) kill(requester, pid, sig int) (*Signalled, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("paddock kill refused: %d is not a process id; paddock kill signals one process (and its group when it leads a group the session wholly owns)", pid)
	}
	req := policy.Request{Tid: requester, Syscall: filter.Kill, ABI: "paddock kill", Args: [6]uint64{uint64(pid), uint64(sig)}}
	w := newLiveWorld(s.tree, s.fs, s.cfg.Guard, s.cfg.VRAM).begin(req, -1, 0)
	defer w.reset()
	d := policy.Decide(req, w)
	if !d.Allow {
		if d.Refusal {
			s.reporter.report(refusal{when: time.Now(), caller: requester, abi: req.ABI, d: d, quiet: true})
			return nil, errors.New(d.Message)
		}
		return nil, fmt.Errorf("paddock kill refused: pid %d is not owned by this session: %v (it has exited, or never existed). Way out: paddock ps lists the processes this session owns", pid, syscall.Errno(d.Errno))
	}
	t, err := w.Lookup(pid)
	if err != nil {
		return nil, err
	}
	out := &Signalled{Pid: pid, Signal: sig, Comm: t.Comm}
	if pgrp, err := w.Pgrp(pid); err == nil && pgrp == pid {
		greq := req
		greq.Args[0] = uint64(-int64(pid))
		if gd := policy.Decide(greq, w); gd.Allow {
			members, err := s.fs.GroupMembers(pid)
			if err == nil {
				if err := unix.Kill(-pid, unix.Signal(sig)); err != nil {
					return nil, fmt.Errorf("paddock kill: process group %d: %w", pid, err)
				}
				out.Group = true
				for _, m := range members {
					out.Members = append(out.Members, m.Pid)
				}
				sort.Ints(out.Members)
				return out, nil
			}
		}
	}
	if !w.stillThere(pid) {
		return nil, fmt.Errorf("paddock kill: pid %d exited meanwhile", pid)
	}
	if err := unix.PidfdSendSignal(w.pidfd(pid), unix.Signal(sig), nil, 0); err != nil {
		return nil, fmt.Errorf("paddock kill: pid %d: %w", pid, err)
	}
	return out, nil
}

// Owned lists the processes the session owns now: the agent's tree and the
// adopted processes with their descendants.
func (s *Session) Owned() ([]Process, error) {
	s.expireLeases()
	var out []Process
	err := s.tree.ScanOwned(func(rel ownership.Relation, st procfs.Stat) bool {
		pid := st.Pid
		p := Process{Pid: pid, PPid: st.PPid, Comm: st.Comm, StartTime: st.StartTime, OwnedBy: "tree", Agent: rel == ownership.AgentRoot}
		if l, ok := s.tree.LeaseFor(pid); ok {
			p.OwnedBy = "adopted"
			if l.Pid == pid {
				at := l.AdoptedAt
				p.Reason, p.AdoptedAt = l.Reason, &at
			} else {
				p.Lease, p.Reason = l.Pid, l.Reason
			}
		}
		out = append(out, p)
		return true
	})
	return out, err
}
