package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/agent"
	"github.com/paddock-dev/paddock/journal"
)

type agentFlags struct {
	socket, journal, profile string
	logFormat, logLevel      string
	takeover                 bool
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent [--socket PATH] [--journal FILE] [--profile FILE]",
		Short: "Serve every container of a node through the OCI runtime's seccomp listener (fleet mode)",
		Long: `paddock agent listens on PATH, the listenerPath of the containers' seccomp
profile: the OCI runtime (runc 1.1+, crun) connects for each container it
creates and each runc exec, and hands over the container's seccomp listener
with its state. paddock then decides every trapped call of every container
with the policy core of paddock run: a container's processes may signal each
other, but not the container's first process from its descendants, nor any
process outside the container (other containers, a pod's pause process, the
node's processes in a hostPID pod). A refusal is EPERM with a message on the
caller's stderr, a log line and a journal record naming the container (id,
bundle, the pod's namespace, name and container name from the CRI
annotations, and the profile's listenerMetadata).

Only the agent's own user may connect: root for a node's agent (the runtime
runs as root; --socket is required), the user for a rootless engine's
(rootless podman's runtime runs as the user): run as a user, paddock agent
serves that user's containers only, on $XDG_RUNTIME_DIR/paddock/agent.sock
by default, which paddock agent profile then names too. When the agent
stops, the containers' trapped calls fail with ENOSYS and the runtime
refuses to create new containers with the profile: run it as a DaemonSet
(docs/kubernetes.md), or as a user service (docs/fleet.md, "Rootless
podman"). Pid arguments are the container's own numbers; exec is not
trapped.

--takeover upgrades without breaking running containers: the new agent asks
the one serving PATH for every listener it serves and for the socket itself;
the old one first has it prove that it may take descriptors out of the old
one (root with CAP_SYS_PTRACE, in the node's PID namespace: what stealing
them would take), logs its pid and executable, hands them over and then
serves nothing until it is stopped (SIGTERM), and the containers' calls wait
in the kernel's queue meanwhile (docs/fleet.md). With nothing serving PATH,
--takeover listens afresh.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgent(f) },
	}
	cmd.Flags().StringVar(&f.socket, "socket", "", "unix socket `PATH` the runtime connects to (the profile's listenerPath; absolute; required as root, else default $XDG_RUNTIME_DIR/paddock/agent.sock)")
	cmd.Flags().StringVar(&f.journal, "journal", "", "append audit records (JSON Lines) to `FILE` (default $PADDOCK_JOURNAL, else $XDG_STATE_HOME/paddock/journal.jsonl)")
	cmd.Flags().StringVar(&f.profile, "profile", "", "host profile `FILE` (TOML; default $PADDOCK_PROFILE, else $XDG_CONFIG_HOME/paddock/profile.toml); a broken profile stops paddock before it listens")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "console", "log format on stderr: `console` or json")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	cmd.Flags().BoolVar(&f.takeover, "takeover", false, "take every container and the socket over from the agent serving PATH, which then exits (an upgrade)")
	cmd.AddCommand(newAgentProfileCmd(), newAgentWrapperCmd())
	return cmd
}

func newAgentWrapperCmd() *cobra.Command {
	var socket, metadata, runtime string
	cmd := &cobra.Command{
		Use:   "runtime-wrapper --socket PATH [--metadata TEXT] [--runtime RUNTIME] -- RUNTIME-ARGS...",
		Short: "Stand in for the OCI runtime of an engine that drops listenerPath (Docker 20.10)",
		Long: `paddock agent runtime-wrapper stands in for the OCI runtime an engine calls,
for engines that drop the seccomp profile's listenerPath and keep its
SCMP_ACT_NOTIFY rules (Docker 20.10: runc then refuses the container, crun
runs it unserved). Before the runtime's create or run, it writes the agent's
socket PATH back into the bundle's config.json as listenerPath (and TEXT as
listenerMetadata), where the profile has NOTIFY rules and no listenerPath;
then it execs RUNTIME (runc by default) with RUNTIME-ARGS unchanged. Every
other command (start, exec, kill, delete, state) goes to the runtime as it
came. Docker's daemon.json names it as a runtime with runtimeArgs; see
docs/fleet.md, "Docker".`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" {
				return fmt.Errorf("--socket is required: the path paddock agent --socket listens on")
			}
			path, err := exec.LookPath(runtime)
			if err != nil {
				return fmt.Errorf("--runtime %s: %w", runtime, err)
			}
			dir, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("runtime wrapper: %w", err)
			}
			if _, bundle := agent.RuntimeBundle(args, dir); bundle != "" {
				if _, err := agent.PatchBundle(bundle, socket, metadata); err != nil {
					fmt.Fprintf(os.Stderr, "paddock: %v; the container is not started\n", err)
					return exitError{code: 1}
				}
			}
			err = syscall.Exec(path, append([]string{path}, args...), os.Environ())
			fmt.Fprintf(os.Stderr, "paddock: runtime wrapper: exec %s: %v\n", path, err)
			return exitError{code: 1}
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the agent's socket `PATH`, written as listenerPath (absolute)")
	cmd.Flags().StringVar(&metadata, "metadata", "", "listenerMetadata `TEXT` for a profile that has none, journaled with each refusal")
	cmd.Flags().StringVar(&runtime, "runtime", "runc", "the OCI `RUNTIME` to exec (a name on PATH or a path): runc or crun")
	return cmd
}

func newAgentProfileCmd() *cobra.Command {
	var socket, format, metadata, output string
	cmd := &cobra.Command{
		Use:   "profile [--socket PATH] [--format oci|kubernetes|spo]",
		Short: "Print the seccomp profile that hands a container's listener to paddock agent",
		Long: `paddock agent profile prints the seccomp section a container needs to be
served by the agent listening on PATH: SCMP_ACT_NOTIFY on exactly the calls
paddock run's filter traps (from the same tables), with their argument
filters, but exec, the power calls and the terminal ioctls, which fleet mode
does not decide; the calls a runtime's default profile refuses still refused
(EPERM), and everything else allowed. Run as a user without --socket, it
names that user's agent, $XDG_RUNTIME_DIR/paddock/agent.sock (rootless
podman: podman run --security-opt seccomp=FILE).

  oci         the linux.seccomp object of a config.json (JSON; the default)
  kubernetes  the file kubelet reads for a Localhost profile (the same JSON),
              to put under /var/lib/kubelet/seccomp/
  spo         a Security Profiles Operator SeccompProfile (YAML); its
              listener path must lie under /var/run/security-profiles-operator/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			socket, _, err := agentSocket(socket, "the path paddock agent --socket listens on")
			if err != nil {
				return err
			}
			p, err := agent.Profile(socket, metadata)
			if err != nil {
				return err
			}
			b, err := agent.RenderProfile(p, format)
			if err != nil {
				return err
			}
			if output != "" {
				return writeFileAtomic(output, b)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the agent's socket `PATH` (listenerPath; absolute; required as root, else default $XDG_RUNTIME_DIR/paddock/agent.sock)")
	cmd.Flags().StringVar(&format, "format", "oci", "output `FORMAT`: oci, kubernetes or spo")
	cmd.Flags().StringVar(&metadata, "metadata", "", "listenerMetadata `TEXT`, journaled with each refusal")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to `FILE` (its directory made if missing; replaced whole, never half-written) instead of stdout: what an init container without a shell uses to install the kubelet profile")
	return cmd
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so that a reader (kubelet) never sees half a file.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--output %s: %w", path, err)
	}
	return nil
}

// agentSocket is the agent's socket: flag where given; else, for a user
// (not root), its per-user agent's, $XDG_RUNTIME_DIR/paddock/agent.sock
// (byDefault). Root has no default: a node's socket is the path its
// profiles and its DaemonSet agree on. what says what the path is, for the
// error.
func agentSocket(flag, what string) (path string, byDefault bool, err error) {
	if flag != "" {
		return flag, false, nil
	}
	if os.Geteuid() == 0 {
		return "", false, fmt.Errorf("--socket is required as root: %s (docs/fleet.md uses /run/paddock/agent.sock); run as a user, paddock agent defaults to $XDG_RUNTIME_DIR/paddock/agent.sock", what)
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(dir) {
		return "", false, fmt.Errorf("--socket is required: %s; the per-user default lies under $XDG_RUNTIME_DIR, which is %q (want an absolute path: the user's runtime directory, /run/user/%d where logind makes it)", what, dir, os.Geteuid())
	}
	return filepath.Join(dir, "paddock", "agent.sock"), true, nil
}

func runAgent(f agentFlags) error {
	socket, byDefault, err := agentSocket(f.socket, "the path the containers' seccomp profile names as listenerPath")
	if err != nil {
		return err
	}
	f.socket = socket
	if byDefault {
		// Only the user may reach it: the directory is the user's alone.
		if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
			return fmt.Errorf("agent socket directory: %w", err)
		}
	}
	log, err := newLogger(f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	prof, err := loadProfile(f.profile)
	if err != nil {
		return err
	}
	j, err := openJournal(f.journal, journal.Options{}, log)
	if err != nil {
		return err
	}
	if j != nil {
		defer j.Close()
	}
	s := &agent.Server{Journal: j, Log: log, Guard: prof.GuardPolicy(), Owner: uint32(os.Geteuid())}
	var ln *net.UnixListener
	if f.takeover {
		start := time.Now()
		t, err := agent.TakeOver(f.socket)
		switch {
		case errors.Is(err, agent.ErrNoAgent):
			log.Info().Err(err).Msg("nothing to take over: listening afresh")
		case err != nil:
			return err
		default:
			log.Info().Dur("took", time.Since(start)).Msg("took over from the running agent")
			s.Taken, ln = t, t.Listener
		}
	}
	if ln == nil {
		if ln, err = agent.ListenPath(f.socket); err != nil {
			return err
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	stopped := make(chan struct{})
	go func() {
		s := <-sigs
		log.Info().Str("signal", s.String()).Msg("stopping: the containers' trapped calls fail with ENOSYS until an agent serves them again")
		ln.Close()
		close(stopped)
	}()
	jpath := ""
	if j != nil {
		jpath = j.Path()
	}
	log.Info().Str("socket", f.socket).Str("journal", jpath).Int("serves_uid", os.Geteuid()).Msg("fleet agent listening")
	if err := s.Serve(ln); err != nil {
		return err
	}
	if s.HandedOver() {
		// An orchestrator would start this agent again if it exited, and
		// take everything back: it waits to be stopped instead.
		log.Info().Msg("handed over: serving nothing; stop this agent with SIGTERM")
		<-stopped
	}
	return nil
}
