package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/signame"
	"github.com/paddock-dev/paddock/policy"
)

func newKillCmd() *cobra.Command {
	var socket, sig string
	cmd := &cobra.Command{
		Use:   "kill [-s SIG] PID",
		Short: "Signal a process the session owns",
		Long: `Signal PID through the session's supervisor, under the same rules as a kill(2)
from the agent: only owned processes. The whole process group is signalled only
when PID leads it and every member is owned; otherwise PID alone. It reports
what it signalled. SIG is a name (TERM, SIGKILL) or a number; default TERM.`,
		Args: exactPID,
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[0])
			if err != nil {
				return err
			}
			n, err := parseSignal(sig)
			if err != nil {
				return err
			}
			resp, err := call("kill", socket, control.Request{Op: control.OpKill, Pid: pid, Signal: n})
			if err != nil {
				return err
			}
			sd := resp.Signalled
			if sd.Group {
				fmt.Printf("signalled process group %d (%d processes: %s) with %s\n", sd.Pid, len(sd.Members), joinInts(sd.Members), policy.SignalName(sd.Signal))
			} else {
				fmt.Printf("signalled pid %d (%s) with %s\n", sd.Pid, printable(sd.Comm), policy.SignalName(sd.Signal))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&sig, "signal", "s", "TERM", "signal name or number")
	addSocketFlag(cmd, &socket)
	return cmd
}

// parseSignal accepts "TERM", "SIGTERM", "sigterm" or "15".
func parseSignal(s string) (int, error) {
	if n, ok := signame.Number(s); ok {
		return n, nil
	}
	return 0, usageError(fmt.Sprintf("-s %q: not a signal; want a name such as TERM, KILL, HUP, INT, USR1 or a number 0-64", s))
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, " ")
}
