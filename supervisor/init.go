package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/handoff"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/sys"
)

// InitArg is argv[1] of the re-executed paddock binary that becomes the
// agent: it installs the filter on its own thread, hands the listener to the
// supervisor and execs the agent command.
const InitArg = "__paddock_init"

// handoffFd is the descriptor number of the socket shared with the supervisor.
const handoffFd = 3

// MaybeRunInit runs the init side when this process was started as one and
// never returns in that case. Every program outside this module that
// starts sessions (using this package as a library) must call it first
// thing in main (or TestMain), before doing anything else. Binaries of this
// module that serve other jobs too list InitChild in their reexec.Run.
func MaybeRunInit() { reexec.Run(InitChild()) }

// InitChild is the agent's init as a job of this binary (internal/reexec),
// for the binaries of this module that re-execute themselves for other
// jobs too: reexec.Run(supervisor.InitChild(), ...).
func InitChild() reexec.Child {
	return reexec.Child{Name: InitArg, Main: func(args []string) int {
		code, err := runInit(args)
		fmt.Fprintf(os.Stderr, "paddock: %v\n", err)
		return code
	}}
}

// runInit expects: --backend auto|seccomp|ptrace [--trap-exec] [--trap-power]
// [--keep-caps] [--strict-wall] -- PATH ARGV0 ARG... It returns only on failure, with an
// exit status (126, like a shell that could not execute a command) and the
// error.
//
// Unless --keep-caps, it first hardens a root agent (hardenRoot): no
// CAP_SYS_PTRACE, and a read-only /proc/sysrq-trigger in a mount namespace
// of its own.
//
// The handoff (package handoff), over the SOCK_SEQPACKET socket on fd 3:
// with a listener, the init sends it (handoff.Listener); without one
// (--backend ptrace, or auto when no listener can be had) it sends its
// thread id and why (handoff.Trace), and the supervisor seizes that thread
// before the go-ahead, so the SECCOMP_RET_TRACE filter installed next never
// runs untraced. Either way the init then waits for handoff.GoAhead and
// execs.
func runInit(args []string) (int, error) {
	// The filter goes on this thread only, and the exec must come from it.
	runtime.LockOSThread()
	// The terminal commands are always the supervisor's to decide.
	opts := filter.Options{Terminals: true}
	backend := BackendAuto
	keepCaps, strict := false, false
	var sigmask, sigign uint64
	for len(args) > 0 && args[0] != "--" {
		switch args[0] {
		case "--keep-caps":
			keepCaps = true
		case "--strict-wall":
			strict = true
		case "--trap-exec":
			opts.Exec = true
		case "--trap-power":
			opts.Power = true
		case "--backend":
			if len(args) < 2 {
				return 126, errors.New("init: --backend needs a value")
			}
			backend = Backend(args[1])
			args = args[1:]
		case "--sigmask", "--sigign":
			if len(args) < 2 {
				return 126, fmt.Errorf("init: %s needs a value", args[0])
			}
			m, err := strconv.ParseUint(args[1], 16, 64)
			if err != nil {
				return 126, fmt.Errorf("init: %s %q: %w", args[0], args[1], err)
			}
			if args[0] == "--sigmask" {
				sigmask = m
			} else {
				sigign = m
			}
			args = args[1:]
		default:
			return 126, fmt.Errorf("init: unknown option %q", args[0])
		}
		args = args[1:]
	}
	if len(args) < 3 {
		return 126, errors.New("init: usage: " + InitArg + " [options] -- PATH ARGV0 [ARG...]")
	}
	path, argv := args[1], args[2:]
	// Decided as the supervisor decides it (Session.newWorld), so that
	// both agree on whether probes come to it.
	opts.Probes = scopesSignals(keepCaps)
	traced := backend == BackendPtrace
	var prog []unix.SockFilter
	if !traced {
		opts.Action = unix.SECCOMP_RET_USER_NOTIF
		var err error
		if prog, err = filter.Build(opts); err != nil {
			return 126, fmt.Errorf("init: build filter: %w", err)
		}
	}
	// The launch sequence launchDirect runs too; what it could not put up
	// of the Landlock wall goes to the supervisor's start line.
	c, err := confine(prog, keepCaps, strict)
	if err != nil {
		return 126, fmt.Errorf("init: %w", err)
	}
	wall := ""
	if c.wall != nil {
		wall = c.wall.Error()
	}
	switch {
	case traced:
		if err := sendTraceRequest("--backend ptrace", wall); err != nil {
			return 126, err
		}
	case c.listenErr == nil:
		if err := handoff.Send(handoffFd, handoff.Msg{Kind: handoff.Listener, Fd: c.listener, Wall: wall}); err != nil {
			return 126, fmt.Errorf("init: %w", err)
		}
		// The agent must never hold its own listener: if the supervisor
		// dies, the listener must close so that trapped syscalls fail (ENOSYS).
		unix.Close(c.listener)
	case backend == BackendAuto && features.FallsBackToPtrace(c.listenErr):
		traced = true
		if err := sendTraceRequest("seccomp listener unavailable: "+c.listenErr.Error(), wall); err != nil {
			return 126, err
		}
	default:
		return 126, fmt.Errorf("init: %w", c.listenErr)
	}
	if err := awaitGoAhead(); err != nil {
		return 126, err
	}
	if traced {
		opts.Action = unix.SECCOMP_RET_TRACE
		prog, err := filter.Build(opts)
		if err != nil {
			return 126, fmt.Errorf("init: build filter: %w", err)
		}
		if _, err := installListener(prog, 0); err != nil {
			return 126, fmt.Errorf("init: install seccomp filter for the ptrace backend: %w", err)
		}
	}
	// The agent starts with the signals ignored and the mask the
	// supervisor was started with; this process's handlers and this
	// thread's mask are the Go runtime's. Nothing of this init runs after
	// exec.
	for n := 1; n <= 64; n++ {
		if sigign&(1<<(n-1)) != 0 {
			if err := sys.IgnoreSignal(n); err != nil {
				return 126, fmt.Errorf("init: ignore signal %d: %w", n, err)
			}
		}
	}
	if err := sys.SetSigmask(sigmask); err != nil {
		return 126, fmt.Errorf("init: rt_sigprocmask: %w", err)
	}
	e := &ExecError{Path: path, Err: syscall.Exec(path, argv, os.Environ())}
	return e.Code(), e
}

// sendTraceRequest asks the supervisor to trace this thread, saying why
// and what of the Landlock wall is not up.
func sendTraceRequest(why, wall string) error {
	if err := handoff.Send(handoffFd, handoff.Msg{Kind: handoff.Trace, Tid: unix.Gettid(), Why: why, Wall: wall}); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return nil
}

// awaitGoAhead waits for the supervisor's go-ahead.
func awaitGoAhead() error {
	m, err := handoff.Recv(handoffFd)
	if err == nil && m.Kind != handoff.GoAhead {
		err = fmt.Errorf("got %v", m.Kind)
	}
	if err != nil {
		return fmt.Errorf("init: supervisor did not give the go-ahead: %w", err)
	}
	unix.Close(handoffFd)
	return nil
}

// installListener installs prog with flags, setting no_new_privs first when
// the kernel asks for it (a caller without CAP_SYS_ADMIN).
func installListener(prog []unix.SockFilter, flags uint) (int, error) {
	listener, err := filter.Install(prog, flags)
	if errors.Is(err, unix.EACCES) {
		if perr := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); perr != nil {
			return -1, fmt.Errorf("init: prctl(PR_SET_NO_NEW_PRIVS): %w", perr)
		}
		listener, err = filter.Install(prog, flags)
	}
	return listener, err
}
