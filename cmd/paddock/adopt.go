package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
)

func newAdoptCmd() *cobra.Command {
	var (
		socket, reason   string
		lifelineOK, asJS bool
	)
	cmd := &cobra.Command{
		Use:   "adopt PID --reason TEXT [--lifeline-ok]",
		Short: "Make a process the agent did not start its own, with a reason",
		Long: `Adopt PID into the running session, so that the agent may signal it (and its
descendants) like a process it started. The reason is required and goes to the
audit journal, which is fsync'd before the adoption is acknowledged.

Refused: a blank reason; PID 1, a negative or nonexistent PID, a kernel thread;
a critical session lifeline (the paddock supervisor, its ancestors, the agent
itself) unless --lifeline-ok, an override that is journaled on its own.
The lease ends when the process exits (or its PID is reused), or on paddock release.

PID is read in the PID namespace of the process that runs paddock adopt (inside
bubblewrap or unshare --pid, the number the sandbox gives the process); a PID
that names nothing there is refused, never taken for another process.`,
		Args: exactPID,
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return usageError("adopt: --reason TEXT is required, a non-empty reason: say why the agent must control this process (it goes to the journal)")
			}
			resp, err := call("adopt", socket, control.Request{Op: control.OpAdopt, Pid: pid, Reason: reason, LifelineOK: lifelineOK})
			if err != nil {
				return err
			}
			if asJS {
				return printJSON(resp.Lease)
			}
			fmt.Println(adoptedLine(*resp.Lease))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the agent must control this process (required)")
	cmd.Flags().BoolVar(&lifelineOK, "lifeline-ok", false, "allow adopting a critical session lifeline (journaled as self_lifeline_override)")
	cmd.Flags().BoolVar(&asJS, "json", false, "print the lease as JSON")
	addSocketFlag(cmd, &socket)
	return cmd
}

// adoptedLine is what paddock adopt prints: one line for the one action,
// whatever the reason holds (its line breaks become spaces).
func adoptedLine(l control.LeaseInfo) string {
	line := fmt.Sprintf("adopted pid %d (%s): %s", l.Pid, printable(oneLine(l.Comm)), printable(oneLine(l.Reason)))
	if l.LifelineOverride {
		line += " (a session lifeline: the override is journaled as self_lifeline_override)"
	}
	return line
}

func newReleaseCmd() *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "release PID",
		Short: "End the adoption of a process",
		Long: `Release PID: the session stops owning the process it adopted (processes the agent
started stay owned). Journaled as "released".`,
		Args: exactPID,
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			resp, err := call("release", socket, control.Request{Op: control.OpRelease, Pid: pid})
			if err != nil {
				return err
			}
			fmt.Printf("released pid %d (%s)\n", resp.Released.Pid, printable(resp.Released.Comm))
			return nil
		},
	}
	addSocketFlag(cmd, &socket)
	return cmd
}
