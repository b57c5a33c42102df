package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/leftover"
)

// sessionInfo is one running session as paddock sessions shows it.
type sessionInfo struct {
	Pid       int      `json:"pid"`               // the paddock running it
	AgentPid  int      `json:"agent_pid"`         // CMD
	Command   []string `json:"command,omitempty"` // CMD's argv, as /proc shows it now
	Processes int      `json:"processes"`         // how many processes it owns
	Socket    string   `json:"socket"`            // its control socket
	Dir       string   `json:"dir"`               // its session directory
	Error     string   `json:"error,omitempty"`   // why it could not be asked (pid is then the owner record's)
	// Ended: a keeper of what an ended session left running (paddock run
	// --keep-orphans), not a running session.
	Ended *control.Ended `json:"ended,omitempty"`
}

func newSessionsCmd() *cobra.Command {
	var asJS bool
	cmd := &cobra.Command{
		Use:   "sessions [--json]",
		Short: "List your running paddock sessions and their control sockets",
		Long: `List the paddock run sessions of your user that are running now, from
anywhere (inside a session or outside every one): paddock's pid, the pid and
command line of CMD, how many processes the session owns, and its control
socket, which adopt, release, ps and kill take as --socket PATH.

paddock looks for session directories in every place a paddock run of yours
may have put one, whatever its environment was: $XDG_RUNTIME_DIR,
/run/user/UID, $TMPDIR, /dev/shm and /tmp. A session is listed when its
directory is yours (mode 0700) and its socket answers; the directories of
paddock runs that were killed are not (paddock doctor removes them). Another
user's sessions are never listed: their directories are not yours to read.
A session that ended under --keep-orphans and left processes running is
listed too, as long as they run: its keeper's pid, "-" for the agent, and
"(left by session ID, ended TIME)"; ps and kill take its socket.
--json prints an array of objects with pid, agent_pid, command, processes,
socket, dir and, for a keeper, ended (session and at).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			found, errs := control.Sessions(control.SessionBases())
			for _, e := range errs {
				fmt.Fprintf(os.Stderr, "paddock sessions: %s\n", e)
			}
			infos := make([]sessionInfo, 0, len(found))
			for _, s := range found {
				infos = append(infos, describeSession(s, procfs.Default()))
			}
			if asJS {
				return printJSON(infos)
			}
			return printSessions(cmd.OutOrStdout(), infos)
		},
	}
	cmd.Flags().BoolVar(&asJS, "json", false, "print a JSON array")
	return cmd
}

// describeSession asks the session's supervisor which processes it owns
// (the ps request) and reads its agent's command line.
func describeSession(s control.SessionDir, fs procfs.FS) sessionInfo {
	info := sessionInfo{Socket: s.Socket, Dir: s.Dir}
	resp, err := control.Call(s.Socket, control.Request{Op: control.OpPs})
	if err == nil && !resp.OK {
		err = fmt.Errorf("%s", resp.Error)
	}
	if err != nil {
		info.Error = err.Error()
		info.Pid = s.Owner.Pid
		return info
	}
	info.Pid, info.AgentPid, info.Processes = resp.Session.Supervisor, resp.Session.Agent, len(resp.Processes)
	info.Ended = resp.Session.Ended
	if info.AgentPid > 0 {
		if argv, err := fs.Cmdline(info.AgentPid, 4096); err == nil {
			info.Command = argv
		}
	}
	return info
}

// printSessions writes the table: one row per session.
func printSessions(w io.Writer, infos []sessionInfo) error {
	if len(infos) == 0 {
		_, err := fmt.Fprintln(w, "no paddock sessions of yours are running")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tAGENT\tPROCS\tSOCKET\tCOMMAND")
	for _, s := range infos {
		if s.Error != "" {
			fmt.Fprintf(tw, "%d\t-\t-\t%s\t(not answering: %s)\n", s.Pid, s.Socket, oneLine(s.Error))
			continue
		}
		if s.Ended != nil {
			fmt.Fprintf(tw, "%d\t-\t%d\t%s\t%s\n", s.Pid, s.Processes, s.Socket, leftover.Describe(*s.Ended))
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\n", s.Pid, s.AgentPid, s.Processes, s.Socket, shellLine(s.Command, 60))
	}
	return tw.Flush()
}

// shellLine shows argv on one line as a shell would take it back (an
// argument with spaces, quotes or anything a terminal would not show as
// itself is quoted, escapes included), cut to max columns with "…".
func shellLine(argv []string, max int) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = a
		if a == "" || strings.IndexFunc(a, func(r rune) bool {
			return !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(`"'\$`+"`", r)
		}) >= 0 {
			parts[i] = strconv.Quote(a)
		}
	}
	line := strings.Join(parts, " ")
	if r := []rune(line); len(r) > max {
		line = string(r[:max-1]) + "…"
	}
	return line
}
