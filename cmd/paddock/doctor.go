package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/features"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Report what this kernel and this process give paddock, and which backend auto would pick",
		Long: `Report what this kernel and this process give paddock: the seccomp actions,
user notification and its flags (CONTINUE, WAIT_KILLABLE_RECV, SYNC_WAKE_UP),
whether a seccomp listener can be installed here at all (tried in a throwaway
child), pidfd_open, pidfd_send_signal, pidfd_getfd, the child subreaper,
Landlock, whether the kernel's audit records of Landlock denials reach
paddock (a throwaway thread, in a Landlock domain of its own, is refused a
connection, and doctor waits up to a second for that denial's record),
cgroup v2, IA32 emulation, ptrace (Yama), the seccomp filters this
process already runs under, whether another listener holds them, whether BPF
programs can be attached to LSM hooks here (a no-op program is loaded and
attached for an instant, and the exact reason given where it cannot), and whether
this node's OCI runtime (runc, crun) supports listenerPath for paddock agent,
and whether a session's control socket can be made here (one is made and
removed at once: a sandbox that refuses unix sockets stops paddock run
however well the rest looks); then the backend paddock run --backend auto would pick (seccomp, ptrace or
none) and why. It also removes the session directories of your own paddock
runs that are gone (killed with SIGKILL, an OOM kill) and says how many it
found and removed, as paddock run does at each start.

One line per item: ok, MISSING (with what it costs), unknown (with why) or
n/a. --json prints the same as one object: kernel, machine, arch, items (id,
name, status, value, note), listener_probe, backend (name, reason) and
stale_sessions (bases, found, removed, kept, errors). See docs/doctor.md.
Apart from those directories, and the record of its probe's one Landlock
denial (in the system's audit log, and in the kernel's where no audit
daemon runs), doctor changes nothing on the host.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := features.Probe("")
			r.Items = append(r.Items, runtimeItem(lookRuntime(exec.LookPath, runtimeDirs), runtimeVersion, features.HybridCgroups()))
			sw := control.Sweep()
			r.Items = append(r.Items, sweptItem(sw))
			ci := controlItem(listenControl)
			r.Items = append(r.Items, ci)
			if ci.Status == features.Missing {
				r.Backend.Name, r.Backend.Reason = "none", "paddock run cannot start here: "+ci.Value+" (control socket)"
			}
			var err error
			if asJSON {
				err = printJSON(struct {
					features.Report
					StaleSessions control.Swept `json:"stale_sessions"`
				}{r, sw})
			} else {
				err = printDoctor(os.Stdout, r)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "paddock: doctor: write the report: %v\n", err)
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// statusWord is how the text report shows a status: what is missing shouts.
func statusWord(s features.Status) string {
	if s == features.Missing {
		return "MISSING"
	}
	return string(s)
}

// printDoctor writes the text report: one line per item, then the backend.
func printDoctor(w io.Writer, r features.Report) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, it := range r.Items {
		line := it.Value
		if it.Note != "" {
			line += " -- " + it.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", statusWord(it.Status), it.Name, oneLine(line))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "backend: %s -- %s\n", r.Backend.Name, oneLine(r.Backend.Reason))
	return err
}

// oneLine keeps a value read from the system (an error, a child's stderr)
// from breaking the one-line-per-item layout.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
