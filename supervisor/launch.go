package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/handoff"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/internal/sys"
	"github.com/paddock-dev/paddock/terminal"
)

// errNoListener: no seccomp listener can be had here (an outer one already
// supervises this process, or the kernel lacks user notification), and the
// backend is auto: the init path then falls back to ptrace and says why.
var errNoListener = errors.New("no seccomp listener")

// ExecError is an agent command that was started but could not be executed
// (refused by paddock's exec guard, not executable, not found): the session
// then ends at once with Code, as a shell would (126, or 127 for a missing
// file), and the refusal, if it was one, is journaled like any other.
type ExecError struct {
	Path string
	Err  error
}

func (e *ExecError) Error() string { return fmt.Sprintf("exec %s: %v", strconv.Quote(e.Path), e.Err) }

func (e *ExecError) Unwrap() error { return e.Err }

// Code is the exit status a shell gives a command it could not execute.
func (e *ExecError) Code() int {
	if errors.Is(e.Err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// gcOff serializes the stretches during which a launch turns garbage
// collection off (launchDirect). It is package state because the setting
// it guards belongs to the whole process.
var gcOff sync.Mutex

type listenerResult struct {
	fd  int
	err error
	// wall is why the launching thread is not in a Landlock domain (nil:
	// it is, and so will the agent be).
	wall error
}

type forkResult struct {
	pid int
	err error
}

// launchDirect starts the agent for the seccomp backend without a second
// process start: a thread of this process takes the agent's hardening and
// the filter (both belong to a thread, not to the process), forks the agent
// from there, and keeps the listener. The agent's own execve is the first
// call the notify loop decides; with exec trapped, the loop pins the agent
// root right then, so that the root is known before anything of the
// agent's runs. Measured: about 5 ms less than re-executing
// paddock as an init (docs/perf.md, startup).
//
// The vfork holds the launching thread's P until the agent's execve is
// answered, so the launch runs with at least two Ps. While the launching
// thread carries the filter, no garbage collection may start: a collection stops the world by signalling every running thread
// with tgkill, and tgkill from the filtered thread would wait for the
// notify loop, which waits for the world to restart. So collection is off
// from before the filter goes on until the fork has returned, and the
// thread does nothing afterwards but wait for the agent root to be reaped
// (its parent-death signal, SIGKILL, comes from this thread's exit).
func (s *Session) launchDirect(backend Backend) (int, error) {
	opts := filter.Options{Exec: s.cfg.TrapExec, Power: s.cfg.TrapExec, Terminals: true, Action: unix.SECCOMP_RET_USER_NOTIF, Probes: scopesSignals(s.cfg.KeepCaps)}
	prog, err := filter.Build(opts)
	if err != nil {
		return 0, fmt.Errorf("supervisor: build filter: %w", err)
	}
	env := s.agentEnv()
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{fdOr(s.cfg.Stdin, 0), fdOr(s.cfg.Stdout, 1), fdOr(s.cfg.Stderr, 2)},
		Sys:   s.sysProcAttr(),
	}
	// The collector's setting is the process's: launches in one process
	// (library hosts, tests) take turns, so that each restores what it found.
	gcOff.Lock()
	defer gcOff.Unlock()
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	// The fork is a vfork, which keeps the launching thread's P until the
	// agent's execve has been answered, and the notify loop needs a P of
	// its own to answer it: with one P (GOMAXPROCS=1, a one-CPU container
	// or affinity mask) that would wait forever. The launch gets two.
	if procs := runtime.GOMAXPROCS(0); procs < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(procs)
	}

	listenerc := make(chan listenerResult, 1)
	proceed := make(chan struct{})
	forked := make(chan forkResult, 1)
	bridge := newListenerBridge() // the agent never holds the listener (fdtable.go)
	// On a thread of its own, never unlocked: whatever it took on ends with it.
	onOwnThread(func() {
		// The listener is made in the thread's own descriptor table.
		bridge.detach()
		defer bridge.release()
		c, err := confine(prog, s.cfg.KeepCaps, s.cfg.StrictWall)
		switch {
		case err != nil:
			err = fmt.Errorf("supervisor: %w", err)
		case c.listenErr != nil && backend == BackendAuto && features.FallsBackToPtrace(c.listenErr):
			err = fmt.Errorf("%w: %w", errNoListener, c.listenErr)
		case c.listenErr != nil:
			err = c.listenErr
		}
		if err != nil {
			listenerc <- listenerResult{err: err}
			return
		}
		fd, err := bridge.send(c.listener)
		if err != nil {
			listenerc <- listenerResult{err: err}
			return
		}
		listenerc <- listenerResult{fd: fd, wall: c.wall}
		select {
		case <-proceed:
		case <-s.done: // the launch failed after all (launchAndReap)
			return
		}
		// The fork gives the child this thread's mask (runtime BeforeFork).
		if err := sys.SetSigmask(s.sigmask); err != nil {
			s.cfg.Log.Debug().Err(err).Msg("the agent starts with the launching thread's signal mask")
		}
		pid, err := syscall.ForkExec(s.cfg.Path, s.cfg.Args, attr)
		bridge.release()
		forked <- forkResult{pid, err}
		if err == nil {
			<-s.done
		}
	})
	lr := <-listenerc
	if lr.err != nil {
		bridge.close()
		return 0, lr.err
	}
	if lr.fd, err = bridge.receive(lr.fd); err != nil {
		return 0, err
	}
	s.useListener(lr.fd, backend)
	s.wallErr = lr.wall
	if s.cfg.TrapExec {
		s.rootSet = make(chan rootPin, 1)
	}
	s.serving = make(chan struct{})
	s.startServing()
	<-s.sigs.ready
	// The fork is a vfork: the launching thread keeps its P, without
	// scheduling anything on it, until the agent's execve is answered. A
	// notify loop not yet running could sit in that P's run queue, left
	// there when no other thread happened to look for work, and nothing
	// would answer: the start would hang. It is in its receive first.
	<-s.serving
	close(proceed)
	fr := <-forked
	if fr.err != nil {
		// The child is gone (the fork collected it); so is a pin on it.
		select {
		case p := <-s.rootSet:
			if p.err == nil {
				unix.Close(p.fd)
			}
		default:
		}
		return 0, &ExecError{Path: s.cfg.Path, Err: fr.err}
	}
	if s.rootSet == nil {
		// Nothing of the agent's is decided before it runs: pin it now.
		s.agentForked()
		return fr.pid, s.setRoot(fr.pid)
	}
	p := <-s.rootSet
	if p.err == nil && p.pid != fr.pid {
		unix.Close(p.fd)
		p.err = fmt.Errorf("supervisor: the first exec came from pid %d, not from the agent root %d", p.pid, fr.pid)
	}
	if err := s.recordRoot(p); err != nil {
		// No agent runs unsupervised by a pinned root.
		_ = unix.Kill(fr.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(fr.pid, &ws, 0, nil)
		return 0, err
	}
	return fr.pid, nil
}

// listen installs the user-notification filter prog on this thread and
// returns its listener (filter.InstallListener: killable waits where the
// kernel has them, since every signal, a Go agent's own SIGURG preemption
// for one, would otherwise restart the trapped call as a new notification).
func listen(prog []unix.SockFilter) (int, error) {
	fd, _, err := filter.InstallListener(prog, installListener)
	if err != nil {
		return -1, fmt.Errorf("install seccomp filter with a listener: %w", err)
	}
	return fd, nil
}

// hardenAgent hardens the calling thread for a root agent unless keepCaps
// (see hardenRoot), naming the way out on failure.
func hardenAgent(keepCaps bool) error {
	if keepCaps {
		return nil
	}
	if err := hardenRoot(); err != nil {
		return fmt.Errorf("%w (paddock run --keep-caps starts the agent without this hardening)", err)
	}
	return nil
}

// useListener makes fd the session's listener: the seccomp backend,
// with sync wake-up where the kernel has it.
func (s *Session) useListener(fd int, asked Backend) {
	s.listener = fd
	s.backend, s.backendWhy = BackendSeccomp, "seccomp listener installed"
	if asked == BackendSeccomp {
		s.backendWhy = "--backend seccomp"
	}
	if err := seccomp.SetSyncWakeUp(fd); err != nil {
		s.cfg.Log.Debug().Err(err).Msg("sync wake-up unavailable; decisions will be slower")
	}
}

// fdOr is f's descriptor, or def when f is nil.
func fdOr(f *os.File, def uintptr) uintptr {
	if f == nil {
		return def
	}
	return f.Fd()
}

// launchAndReap runs on one locked OS thread for the whole session.
func (s *Session) launchAndReap(started chan<- error) {
	runtime.LockOSThread()
	defer s.reporting.Done() // added by Start
	// Never unlocked: the thread exits with the goroutine only at process end.
	pid, err := s.launch()
	var ee *ExecError
	if errors.As(err, &ee) {
		// The agent command could not be executed: the session ends at
		// once with a shell's status for it, as if the agent had run.
		stderr := s.cfg.Stderr
		if stderr == nil {
			stderr = os.Stderr
		}
		fmt.Fprintf(stderr, "paddock: %v\n", ee)
		s.status = unix.WaitStatus(ee.Code() << 8)
		s.tree.RootExited()
		close(s.done)
		started <- nil
		return
	}
	if err != nil {
		close(s.done) // lets a launching thread go
		started <- err
		return
	}
	started <- nil
	s.reap(pid)
}

// launch starts the agent. The seccomp backend forks it straight from a
// thread of this process (launchDirect); the ptrace backend, and auto where
// no listener can be had, re-execute this binary as the agent's init, which
// the supervisor seizes (launchInit).
func (s *Session) launch() (int, error) {
	backend := s.cfg.Backend
	if backend == "" {
		backend = BackendAuto
	}
	if backend != BackendPtrace {
		pid, derr := s.launchDirect(backend)
		if derr == nil || !errors.Is(derr, errNoListener) {
			return pid, derr
		}
		// No listener here: the init does not try again (under an outer
		// paddock each try is a refusal reported to the agent's stderr).
		pid, err := s.launchInit(BackendPtrace)
		if err == nil {
			s.backendWhy = "seccomp listener unavailable: " + strings.TrimPrefix(derr.Error(), errNoListener.Error()+": ")
		}
		return pid, err
	}
	return s.launchInit(backend)
}

// rootPin is the agent root pinned: its pid and a pidfd on it.
type rootPin struct {
	pid, fd int
	err     error
}

// pinRoot pins pid as the agent root and tells the ownership tree; the
// session records the pin (setRoot) on the launching goroutine.
func (s *Session) pinRoot(pid int) rootPin {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return rootPin{fd: -1, err: fmt.Errorf("supervisor: pidfd_open(%d): %w", pid, err)}
	}
	st, err := s.fs.Stat(pid)
	if err != nil {
		unix.Close(fd)
		return rootPin{fd: -1, err: fmt.Errorf("supervisor: agent root: %w", err)}
	}
	s.tree.SetRootStat(st)
	return rootPin{pid: pid, fd: fd}
}

// setRoot pins pid as the agent root and records it.
func (s *Session) setRoot(pid int) error {
	return s.recordRoot(s.pinRoot(pid))
}

// recordRoot records a pin taken by pinRoot.
func (s *Session) recordRoot(p rootPin) error {
	if p.err != nil {
		return p.err
	}
	s.rootPid, s.rootFd = p.pid, p.fd
	return nil
}

// newWorld is a world for one of the session's deciding goroutines.
func (s *Session) newWorld() *liveWorld {
	w := newLiveWorld(s.tree, s.fs, s.cfg.Guard, s.cfg.VRAM)
	w.files, w.strictExec, w.slots, w.terms = s.cfg.modelFiles, s.cfg.StrictExec, s.readSlots, s.terms
	// The launch asked for probes where it meant to scope signals; a
	// domain that was not entered scopes nothing.
	w.probes = scopesSignals(s.cfg.KeepCaps)
	w.scoped = w.probes && s.wallErr == nil
	return w
}

// startServing starts the notify loop on the listener.
func (s *Session) startServing() {
	s.reporting.Add(1)
	go func() {
		defer s.reporting.Done()
		s.serve(s.newWorld().keepPins())
	}()
}

// launchInit forks the init, receives the listener (or the thread to
// trace) and lets the init exec.
func (s *Session) launchInit(backend Backend) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("supervisor: socketpair: %w", err)
	}
	defer unix.Close(pair[0])
	args := []string{"--backend", string(backend), "--sigmask", strconv.FormatUint(s.sigmask, 16),
		"--sigign", strconv.FormatUint(s.sigign, 16)}
	if s.cfg.TrapExec {
		args = append(args, "--trap-exec", "--trap-power")
	}
	if s.cfg.KeepCaps {
		args = append(args, "--keep-caps")
	}
	if s.cfg.StrictWall {
		args = append(args, "--strict-wall")
	}
	args = append(append(args, "--", s.cfg.Path), s.cfg.Args...)
	self, argv := reexec.Argv(InitArg, args...)
	if s.cfg.Self != "" {
		self = s.cfg.Self
	}
	env := s.agentEnv()
	<-s.sigs.ready
	pid, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{fdOr(s.cfg.Stdin, 0), fdOr(s.cfg.Stdout, 1), fdOr(s.cfg.Stderr, 2), uintptr(pair[1])},
		Sys:   s.sysProcAttr(),
	})
	unix.Close(pair[1])
	if err != nil {
		return 0, fmt.Errorf("supervisor: start %s: %w", self, err)
	}
	fail := func(err error) (int, error) {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return 0, err
	}
	if err := s.setRoot(pid); err != nil {
		return fail(err)
	}
	m, err := handoff.Recv(pair[0])
	if errors.Is(err, handoff.ErrClosed) {
		// The init died before handing over the listener; its stderr says why.
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return 0, fmt.Errorf("supervisor: the agent's init exited before installing the seccomp filter (status %d)", ws.ExitStatus())
	}
	if err != nil {
		return fail(fmt.Errorf("supervisor: %w", err))
	}
	// What the init says of its Landlock domain, which the agent inherits.
	s.wallErr = wallOf(m.Wall, s.cfg.KeepCaps)
	switch m.Kind {
	case handoff.Trace:
		s.backend, s.backendWhy = BackendPtrace, m.Why
		if err := s.startTracing(m.Tid); err != nil {
			return fail(fmt.Errorf("supervisor: %s; the ptrace backend failed too: %w", s.backendWhy, err))
		}
	case handoff.Listener:
		s.useListener(m.Fd, backend)
		s.startServing()
	default:
		return fail(fmt.Errorf("supervisor: unexpected %v from the init", m.Kind))
	}
	s.agentForked()
	if err := handoff.Send(pair[0], handoff.Msg{Kind: handoff.GoAhead}); err != nil {
		return fail(fmt.Errorf("supervisor: %w", err))
	}
	return pid, nil
}

// agentEnv is the agent's environment: base (nil: this process's) with
// PADDOCK_SOCKET pointing at this session's control socket and PADDOCK_BIN at
// this binary, so that the agent can run `$PADDOCK_BIN adopt ...` even when
// paddock is not on its PATH.
func agentEnv(base []string, socket string) []string {
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+2)
	for _, kv := range base {
		if strings.HasPrefix(kv, control.SocketEnv+"=") || strings.HasPrefix(kv, BinEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, control.SocketEnv+"="+socket)
	if exe, err := os.Executable(); err == nil {
		env = append(env, BinEnv+"="+exe)
	}
	return env
}

// agentEnv is the agent's environment (agentEnv), with Config.Bin callable
// by name: the session's own directory, which holds its control socket
// and is removed with it, gets a link named paddock to Bin and goes first
// on PATH.
// Without it the agent still has PADDOCK_BIN.
func (s *Session) agentEnv() []string {
	env := agentEnv(s.cfg.Env, s.SocketPath())
	if s.cfg.Bin == "" {
		return env
	}
	// Not a directory of its own: making and removing one for the link
	// alone cost a container's init about a twentieth of its start.
	dir := filepath.Dir(s.SocketPath())
	if err := os.Symlink(s.cfg.Bin, filepath.Join(dir, control.LinkName)); err != nil && !errors.Is(err, os.ErrExist) {
		s.cfg.Log.Debug().Err(err).Msg("paddock is not on the agent's PATH")
		return env
	}
	path := dir
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "" {
				path += ":" + v
			}
			env[i] = "PATH=" + path
			return env
		}
	}
	return append(env, "PATH="+path+":/usr/local/bin:/usr/bin:/bin")
}

// BinEnv names the environment variable holding the paddock binary's path.
const BinEnv = "PADDOCK_BIN"

// sysProcAttr is how the agent (or the init) is started: killed if the
// launching thread dies; in a session of its own when none of its standard
// descriptors is a terminal (CI, harnesses, containers), so that every
// group in that session is the agent's and its kill(0) reaches nothing
// else; in a session of its own whose controlling terminal is its pty with
// Config.Terminal; and, on the user's own terminal, in a process group of
// its own with ForwardToGroup (taking the terminal's foreground).
func (s *Session) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.cfg.Terminal != nil {
		// Behind a pty of its own (Config.Terminal).
		a.Setsid = true
		a.Setctty, a.Ctty = s.ctty()
		return a
	}
	stdin := s.cfg.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	if !s.agentHasTerminal() {
		a.Setsid = true
		return a
	}
	if s.cfg.ForwardToGroup {
		a.Setpgid = true
		if _, err := unix.IoctlGetTermios(int(stdin.Fd()), unix.TCGETS); err == nil {
			a.Foreground, a.Ctty = true, 0
		}
	}
	return a
}

// agentHasTerminal reports whether any of the agent's standard descriptors
// is a terminal: the agent then shares it with the user (see docs/limits.md),
// and stays in paddock's session so that job control keeps working.
func (s *Session) agentHasTerminal() bool {
	for _, f := range []struct {
		f   *os.File
		def *os.File
	}{{s.cfg.Stdin, os.Stdin}, {s.cfg.Stdout, os.Stdout}, {s.cfg.Stderr, os.Stderr}} {
		file := f.f
		if file == nil {
			file = f.def
		}
		if _, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS); err == nil {
			return true
		}
	}
	return false
}

// ctty is whether the agent gets Config.Terminal as its controlling
// terminal, and which of its standard descriptors (0, 1, 2) is it.
func (s *Session) ctty() (bool, int) {
	want := terminal.DeviceOf(s.cfg.Terminal)
	for i, f := range []*os.File{s.cfg.Stdin, s.cfg.Stdout, s.cfg.Stderr} {
		if want != 0 && f != nil && terminal.DeviceOf(f) == want {
			return true, i
		}
	}
	return false, 0
}
