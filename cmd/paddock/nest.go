package main

import (
	"fmt"
	"os"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// paddock run inside a paddock session does one thing: it refuses to
// start, saying which session it is in. A second session there would not
// get what it asks for: the kernel gives a filter chain one seccomp
// listener, so it would fall back to ptrace beneath the outer listener,
// which answers first; refusals would show twice (the outer session's
// message, then the inner's) and the inner summary would miss them. The
// outer session already decides every process-control call and exec of
// what CMD would start.

// enclosingSession is the session a process runs inside.
type enclosingSession struct {
	pid    int    // the paddock that runs it
	socket string // its control socket
}

// findEnclosingSession says whether this process runs inside a paddock
// session of its user: a session whose ownership tree (not an adoption)
// holds this very process, by pid and start time. Only a process under a
// seccomp filter can be inside one (every session's agent runs under
// paddock's filter, with either backend), so a process without one costs
// one read of /proc/self/status. The sessions asked are $PADDOCK_SOCKET's
// first, then every running session of the user (control.Sessions), so
// that an agent that cleared its environment is found too.
func findEnclosingSession(fs procfs.FS, getenv func(string) string) (enclosingSession, bool) {
	if mode, _, err := fs.Seccomp(os.Getpid()); err == nil && mode != 2 {
		return enclosingSession{}, false
	}
	self, err := fs.Self()
	if err != nil {
		return enclosingSession{}, false
	}
	var sockets []string
	if s := getenv(control.SocketEnv); s != "" {
		sockets = append(sockets, s)
	}
	found, _ := control.Sessions(control.SessionBases())
	for _, s := range found {
		sockets = append(sockets, s.Socket)
	}
	asked := map[string]bool{}
	for _, sock := range sockets {
		if asked[sock] {
			continue
		}
		asked[sock] = true
		resp, err := control.Call(sock, control.Request{Op: control.OpPs})
		if err != nil || !resp.OK {
			continue
		}
		for _, p := range resp.Processes {
			if p.Pid == self.Pid && p.StartTime == self.StartTime && p.OwnedBy == "tree" {
				return enclosingSession{pid: resp.Session.Supervisor, socket: sock}, true
			}
		}
	}
	return enclosingSession{}, false
}

// nestedError is paddock run's refusal to start inside session s.
func nestedError(s enclosingSession) error {
	return fmt.Errorf("run: this process is already inside a paddock session (paddock pid %d, control socket %s), "+
		"which decides every kill, ptrace and exec of what CMD would start; a session does not start inside another "+
		"(the kernel gives a process one seccomp listener), so CMD was not run. "+
		"Way out: run CMD directly here, where it is supervised already (paddock ps lists what the session owns), "+
		"or start paddock run outside the session to give CMD a session and flags of its own (docs/harness.md)",
		s.pid, s.socket)
}
