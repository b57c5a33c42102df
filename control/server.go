package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/peer"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Ops is what the control socket asks of a session. The supervisor's
// session implements it; tests stand in a recorder. by names the client for
// the journal ("pid 4242 (bash) uid 1000"), requester is its pid.
type Ops interface {
	// Adopt makes pid and its descendants owned by the session; inside
	// says whether the client belongs to the session (see Inside), for a
	// session where only the outside may adopt.
	Adopt(pid int, reason string, lifelineOK bool, by string, inside bool) (LeaseInfo, error)
	// Release drops the lease on pid and returns it.
	Release(pid int, by string) (LeaseInfo, error)
	// Owned lists the processes the session owns now.
	Owned() ([]Process, error)
	// Kill signals pid as the kernel path would decide a kill(2) from requester.
	Kill(requester, pid, sig int) (Signalled, error)
	// Info identifies the session in every answer.
	Info() SessionInfo
	// Inside says whether pid, a client that just connected, belongs to
	// the session (the agent's tree or an adopted process), whose
	// connections count against the session's budget (MaxInsideConns)
	// instead of the user's (MaxOutsideConns). An error means it could not
	// be told; the connection then counts as inside.
	Inside(pid int) (bool, error)
}

// Bounds of the control socket. Its clients run as the session's user (or
// root), the agent included, and are not trusted to be polite: whatever
// they send, or fail to send, costs one goroutine and one descriptor for a
// bounded time, and never touches the session's notify loop, which does not
// read the socket. The budgets in budget.go split the connections between
// the session and the user.
const (
	// MaxConns bounds the connections served at once, both budgets
	// together; past a budget a client is answered at once that paddock is
	// busy, so that the socket cannot use up the descriptors the
	// supervisor needs for its pidfds.
	MaxConns = MaxInsideConns + MaxOutsideConns
	// DefaultTimeout is how long a client has to send its request, and then
	// to take the answer, when Options.Timeout is zero.
	DefaultTimeout = 5 * time.Second
)

// maxSocketPath is the size of sockaddr_un's sun_path, terminating NUL included.
const maxSocketPath = 108

// Options configure a Server.
type Options struct {
	// Timeout is how long a client has to send its request, and then to
	// take the answer, before the connection is dropped (with an answer
	// saying so when it can still be written); 0 means DefaultTimeout.
	Timeout time.Duration
	// Log receives the server's warnings (refused users, accept errors).
	Log zerolog.Logger

	// limits replaces the budgets when set (tests).
	limits *limits
}

// Server serves one session's control socket.
type Server struct {
	ops      Ops
	dir      string
	path     string
	listener *net.UnixListener
	timeout  time.Duration
	log      zerolog.Logger
	fs       procfs.FS
	budget   *budget         // the connections being served
	owner    procfs.Identity // the paddock whose session it serves (its owner record)
}

// runtimeDirs are where a session directory may go, in order:
// $XDG_RUNTIME_DIR when it is an absolute path to a directory, else $TMPDIR
// when set, else /dev/shm when it is a tmpfs, then /tmp. Like
// $XDG_RUNTIME_DIR, /dev/shm keeps what lives only as long as a session
// off the disk: on an ext4 /tmp, removing the directory cost a container's
// init a tenth of its start, and it stays writable in a read-only
// container.
func runtimeDirs() []string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return []string{d}
		}
	}
	if os.Getenv("TMPDIR") != "" {
		return []string{os.TempDir()}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(shmDir, &fs); err == nil && fs.Type == unix.TMPFS_MAGIC {
		return []string{shmDir, os.TempDir()}
	}
	return []string{os.TempDir()}
}

// shmDir is the tmpfs runtimeDirs prefers to /tmp.
const shmDir = "/dev/shm"

// Listen creates a fresh 0700 directory under the first of runtimeDirs
// that takes one, with the socket in it (see listenIn for the checks), and serves
// the socket until Close, carrying requests out on ops.
func Listen(opts Options, ops Ops) (*Server, error) {
	var l *net.UnixListener
	var dir, path string
	owner, err := procfs.Default().Self()
	if err != nil {
		return nil, fmt.Errorf("control socket: who am I: %w", err)
	}
	for _, base := range runtimeDirs() {
		// The last one's error is the one said: an earlier base is
		// only preferred.
		if l, dir, path, err = listenIn(base, owner); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	lim := defaultLimits()
	if opts.limits != nil {
		lim = *opts.limits
	}
	s := &Server{ops: ops, dir: dir, path: path, listener: l, timeout: timeout, log: opts.Log, fs: procfs.Default(), budget: newBudget(lim), owner: owner}
	go s.serve()
	return s, nil
}

// Path is the socket's path (what the agent sees in SocketEnv).
func (s *Server) Path() string { return s.path }

// Close stops accepting connections and removes the socket and its
// directory. Connections being served are answered as they would be.
func (s *Server) Close() error {
	err := s.listener.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	if rerr := removeDir(s.dir, s.owner); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("control socket: close: %w", err)
	}
	return nil
}

// serve accepts connections and serves each on a goroutine of its own,
// once it has been charged to its budget (see budget.go); a connection past
// its budget, or from another user, is answered at once without being read:
// a fresh connection's buffer is empty, so that write does not block the
// accept loop (and its deadline makes sure of it).
func (s *Server) serve() {
	for {
		conn, err := s.listener.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn().Err(err).Msg("control socket accept")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		cred, credErr := peer.Cred(conn)
		s.admit(conn, cred, credErr, func(pid int32) (int, error) { return peer.Pidfd(conn, pid) })
	}
}

// ServeConn serves a connection paddock made for one of the session's
// processes (its connect to this socket, carried out on its behalf: the
// default wall), whose other end that process holds: cred and pidfd (a pin
// of cred.Pid, which ServeConn closes) name it, as SO_PEERCRED and
// SO_PEERPIDFD would have had it connected itself.
func (s *Server) ServeConn(conn *net.UnixConn, cred unix.Ucred, pidfd int) {
	s.admit(conn, &cred, nil, func(int32) (int, error) { return unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0) })
	unix.Close(pidfd)
}

// admit charges a connection to its budget and serves it on a goroutine of
// its own, or answers it at once (another user, over budget); pin pins the
// connector.
func (s *Server) admit(conn *net.UnixConn, cred *unix.Ucred, credErr error, pin func(pid int32) (int, error)) {
	if credErr == nil {
		if err := allowedPeer(cred.Uid, os.Geteuid()); err != nil {
			s.log.Warn().Uint32("uid", cred.Uid).Int32("pid", cred.Pid).Msg("control request refused: another user")
			s.reply(conn, Response{Error: err.Error()})
			return
		}
	}
	pid := int32(0) // unidentified connectors share one per-peer budget
	if credErr == nil {
		pid = cred.Pid
	}
	if err := s.budget.peerBusy(pid); err != nil {
		s.reply(conn, Response{Error: err.Error()})
		return
	}
	sd, why := sideOf(s.ops, pin, cred, credErr)
	if why != nil {
		s.log.Debug().Err(why).Msg("control socket: connection counted as the session's")
	}
	if err := s.budget.take(sd, pid); err != nil {
		s.reply(conn, Response{Error: err.Error()})
		return
	}
	go func() {
		defer s.budget.give(sd, pid)
		s.reply(conn, s.answer(conn, cred, credErr, sd == inside))
	}()
}

// describePeer names a peer for the journal: "pid 4242 (bash) uid 1000".
func describePeer(fs procfs.FS, cred *unix.Ucred) string {
	comm := "?"
	if st, err := fs.Stat(int(cred.Pid)); err == nil {
		comm = st.Comm
	}
	return fmt.Sprintf("pid %d (%s) uid %d", cred.Pid, comm, cred.Uid)
}

// reply writes resp, within the timeout, and closes conn.
func (s *Server) reply(conn *net.UnixConn, resp Response) {
	defer conn.Close()
	resp.Session = s.ops.Info()
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(Response{Error: fmt.Sprintf("paddock could not encode its answer: %v", err), Session: resp.Session})
	}
	_ = conn.SetWriteDeadline(time.Now().Add(s.timeout))
	if err := writeNoSignal(conn, append(b, '\n')); err != nil {
		s.log.Debug().Err(err).Msg("control socket: the client did not take its answer")
	}
}

// writeNoSignal writes b to conn with MSG_NOSIGNAL, within conn's write
// deadline: a client gone before its answer (the sweep's probe of a
// session's socket, a client killed) is an error here, never a SIGPIPE,
// which paddock as an init catches and would pass on to its agent, as it
// passes on every signal it is sent (the agent died of it with 141).
func writeNoSignal(conn *net.UnixConn, b []byte) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := raw.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_NOSIGNAL)
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // the poller waits, within the deadline
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				werr = err
				return true
			}
			b = b[n:]
		}
		return true
	}); err != nil {
		return err
	}
	return werr
}

// answer reads and serves the request of a client the accept loop let in.
func (s *Server) answer(conn *net.UnixConn, cred *unix.Ucred, credErr error, fromInside bool) Response {
	if credErr != nil {
		return Response{Error: fmt.Sprintf("paddock could not identify the client: %v", credErr)}
	}
	_ = conn.SetReadDeadline(time.Now().Add(s.timeout))
	return serveRequest(conn, s.timeout, s.ops, client{pid: int(cred.Pid), inside: fromInside, by: func() string { return describePeer(s.fs, cred) },
		host: func(id int) (int, error) { return peerHost(s.fs, int(cred.Pid), id) }})
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

// serveRequest reads one request from r and carries it out on ops for the
// client process requester, named by by (called only for a well-formed
// request). timeout is what a read deadline on r was set to, for the error.
func serveRequest(r io.Reader, timeout time.Duration, ops Ops, c client) Response {
	req, err := readRequest(r, timeout)
	if err != nil {
		return Response{Error: err.Error()}
	}
	return dispatch(ops, req, c)
}

// client is who sent a request: its pid, whether it belongs to the session
// (its connection was charged to the session's budget), and how the journal
// names it (called only for a well-formed request).
type client struct {
	pid    int
	inside bool
	by     func() string
	// host reads a pid the client sent in its PID namespace (peerHost);
	// nil: the client's numbers are paddock's.
	host func(id int) (int, error)
}

// dispatch carries out a decoded request.
func dispatch(ops Ops, req Request, c client) Response {
	requester, by := c.pid, c.by()
	if c.host != nil && (req.Op == OpAdopt || req.Op == OpRelease || req.Op == OpKill) {
		h, err := c.host(req.Pid)
		if err != nil {
			return Response{Error: err.Error()}
		}
		req.Pid = h
	}
	switch req.Op {
	case OpAdopt:
		l, err := ops.Adopt(req.Pid, req.Reason, req.LifelineOK, by, c.inside)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Lease: &l}
	case OpRelease:
		l, err := ops.Release(req.Pid, by)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Released: &l}
	case OpPs:
		ps, err := ops.Owned()
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Processes: ps}
	case OpKill:
		sd, err := ops.Kill(requester, req.Pid, req.Signal)
		if err != nil {
			return Response{Error: err.Error()}
		}
		return Response{OK: true, Signalled: &sd}
	}
	return Response{Error: unknownOp(req.Op).Error()}
}
