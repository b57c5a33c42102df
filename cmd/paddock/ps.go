package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
)

func newPsCmd() *cobra.Command {
	var (
		socket string
		asJS   bool
	)
	cmd := &cobra.Command{
		Use:   "ps [--json]",
		Short: "List the processes the session owns",
		Long: `List the processes the running session owns: the agent and everything it
started ("tree"), and adopted processes with their descendants ("adopted").
--json prints an array of objects with pid, ppid, comm, start_time, owned_by,
agent, reason, adopted_at and lease (the adopted ancestor it is owned through).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := call("ps", socket, control.Request{Op: control.OpPs})
			if err != nil {
				return err
			}
			if asJS {
				ps := resp.Processes
				if ps == nil {
					ps = []control.Process{}
				}
				return printJSON(ps)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PID\tPPID\tOWNED BY\tCOMM\tREASON")
			for _, p := range resp.Processes {
				by := p.OwnedBy
				switch {
				case p.Agent:
					by = "agent"
				case p.Lease != 0:
					by = fmt.Sprintf("adopted via %d", p.Lease)
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", p.Pid, p.PPid, by, printable(p.Comm), printable(p.Reason))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJS, "json", false, "print JSON")
	addSocketFlag(cmd, &socket)
	return cmd
}
