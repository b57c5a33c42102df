// Package supervisor starts a command under paddock's seccomp filter and
// answers its trapped syscalls: it re-executes the paddock binary as a tiny
// init that installs the filter and hands the listener back, then runs the
// notify loop that asks package policy about each call, reaps orphans as a
// child subreaper, forwards signals to the agent, and reports refusals.
package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/dbusproxy"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sched"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
	"github.com/paddock-dev/paddock/vram"
)

// Config describes one supervised command.
type Config struct {
	// Path is the resolved executable; Args is its argv (Args[0] included).
	Path string
	Args []string
	// Env is the agent's environment (nil: this process's).
	Env []string
	// Journal receives refusals (nil: none).
	Journal *journal.Journal
	// Log receives one structured line per refusal.
	Log zerolog.Logger
	// LogFile is the file Log writes to, when it writes to one (nil: not
	// known). A refusal whose message went to the caller's stderr on the
	// same stream (the same terminal, or the very pipe, socket or file)
	// gets no log line of its own there: the user would read it twice.
	// The journal has every refusal either way.
	LogFile *os.File
	// NotifyStderr writes each refusal's message to the caller's stderr.
	NotifyStderr bool
	// TrapExec also traps execve/execveat and the reboot/kexec syscalls, so
	// that Guard decides them.
	TrapExec bool
	// Adoption says who may adopt processes into the session through the
	// control socket: AdoptByAgent ("" too: anyone allowed on the socket,
	// the agent included, with a reason), AdoptFromOutside (only clients
	// outside the session, such as the user's own terminal) or AdoptOff.
	// The library's own Adopt is the host program's, and always allowed.
	Adoption Adoption
	// StrictExec refuses an exec whose path and arguments paddock may not
	// read (a caller that made itself non-dumpable) as undecidable; by
	// default such an exec runs and is journaled as exec_unread.
	StrictExec bool
	// Guard is the host policy for exec and power decisions.
	Guard guard.Policy
	// VRAM returns the GPU memory budget execs are preflighted against (nil
	// func or nil budget: none). It is called once, on the first GPU
	// workload, so GPU detection never delays the agent's start.
	VRAM func() *vram.Budget
	// Self is the binary re-executed as the agent's init for the ptrace
	// backend ("" means /proc/self/exe); it must serve InitChild first
	// thing.
	Self string
	// WarnOnReap logs each process other than the agent root that the
	// session reaps (tini's -w).
	WarnOnReap bool
	// Bin is the paddock binary the agent can call by name: a directory
	// holding a link to it goes first on the agent's PATH (empty: none;
	// PADDOCK_BIN is set either way).
	Bin string
	// Stdin, Stdout, Stderr of the agent (nil: this process's).
	Stdin, Stdout, Stderr *os.File
	// Terminal, when set, is the slave of a pty put between the agent and
	// the user's terminal (package terminal), among Stdin, Stdout and
	// Stderr: the agent then starts in a session of its own with Terminal
	// as its controlling terminal and its group as the foreground, and
	// SIGWINCH is not forwarded (the relay copies the window size to the
	// pty and the kernel signals the pty's foreground job). Its output is
	// relayed to the user's terminal: a refusal message written on it counts
	// as shown on LogFile's terminal.
	Terminal *os.File
	// Resize, with Terminal, carries out the agent's settings of
	// Terminal's window size (TIOCSWINSZ, which the supervisor traps) in
	// order with the relay's copies of the user's size
	// (terminal.Relay.AgentResize); nil: the kernel carries them out.
	Resize func(*unix.Winsize) error
	// Init gives paddock PID 1's duties even when it is not PID 1: forward
	// every signal tini forwards, not only the interactive set. It is on by
	// itself when paddock is PID 1 of its PID namespace.
	Init bool
	// Signals are paddock's own signals, caught by CatchSignals before
	// Start for a shorter start (nil: Start catches them). Its init must
	// agree with Init.
	Signals *Signals
	// ForwardToGroup starts the agent in a process group of its own and
	// forwards signals to that whole group.
	ForwardToGroup bool
	// Grace is how long leftover processes get between SIGTERM and SIGKILL
	// when the agent has exited (0: DefaultGrace; NoGrace: none, SIGKILL
	// follows SIGTERM at once). The wait ends early when nothing is left.
	Grace time.Duration
	// KeepOrphans leaves the processes the agent left running alone.
	KeepOrphans bool
	// Backend chooses how trapped syscalls reach the supervisor ("": auto).
	Backend Backend
	// KeepCaps leaves a root agent as it is. By default paddock drops
	// CAP_SYS_PTRACE from the agent's capability bounding set and, with
	// CAP_SYS_ADMIN, gives it a mount namespace of its own in which
	// /proc/sysrq-trigger is read-only (docs/threat-model.md).
	KeepCaps bool
	// StrictWall puts the agent in a Landlock domain that also refuses it
	// writes to processes' and cgroups' files, and mount(2) (see
	// landlock.go). Start fails where the kernel cannot, and with KeepCaps.
	StrictWall bool
	// Wall, when set, traps the default wall's calls on the seccomp backend
	// (filter.Options.Wall): unix socket connects and opens for writing,
	// decided on the object they reach and carried out on the caller's
	// behalf (wall.go, docs/deputies.md). nil leaves them untrapped.
	Wall *WallConfig
	// Slice is the scheduler time slice this process's threads ask for
	// while they supervise, and Boost how many nice steps below its own
	// they take where that is permitted (sched.SupervisorSlice and
	// sched.SupervisorBoost; zero for both leaves scheduling alone): the
	// answering thread then runs as soon as it is woken (internal/sched).
	// The agent is forked before they take it, so it is scheduled as this
	// process was started either way.
	Slice time.Duration
	Boost int
	// OOMScoreAdj, when not 0, is the oom_score_adj this process takes
	// once the agent is forked, when lower than its own
	// (SupervisorOOMScoreAdj: the OOM killer's late choice), so that the
	// agent, and everything it starts, keeps the one this process was
	// started with. Lowering it needs CAP_SYS_RESOURCE; without, this
	// process keeps its own.
	OOMScoreAdj int

	// modelFiles, when set, replaces how decisions read the model files an
	// exec names (tests stand in a file that never finishes reading).
	modelFiles func(tid int) vram.Files
	// controlTimeout, when set, replaces the control socket's per-connection
	// timeout (control.DefaultTimeout); tests shorten or lengthen it.
	controlTimeout time.Duration
}

// Adoption is who may adopt processes into a session (Config.Adoption).
type Adoption string

// Adoption modes; the names are the profile's (key adoption).
const (
	AdoptByAgent     Adoption = "agent"
	AdoptFromOutside Adoption = "outside"
	AdoptOff         Adoption = "off"
)

// DefaultGrace is the default time between SIGTERM and SIGKILL for leftovers.
const DefaultGrace = 5 * time.Second

// NoGrace is the Config.Grace that sends SIGKILL right after SIGTERM
// (paddock run --grace 0).
const NoGrace time.Duration = -1

// Session is one supervised command.
type Session struct {
	cfg      Config
	fs       procfs.FS
	tree     *ownership.Tree
	control  *control.Server
	adoptMu  sync.Mutex
	rootPid  int
	rootFd   int // pidfd of the agent root
	listener int
	pipeline *report.Pipeline

	// backend is the one in use, backendWhy why it was chosen.
	backend    Backend
	backendWhy string
	// sigmask is the signal mask the agent starts with, sigign the signals
	// it starts with ignored (keepIgnored).
	sigmask, sigign uint64
	// wallErr is why the agent is not in a Landlock domain of its own
	// (nil: it is; see landlock.go).
	wallErr error
	// wall is the default wall's state (nil: not trapped).
	wall *wallState
	// kernelAudit reads the kernel's records of the domain's denials (nil:
	// they are not read; landlock.go).
	kernelAudit *wallAudit
	// trace is the ptrace backend's (reap.go; zero for the seccomp one).
	trace tracing
	// terms are the session's terminals and paddock's own (terminals.go).
	terms *termSet

	// workers take over the decisions that may wait (notify.go), and
	// readSlots bound the reads of model files they have running at once.
	workers   *workers
	readSlots *vram.ReadSlots

	// rootSet, for a direct launch that traps exec, carries the agent root
	// pinned by the notify loop at the root's own execve, before the agent
	// runs (see launchDirect).
	rootSet chan rootPin
	// serving, for a direct launch, is closed by the notify loop as it
	// first goes to receive (see launchDirect).
	serving chan struct{}

	done   chan struct{}
	status unix.WaitStatus

	// sigs has paddock's own signals, for forward.
	sigs *Signals

	// handing stops the notify loop for a hand-over (handover.go), which
	// waits for inflight: the answers handed to workers or report.After.
	handing  handing
	inflight sync.WaitGroup

	waitOnce sync.Once
	// reporting counts what may still hand decisions to the pipeline: the
	// notify loop, the reaper (which also traces), and Wait until it has
	// flushed. The pipeline closes when none is left, and ended then.
	reporting sync.WaitGroup
	ended     chan struct{}
	cleaned   Cleanup
}

// Start launches cfg's command under the filter and starts supervising it.
// The calling process becomes a child subreaper and non-dumpable for the rest
// of its life: orphans of the agent stay in the tree, and the agent cannot
// read or write the supervisor's memory through /proc.
func Start(cfg Config) (*Session, error) {
	if len(cfg.Args) == 0 || cfg.Path == "" {
		return nil, errors.New("supervisor: no command to run")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("supervisor: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("supervisor: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	if cfg.StrictWall {
		if err := landlockReady(cfg.KeepCaps); err != nil {
			return nil, fmt.Errorf("supervisor: --strict-wall: %w", err)
		}
	}
	fs := procfs.Default()
	s := &Session{cfg: cfg, fs: fs, done: make(chan struct{}), rootFd: -1, listener: -1, workers: newWorkers(),
		readSlots: vram.NewReadSlots(maxStalledReads), terms: newTermSet(cfg, fs)}
	if cfg.Wall != nil {
		s.wall = newWallState(*cfg.Wall, cfg.StrictWall)
	}
	s.handing.stopped, s.handing.wake = make(chan struct{}), -1
	if cfg.KeepOrphans {
		var err error
		if s.handing.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
			return nil, fmt.Errorf("supervisor: eventfd for --keep-orphans: %w", err)
		}
	}
	// The agent starts with the signal mask paddock was started with, not
	// whatever the launching thread holds at the fork. A thread running Go
	// code holds it, less the signals the runtime must handle itself.
	var err error
	if s.sigmask, err = fs.SigBlk(); err != nil {
		cfg.Log.Debug().Err(err).Msg("the agent starts with no signal blocked")
		s.sigmask = 0
	}
	sg := cfg.Signals
	if sg == nil {
		sg = CatchSignals(cfg.Init, cfg.Log)
	}
	s.sigs, s.sigign = sg, sg.ignored
	if s.tree, err = ownership.NewTree(fs, os.Getpid()); err != nil {
		s.sigs.Stop()
		return nil, err
	}
	s.pipeline = report.New(report.Options{Log: cfg.Log, FS: fs, Journal: cfg.Journal, NotifyStderr: cfg.NotifyStderr,
		LogFile: cfg.LogFile, Relayed: cfg.Terminal})
	s.ended = make(chan struct{})
	s.reporting.Add(1) // Wait's, or a failed start's
	go func() {
		s.reporting.Wait()
		s.pipeline.Close()
		close(s.ended)
	}()
	if s.control, err = control.Listen(control.Options{Timeout: cfg.controlTimeout, Log: cfg.Log}, summarisedOps{controlOps{s}}); err != nil {
		s.sigs.Stop()
		s.reporting.Done()
		<-s.ended // a failed start leaves nothing running
		return nil, err
	}
	if s.wall != nil {
		var st unix.Stat_t
		if unix.Stat(s.control.Path(), &st) == nil {
			s.wall.control, s.wall.serveControl = devIno{st.Dev, st.Ino}, s.control.ServeConn
		}
		s.wall.relayBus = s.relayBus
	}

	// Before the agent starts: the kernel logs a domain's first denial
	// with the record that says whose domain it is, once.
	s.startWallAudit()
	started := make(chan error, 1)
	s.reporting.Add(1) // done when launchAndReap returns
	// The launching thread must outlive the agent: Pdeathsig fires when the
	// thread that forked it exits (golang/go#27505). It then becomes the reaper.
	go s.launchAndReap(started)
	if err := <-started; err != nil {
		s.sigs.Stop()
		if s.kernelAudit != nil {
			s.kernelAudit.r.Close()
		}
		_ = s.control.Close()
		s.reporting.Done()
		<-s.ended
		return nil, err
	}
	// Only now that the agent (or its init) is forked: children inherit
	// their parent thread's scheduling, and the supervising setting is for
	// this process's threads alone.
	if cfg.Slice > 0 || cfg.Boost > 0 {
		if _, taken, err := sched.Supervise(cfg.Slice, cfg.Boost); err != nil {
			cfg.Log.Debug().Err(err).Msg("supervising threads keep their scheduling")
		} else {
			cfg.Log.Debug().Dur("slice", taken.Slice).Int("nice", taken.Nice).Msg("supervising threads scheduled")
		}
	}
	if cfg.OOMScoreAdj != 0 {
		// Only now that the agent is forked: it is inherited at fork, and
		// the agent, which uses the memory, must stay the first choice.
		if prev, err := lowerOOMScoreAdj(cfg.OOMScoreAdj); err != nil {
			cfg.Log.Debug().Err(err).Msg("the supervisor keeps its oom_score_adj (lowering it needs CAP_SYS_RESOURCE)")
		} else {
			cfg.Log.Debug().Int("oom_score_adj", min(prev, cfg.OOMScoreAdj)).Int("agent_keeps", prev).Msg("the supervisor is the OOM killer's late choice")
		}
	}
	go s.sweepLeases(time.Second)
	go s.forward()
	return s, nil
}

// Pid is the agent root's pid.
func (s *Session) Pid() int { return s.rootPid }

// Signal sends sig to the agent root.
func (s *Session) Signal(sig syscall.Signal) error {
	if err := unix.PidfdSendSignal(s.rootFd, sig, nil, 0); err != nil {
		return fmt.Errorf("signal agent %d: %w", s.rootPid, err)
	}
	return nil
}

// Kill sends SIGKILL to the agent root.
func (s *Session) Kill() error { return s.Signal(unix.SIGKILL) }

// Adopt makes pid (and its descendants) owned by the session, with a reason
// that goes to the journal. It is refused for a blank reason, PID <= 1, a
// kernel thread or a process that does not exist, and for a lifeline (the
// supervisor, its ancestors, the agent itself) unless lifelineOK.
func (s *Session) Adopt(pid int, reason string, lifelineOK bool) (LeaseInfo, error) {
	l, err := s.adopt(pid, reason, lifelineOK, fmt.Sprintf("library (pid %d)", os.Getpid()))
	if err != nil {
		return LeaseInfo{}, err
	}
	s.summariseAdoption(leaseInfo(l))
	return leaseInfo(l), nil
}

// Release drops the lease on pid.
func (s *Session) Release(pid int) error {
	_, err := s.release(pid, fmt.Sprintf("library (pid %d)", os.Getpid()))
	return err
}

// KillProcess signals pid on behalf of the program using this package, with
// the same rules as `paddock kill`: only owned processes, and their whole
// group only when every member is owned.
func (s *Session) KillProcess(pid int, sig syscall.Signal) (Signalled, error) {
	sd, err := s.kill(os.Getpid(), pid, int(sig))
	if err != nil {
		return Signalled{}, err
	}
	return *sd, nil
}

// SocketPath is the session's control socket (what the agent sees in PADDOCK_SOCKET).
func (s *Session) SocketPath() string { return s.control.Path() }

// Wait blocks until the agent root exits and returns its exit code: its
// status, or 128+N when it died of signal N. The processes the agent left
// running then get SIGTERM, and SIGKILL after the grace period (unless
// KeepOrphans), and the control socket closes. Wait may be called again; it
// cleans up once.
func (s *Session) Wait() int {
	<-s.done
	s.waitOnce.Do(func() {
		// In the background: giving each signal back is a round trip
		// too, and a signal that comes meanwhile finds the agent gone
		// and is dropped, as an init drops it.
		go s.sigs.Stop()
		if !s.cfg.KeepOrphans {
			grace := s.cfg.Grace
			switch {
			case grace == 0:
				grace = DefaultGrace
			case grace < 0:
				grace = 0
			}
			s.cleaned = s.cleanup(grace)
			if s.cleaned.Left > 0 {
				s.cfg.Log.Info().Int("left", s.cleaned.Left).Int("terminated", s.cleaned.Terminated).Int("killed", s.cleaned.Killed).
					Msg("cleaned up the processes the agent left running")
			}
		}
		// The kernel's records of what the agent did last, before the
		// summary is read.
		s.stopWallAudit()
		s.pipeline.Flush()
		_ = s.control.Close()
		s.reporting.Done()
	})
	return ExitCode(s.status)
}

// Cleaned says what Wait did with the agent's leftover processes.
func (s *Session) Cleaned() Cleanup { return s.cleaned }

// Summary counts the session's refusals so far (complete after Wait).
func (s *Session) Summary() report.Summary { return s.pipeline.Summary() }

// ExitCode converts a wait status to a shell-style exit code.
func ExitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 255
}

// relayBus relays one of the agent's connections to a D-Bus bus through
// paddock's filter (package dbusproxy) until either side closes: caller
// is the process that connected, env its environment (its opt-in to power
// control). The filter's refusals are reported like any other: the
// caller's stderr, the log, the journal (deputy_denied), the summary.
func (s *Session) relayBus(client, bus *net.UnixConn, dep policy.Deputy, caller int, abi string, env []string) {
	name := "system"
	if dep == policy.DeputySessionBus {
		name = "session"
	}
	_, opted := guard.OptedIn(env)
	p := dbusproxy.Policy{
		AllowPower: opted && s.cfg.Guard.AllowOptIn,
		NoOptIn:    !s.cfg.Guard.AllowOptIn,
		OwnsPID: func(pid int) bool {
			rel, _, err := s.tree.Classify(pid)
			return err == nil && (rel == audit.RelOwned || rel == audit.RelAgentRoot)
		},
	}
	go func() {
		err := dbusproxy.Relay(client, bus, name, p, func(r dbusproxy.Refusal) {
			s.pipeline.Decided(report.Event{Caller: caller, ABI: abi, Decision: policy.Decision{
				Syscall: "sendmsg", Errno: unix.EACCES, Rule: audit.Rule(r.Rule), Refusal: true,
				Message: r.Message, Action: audit.DeputyDenied,
			}, Labels: busLabels(r)})
		})
		if err != nil {
			s.cfg.Log.Debug().Err(err).Str("bus", name).Int("caller", caller).Msg("D-Bus relay ended")
		}
	}()
}

// busLabels are what a D-Bus filter's refusal names, for the journal
// (every label) and the log line (the bus and the method).
func busLabels(r dbusproxy.Refusal) []report.Label {
	ls := []report.Label{{Key: "bus", Value: r.Bus, Logged: true}}
	for _, l := range []report.Label{
		{Key: "destination", Value: r.Destination},
		{Key: "method", Value: strings.TrimPrefix(r.Interface+"."+r.Member, "."), Logged: true},
		{Key: "unit", Value: r.Unit, Logged: true},
	} {
		if l.Value != "" {
			ls = append(ls, l)
		}
	}
	return ls
}
