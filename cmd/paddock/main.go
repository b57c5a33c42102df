// Command paddock runs an AI agent (or any command) so that it can only
// signal, trace or write into the processes it owns. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/supervisor"
)

// exitError carries an exit status out of a subcommand.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	reexec.Run(supervisor.InitChild(), features.ProbeChild(), keeperChild())
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	root := newRootCmd()
	root.SetArgs(tiniArgs(args))
	err := root.Execute()
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "paddock: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(os.Stderr, "paddock: %v\n", err)
		return 2
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "paddock",
		Short: "Run an agent so it can only signal, trace or write into what it owns",
		Long: `paddock runs an AI agent, a CI job or any command under a seccomp filter whose
trapped syscalls (kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo,
pidfd_send_signal, ptrace, process_vm_writev, pidfd_getfd, and the calls that
harm a process without a signal: prlimit64, setpriority, sched_set*,
ioprio_set, perf_event_open, migrate_pages, move_pages, process_madvise,
vhangup) are decided by a supervisor against the agent's ownership tree. A refused call fails with EPERM
and a message, on the caller's stderr, in the log and in the audit journal,
saying what was refused, why, and the way out.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(newRunCmd())
	root.AddCommand(newPreflightCmd())
	root.AddCommand(newCheckCmd(), newProfileCmd())
	root.AddCommand(newJournalCmd())
	root.AddCommand(newAdoptCmd(), newReleaseCmd(), newPsCmd(), newKillCmd(), newSessionsCmd())
	root.AddCommand(newDoctorCmd(), newAgentCmd())
	root.AddCommand(newVersionCmd(), newCompletionCmd(), newManCmd())
	// --version is paddock's own flag, not cobra's (root.Version): cobra
	// prints its version through a text/template when the format is
	// anything but its own, and a text/template reachable from main keeps
	// the linker from dropping any exported method of any type it links
	// (reflect's MethodByName): a bigger binary, more of it resident in a
	// container whose init paddock is. The build information is read only
	// when asked for, not at every start.
	showVersion := root.Flags().BoolP("version", "v", false, "print paddock's version (as paddock version does)")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *showVersion {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		}
		return cmd.Help()
	}
	applyManuals(root)
	installHelp(root)
	installCompletions(root)
	return root
}

// usageError is a bad invocation: printed with a hint, exit status 2.
type usageError string

func (e usageError) Error() string { return string(e) }

// parsePID reads a PID argument.
func parsePID(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, usageError(fmt.Sprintf("%q is not a PID (want a decimal process id)", s))
	}
	return n, nil
}

// exactPID is the argument rule of the commands that take one PID.
func exactPID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageError(fmt.Sprintf("%s takes exactly one PID, got %d arguments", cmd.Name(), len(args)))
	}
	return nil
}
