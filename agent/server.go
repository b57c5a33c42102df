package agent

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/peer"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// Server is `paddock agent`: it takes each container's seccomp listener
// from the OCI runtime and decides every trapped call of every container
// with the policy core of `paddock run`, from one event loop over all
// listeners. What follows a decision is `paddock run`'s too (package
// report), through a pipeline of each container's own: the refusal's
// message on the caller's stderr, rate-limited, then its errno; the log
// line and the journal record, with the container's names, off the loop.
// The loop never waits for a message, a log or a journal: one container's
// storm of refusals costs the others no more than its decisions do.
type Server struct {
	// Journal receives refusals (nil: none).
	Journal *journal.Journal
	// Log is the structured log.
	Log zerolog.Logger
	// Guard is the host policy for power calls.
	Guard guard.Policy
	// FS is the /proc to read (zero: the host's).
	FS procfs.FS
	// Owner is the uid whose container runtime may hand listeners over
	// (SO_PEERCRED): the agent's own, root (0) for a node's agent, the
	// user for the per-user agent of a rootless engine, whose runtime runs
	// as the user (its root in the engine's user namespace is the user).
	// The agent serves no other user's containers.
	Owner uint32
	// Taken, when set, is what a takeover received (TakeOver): Serve goes
	// on serving its containers, on its listening socket.
	Taken *Taken

	mu sync.Mutex
	// handedOver records that Serve ended with a takeover.
	handedOver bool
	// byFd maps each listener to its container; byID each container id to
	// its container (a `runc exec` session joins its container).
	byFd map[int]*container
	byID map[string]*container
	ep   int
}

// Serve accepts the runtime's connections on ln and serves their
// containers until ln is closed; it then closes every listener (the
// containers' trapped calls fail with ENOSYS from then on) and returns.
func (s *Server) Serve(ln *net.UnixListener) error {
	if s.FS.Root == "" {
		s.FS = procfs.Default()
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("agent: epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	// Closing a descriptor does not wake a thread blocked on it: the loop
	// is stopped through an eventfd of its own.
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("agent: eventfd: %w", err)
	}
	defer unix.Close(stop)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, stop, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(stop)}); err != nil {
		return fmt.Errorf("agent: epoll_ctl: %w", err)
	}
	s.mu.Lock()
	s.ep, s.byFd, s.byID = ep, map[int]*container{}, map[string]*container{}
	s.mu.Unlock()
	if s.Taken != nil {
		for _, c := range s.Taken.containers {
			c.fs = s.FS
			c.reopenNS()
			s.startReporting(c)
			if !s.Taken.detached[c] {
				s.byID[c.id] = c
			}
		}
		for fd, c := range s.Taken.listeners {
			if err := s.watch(fd, c); err != nil {
				s.Log.Error().Err(err).Str("container", c.id).Msg("cannot watch a listener taken over")
			}
		}
		s.Log.Info().Int("containers", len(s.Taken.containers)).Int("listeners", len(s.Taken.listeners)).Msg("took over")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.loop(ep, stop)
	}()
	stopLoop := func() {
		var one [8]byte
		one[0] = 1
		_, _ = unix.Write(stop, one[:])
		<-done
	}
	var acceptErr error
	handedOver := false
	for !handedOver {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				acceptErr = fmt.Errorf("agent: accept: %w", err)
			}
			break
		}
		handedOver = s.take(conn, ln, stopLoop)
	}
	if !handedOver {
		stopLoop()
	}
	s.mu.Lock()
	s.handedOver = handedOver
	for fd := range s.byFd {
		unix.Close(fd)
	}
	clear(s.byFd)
	containers := make([]*container, 0, len(s.byID))
	for _, c := range s.byID {
		containers = append(containers, c)
	}
	s.mu.Unlock()
	for _, c := range containers {
		c.report.Close()
	}
	return acceptErr
}

// startReporting gives container c its pipeline (package report), closed
// when the container is gone or Serve ends.
func (s *Server) startReporting(c *container) {
	c.report = report.New(report.Options{Log: s.Log, FS: s.FS, Journal: s.Journal, NotifyStderr: true, Pace: containerPace})
	c.names = c.labels()
}

// HandedOver reports whether Serve ended because a new agent took
// everything over (--takeover).
func (s *Server) HandedOver() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handedOver
}

// take reads one handoff and starts serving its listener; a malformed or
// hostile one is refused with a log line. A takeover request stops the
// event loop (stopLoop), hands everything over, and reports true: this
// agent is done.
func (s *Server) take(conn *net.UnixConn, ln *net.UnixListener, stopLoop func()) bool {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	h, err := Receive(conn, s.Owner)
	if err != nil {
		s.refuse(h, err)
		return false
	}
	if h.Takeover {
		who := s.describePeer(conn, h.Peer)
		if err := challengePeer(conn); err != nil {
			who(s.Log.Warn()).Err(err).Msg("takeover refused: nothing handed over; still serving")
			return false
		}
		who(s.Log.Info()).Msg("takeover asked by a peer that proved it may take this agent's descriptors")
		start := time.Now()
		stopLoop()
		if err := s.handOver(conn, ln); err != nil {
			// The new agent fails its start; this one cannot go back to
			// serving what it may have handed over in part.
			s.Log.Error().Err(err).Msg("takeover failed; the containers' trapped calls fail with ENOSYS until an agent serves them again")
		} else {
			s.Log.Info().Dur("took", time.Since(start)).Msg("handed over to a new agent; exiting")
		}
		ln.SetUnlinkOnClose(false) // the socket is the new agent's now
		ln.Close()
		return true
	}
	c, err := s.join(h)
	if err != nil {
		s.refuse(h, err)
		return false
	}
	if err := s.watch(h.Listener, c); err != nil {
		s.unjoin(c)
		s.refuse(h, fmt.Errorf("cannot watch the listener: %w", err))
		return false
	}
	s.Log.Info().Str("container", c.id).Str("status", string(h.State.State.Status)).Int("pid", h.State.Pid).
		Str("bundle", c.bundle).Bool("init_shim", c.shim).Msg("serving container")
	return false
}

// refuse logs a refused handoff h and, where a seccomp listener came
// with it, keeps serving that listener as refused: each of its calls is
// answered EPERM, with a message and a journal record (decide). Closing
// it would not end the calls: the runtime's process or the container's
// may hold another copy (crun's exec does), and a trapped call of a
// process that holds the listener waits for an answer for ever.
func (s *Server) refuse(h Handoff, why error) {
	id := h.State.State.ID
	if h.Listener < 0 {
		s.Log.Warn().Err(why).Str("container", id).Msg("handoff refused")
		return
	}
	c := &container{fs: s.FS, id: id, bundle: h.State.State.Bundle, metadata: h.State.Metadata,
		annotations: h.State.State.Annotations, refused: why.Error(), listeners: 1,
		lifelines: map[int]uint64{}, hosts: map[int]int{}}
	if c.id == "" {
		c.id = "unknown"
	}
	s.startReporting(c)
	if err := s.watch(h.Listener, c); err != nil {
		// Nothing else can answer it: closing it is all that is left.
		unix.Close(h.Listener)
		c.report.Close()
		s.Log.Error().Err(errors.Join(why, err)).Str("container", id).Msg("handoff refused, and its listener cannot be watched: closed")
		return
	}
	s.Log.Warn().Err(why).Str("container", id).Msg("handoff refused: its listener is kept, and each of its calls refused (EPERM)")
}

// unjoin undoes a join whose listener could not be watched.
func (s *Server) unjoin(c *container) {
	s.mu.Lock()
	c.mu.Lock()
	c.listeners--
	gone := c.listeners == 0
	c.mu.Unlock()
	if gone && s.byID[c.id] == c {
		delete(s.byID, c.id)
	}
	s.mu.Unlock()
	if gone {
		c.closeNS()
		c.report.Close()
	}
}

// describePeer names the peer of a takeover request for the log: its pid
// and what it runs (read through a pidfd that pins it), and whether that
// is this agent's own executable file.
func (s *Server) describePeer(conn *net.UnixConn, cred unix.Ucred) func(*zerolog.Event) *zerolog.Event {
	exe, same, err := peerExe(conn, cred)
	return func(e *zerolog.Event) *zerolog.Event {
		e = e.Int32("peer_pid", cred.Pid).Uint32("peer_uid", cred.Uid)
		if err != nil {
			return e.Str("peer_exe", "unknown: "+err.Error())
		}
		return e.Str("peer_exe", exe).Bool("peer_same_binary", same)
	}
}

// peerExe reads the executable of the peer on conn, and whether it is
// this process's own.
func peerExe(conn *net.UnixConn, cred unix.Ucred) (string, bool, error) {
	if cred.Pid <= 0 {
		return "", false, errors.New("its pid is not visible in this agent's PID namespace")
	}
	pidfd, err := peer.Pidfd(conn, cred.Pid)
	if err != nil {
		return "", false, err
	}
	defer unix.Close(pidfd)
	exe, err := peer.ExeOf(pidfd, int(cred.Pid))
	if err != nil {
		return "", false, err
	}
	self, err := peer.Self()
	return exe.Path, err == nil && exe.Same(self), nil
}

// watch adds listener fd of container c to the event loop.
func (s *Server) watch(fd int, c *container) error {
	if err := seccomp.SetSyncWakeUp(fd); err != nil {
		s.Log.Debug().Err(err).Msg("sync wake-up unavailable")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byFd[fd] = c
	if err := unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
		delete(s.byFd, fd)
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// join finds or makes the container of handoff h. A `creating` handoff
// always makes a new container, and replaces any of the same id as the one
// later sessions join (the older one's listeners are served as they were
// until they close): podman restart reuses the id, and its new container's
// handoff can come before the old one's listener closes. A session of a
// container already served (`runc exec`: `running`) joins it only if its
// process is one of the container's (its PID namespace and cgroup);
// otherwise it is a container of its own, as one of an id never seen.
//
// A handoff without a pid (crun's exec) joins the container it names if
// that is served and the handoff is not `creating`; its session's first
// process is found by the listener (session.go). One of a container not
// served is refused: nothing says what it is.
func (s *Server) join(h Handoff) (*container, error) {
	s.mu.Lock()
	c, ok := s.byID[h.State.State.ID]
	s.mu.Unlock()
	creating := h.State.State.Status == specs.StateCreating
	if h.State.Pid == 0 {
		switch {
		case creating:
			return nil, fmt.Errorf("a creating handoff without a pid: paddock cannot tell which processes are the container's")
		case !ok:
			return nil, fmt.Errorf("a handoff without a pid (status %q; crun's exec sends pid 0) of a container this agent does not serve: nothing says which processes are its", h.State.State.Status)
		}
		root, err := c.holderOf(h.Listener)
		if err != nil || root == 0 {
			s.Log.Debug().AnErr("why", err).Str("container", c.id).Msg("a session without a pid: its first process is placed at its first call")
			c.pendSession(h.Listener)
			return c, nil
		}
		s.Log.Debug().Str("container", c.id).Int("session", root).Msg("a session without a pid: its first process holds the listener")
		return c, c.addSession(root)
	}
	if ok && !creating && c.member(h.State.Pid) {
		return c, c.addSession(h.State.Pid)
	}
	c, err := newContainer(s.FS, h.State)
	if err != nil {
		return nil, err
	}
	s.startReporting(c)
	s.mu.Lock()
	s.byID[c.id] = c
	s.mu.Unlock()
	return c, nil
}

// loop is the event loop: it waits on every listener at once and answers
// the notification of each that is ready; a listener whose processes have
// all exited (EPOLLHUP) is closed.
//
// A call is decided on the loop, which waits for nothing else: what
// follows the decision (the message, the log line, the journal record)
// is the container's pipeline's, off the loop, and the answer to a call
// whose message is still being written goes out from a goroutine of its
// own. Serving each ready listener on a goroutine of its own was measured
// too (docs/perf.md): every call then paid a thread handoff, which on a
// busy node cost more than another container's decisions do.
func (s *Server) loop(ep, stop int) {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			s.Log.Error().Err(err).Msg("epoll_wait failed; no container is served any more")
			return
		}
		for _, e := range events[:n] {
			fd := int(e.Fd)
			if fd == stop {
				return // Serve is ending
			}
			s.mu.Lock()
			c := s.byFd[fd]
			s.mu.Unlock()
			if c == nil {
				continue
			}
			if e.Events&unix.EPOLLIN != 0 {
				s.serveOne(fd, c)
			}
			if e.Events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 && e.Events&unix.EPOLLIN == 0 {
				s.drop(fd, c)
			}
		}
	}
}

// containerPace is how many refusals a second one container gets answered
// at once (report.Options.Pace): past it, its refusals wait their turn, so
// that a container retrying a refused call in a loop takes no more of the
// node's CPU than that, and the other containers' calls keep their cost
// (BenchmarkFleetAllowedKill, docs/perf.md).
const containerPace = 200

// drop closes a listener whose filter no task uses any more.
func (s *Server) drop(fd int, c *container) {
	s.mu.Lock()
	_ = unix.EpollCtl(s.ep, unix.EPOLL_CTL_DEL, fd, nil)
	delete(s.byFd, fd)
	c.forget(fd)
	c.mu.Lock()
	c.listeners--
	gone := c.listeners == 0
	c.mu.Unlock()
	if gone && s.byID[c.id] == c {
		delete(s.byID, c.id)
	}
	s.mu.Unlock()
	unix.Close(fd)
	if gone {
		c.closeNS()
		c.report.Close()
		s.Log.Info().Str("container", c.id).Msg("container gone")
	}
}

// serveOne receives one notification from fd and answers it, once the
// container's pipeline lets the answer go (report.After).
func (s *Server) serveOne(fd int, c *container) {
	var n seccomp.Notif
	if err := seccomp.Recv(fd, &n); err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINTR) {
			s.Log.Error().Err(err).Str("container", c.id).Msg("seccomp notify receive failed")
		}
		return
	}
	a, ev, waiting := s.decide(c, fd, n)
	if !waiting {
		return // the caller is gone: nobody reads the answer
	}
	after := c.report.Decided(ev)
	if after != nil {
		// Answered later, from another goroutine: through a descriptor of
		// its own, which a drop of the container cannot close under it.
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			after = nil // answered now, without waiting for the message
		} else {
			fd = dup
		}
	}
	if after == nil {
		s.send(c, fd, n.ID, a) // the common case: no closure, no goroutine
		return
	}
	report.After(after, func() {
		defer unix.Close(fd)
		s.send(c, fd, n.ID, a)
	})
}

// send answers notification id of container c on listener fd with a.
func (s *Server) send(c *container, fd int, id uint64, a answer.Answer) {
	if err := seccomp.Answer(fd, id, a); err != nil {
		s.Log.Error().Err(err).Str("container", c.id).Msg("seccomp notify answer failed")
	}
}

// decide decides notification n of container c: the answer, the event to
// report, and false when the caller stopped waiting.
func (s *Server) decide(c *container, fd int, n seccomp.Notif) (answer.Answer, report.Event, bool) {
	req := policy.NewRequest(0, n.Data.Arch, n.Data.Nr, n.Data.Args)
	sc := req.Syscall
	ev := report.Event{Caller: int(n.Pid), ABI: req.ABI.String(), Labels: c.names}
	if c.refused != "" {
		ev.Decision = refusedHandoff(req, c, int(n.Pid))
		if !seccomp.IDValid(fd, n.ID) {
			return answer.Answer{}, ev, false
		}
		return answer.Refuse(ev.Decision.Errno), ev, true
	}
	c.placeShimChild()
	if root, err := c.placeSession(fd, int(n.Pid)); err != nil || root != 0 {
		s.Log.Info().AnErr("why_not", err).Str("container", c.id).Int("session", root).Int("caller", int(n.Pid)).Msg("a session without a pid placed by its first call")
	}
	caller, nested, err := c.caller(int(n.Pid))
	var names *nestedNames
	if nested {
		// A process of a namespace the container made inside itself:
		// its pid arguments are read in that namespace.
		names, caller, err = c.nested(int(n.Pid))
		if names != nil {
			defer names.close()
		}
	}
	if err != nil {
		ev.Decision = unplaced(req, c.id, int(n.Pid), err)
		if !seccomp.IDValid(fd, n.ID) {
			return answer.Answer{}, ev, false
		}
		return answer.Refuse(ev.Decision.Errno), ev, true
	}
	req.Tid = caller
	req.Root = "the container's first process (or its init shim's first child, or an exec session's)"
	if _, size := policy.PtrArg(sc, req.Args); size > 0 {
		req.MemErr = errors.New("fleet mode does not read the caller's memory")
	}
	w := newWorld(c)
	defer w.close()
	pw := policy.World{Processes: w, Guard: s.Guard}
	var d policy.Decision
	translated := false
	if names != nil {
		req, d, translated = policy.Translate(req, names, pw)
	}
	if !translated {
		d = policy.Decide(req, pw)
	}
	if d.Allow && d.Pin != 0 && !w.alive(d.Pin) {
		d.Allow, d.Errno, d.Rule = false, unix.ESRCH, audit.RuleNoSuchTarget
	}
	ev.Decision = d
	if report.Reports(d) && !seccomp.IDValid(fd, n.ID) {
		return answer.Answer{}, ev, false
	}
	if d.Allow {
		return answer.Continue(), ev, true
	}
	return answer.Refuse(d.Errno), ev, true
}

// unplaced is the refusal of a call whose caller, node pid pid of
// container id, cannot be placed in the container (container.caller):
// the agent cannot tell what its pid arguments name, and refuses what it
// cannot decide.
func unplaced(req policy.Request, id string, pid int, why error) policy.Decision {
	return undecided(req, func(call string) string {
		return fmt.Sprintf("paddock refused %s from node pid %d of container %s: paddock could not place the caller in the container (%v), and refuses what it cannot decide. Way out: retry; if it persists, make the call from the container's own PID namespace, and run the agent in the node's (hostPID).",
			call, pid, id, why)
	})
}

// refusedHandoff is the refusal of a call that came on the listener of a
// refused handoff (Server.refuse): paddock does not know whose the caller
// is, and refuses what it cannot decide.
func refusedHandoff(req policy.Request, c *container, pid int) policy.Decision {
	return undecided(req, func(call string) string {
		return fmt.Sprintf("paddock refused %s from node pid %d: the runtime's handoff of this process's seccomp listener (container %s) was refused (%s), so paddock cannot tell whose the caller is, and refuses every call it traps there. Way out: the agent's log line \"handoff refused\" says why; start the container (or the exec session) again once the runtime sends a state paddock accepts.",
			call, pid, c.id, c.refused)
	})
}

// undecided is an EPERM refusal of req under the undecidable rule, with
// the message say gives for the call as named in it.
func undecided(req policy.Request, say func(call string) string) policy.Decision {
	d := policy.Decision{Syscall: req.Syscall.String(), Errno: unix.EPERM, Rule: audit.RuleUndecidable, Refusal: true}
	call := d.Syscall
	if si, ok := req.Syscall.SignalArg(); ok {
		d.Signal = int(int32(req.Args[si]))
		call = fmt.Sprintf("%s(%s)", d.Syscall, policy.SignalName(d.Signal))
	}
	d.Action = policy.ActionOf(req.Syscall, d)
	d.Message = say(call)
	return d
}

// ListenPath makes the agent's socket at path (an absolute path): a stale
// socket nobody accepts on is replaced, anything else there is an error.
func ListenPath(path string) (*net.UnixListener, error) {
	if err := checkSocket(path); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("--socket %s: exists and is not a socket; remove it or choose another path", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("--socket %s: another agent accepts on it; stop it, or take over from it with --takeover", path)
		}
		if err := unix.Unlink(path); err != nil {
			return nil, fmt.Errorf("--socket %s: remove the stale socket: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := unix.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--socket %s: chmod: %w", path, err)
	}
	return ln, nil
}

// checkSocket refuses a relative --socket path.
func checkSocket(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("--socket %q: want an absolute path (the runtime resolves listenerPath from its own directory)", path)
	}
	return nil
}
