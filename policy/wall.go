package policy

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
)

// Deputy names a process of the user's that acts for whoever talks to it,
// under its own identity: what a unix socket (or, for GNU screen, a FIFO)
// reaches.
type Deputy string

// The deputies paddock knows.
const (
	DeputyNone        Deputy = ""
	DeputyTmux        Deputy = "tmux"   // a tmux server: kill-server, send-keys into the user's panes
	DeputyScreen      Deputy = "screen" // a GNU screen session: -X quit, stuff
	DeputyDocker      Deputy = "docker" // the Docker daemon's API: any container, the host as root
	DeputyPodman      Deputy = "podman" // the Podman API service
	DeputySystemBus   Deputy = "system bus"
	DeputySessionBus  Deputy = "session bus"
	maxForeignInGroup        = 3
)

// Bus reports whether d is a D-Bus bus, whose calls paddock filters.
func (d Deputy) Bus() bool { return d == DeputySystemBus || d == DeputySessionBus }

// Wall is what a front end read of a walled call (filter.Syscall.Walled)
// and found of its target, resolved as the caller sees it: the file an open
// for writing reaches, the socket a connect or sendto names. Decide
// performs no I/O: every fact is here or asked of the World.
type Wall struct {
	// Path is the path the call names (a file, a unix socket's path), for
	// messages; Abstract an abstract unix socket's name; Family a socket
	// address's family (0 for an open).
	Path     string
	Abstract string
	Family   int
	// Flags are an open's flags.
	Flags uint64
	// Err says why the call or its target could not be read: the call is
	// refused as undecidable.
	Err error
	// FS is the filesystem the file lies on: "proc", "cgroup" or "".
	FS string
	// Proc is, for a file in a process's /proc/PID directory, that
	// process in the front end's numbers (0: none), and ProcFile the path
	// below it ("oom_score_adj").
	Proc     int
	ProcFile string
	// Cgroup is a cgroup file's directory as paddock sees it, CgroupFile
	// the file's name in it as resolved ("cgroup.kill"; "" where the
	// object is the directory itself), and Members the processes in that
	// cgroup and every cgroup below it (CgroupErr: why they could not be
	// listed).
	Cgroup     string
	CgroupFile string
	Members    []int
	CgroupErr  error
	// Deputy is which deputy the target is (by its path, or by the process
	// listening on it), and Peer that process (0: not known).
	Deputy Deputy
	Peer   int
	// EngineAllowed says the session's profile opens the container
	// engines' sockets (the deputies_allowed key).
	EngineAllowed bool
	// Scoped says the agent's Landlock domain refuses abstract unix
	// sockets bound outside it: a connect paddock makes on the caller's
	// behalf must refuse them too.
	Scoped bool
	// StrictWall says the session runs with --strict-wall: writes into
	// /proc/PID and cgroup files are refused to every process, the agent's
	// own included, as its Landlock wall refuses them.
	StrictWall bool
}

// decideWall decides a walled call from what the front end found of its
// target.
func decideWall(r Request, w World, d Decision) Decision {
	wl := r.Wall
	if wl == nil {
		return undecidable(r, w, d, fmt.Errorf("this front end does not read %s", d.Syscall))
	}
	if wl.Err != nil {
		return wallUndecidable(r, w, d, wl.Err)
	}
	open := r.Syscall == filter.Open || r.Syscall == filter.Openat || r.Syscall == filter.Openat2 || r.Syscall == filter.Creat
	switch {
	case open && wl.StrictWall && (wl.Proc != 0 || wl.FS == "cgroup"):
		return wallRefuse(r, w, d, audit.RuleStrictWall, fmt.Sprintf(
			"it is a process's /proc or cgroup file, and this session runs with --strict-wall, which refuses writes to them to every process, the agent's own included. Way out: run without --strict-wall (the default wall refuses only other processes' files)."))
	case open && wl.Proc != 0:
		return decideProcFile(r, w, d)
	case open && wl.FS == "cgroup":
		return decideCgroupFile(r, w, d)
	}
	switch wl.Deputy {
	case DeputyDocker, DeputyPodman:
		if wl.EngineAllowed {
			d.Allow, d.Rule = true, audit.RuleDeputy
			return d
		}
		return wallRefuse(r, w, d, audit.RuleDeputy, fmt.Sprintf(
			"it is the %s API: whoever talks to it acts through the engine, which can run any container and reach the host as its own user, outside the session. Way out: allow it for this agent in a profile (deputies_allowed = [\"%s\"], docs/deputies.md), or run the engine's command yourself.",
			engineName(wl.Deputy), wl.Deputy))
	case DeputySystemBus, DeputySessionBus:
		// Through paddock's D-Bus filter (the front end relays it).
		d.Allow, d.Rule = true, audit.RuleDeputy
		return d
	case DeputyTmux, DeputyScreen:
		if wl.Peer == 0 {
			return wallUndecidable(r, w, d, fmt.Errorf("the %s server behind %s could not be found", wl.Deputy, wl.Path))
		}
		t, err := w.Lookup(wl.Peer)
		if err != nil {
			return wallUndecidable(r, w, d, err)
		}
		if t.Rel == audit.RelOwned || t.Rel == audit.RelAgentRoot {
			d.Allow, d.Rule = true, audit.RuleOwned
			return d
		}
		d.Target = wl.Peer
		return wallRefuse(r, w, d, audit.RuleDeputy, fmt.Sprintf(
			"it reaches a %s server the agent did not start (%s, %s): it would act for the agent on the user's own sessions (kill-server, send-keys, -X quit). Way out: start a server of the agent's own (tmux -L NAME, screen -S NAME), or run the command outside the session.",
			wl.Deputy, procName(r, wl.Peer, t.Comm), t.Rel))
	}
	if wl.Abstract != "" && wl.Scoped && wl.Peer != 0 {
		t, err := w.Lookup(wl.Peer)
		if err != nil {
			return wallUndecidable(r, w, d, err)
		}
		if t.Rel != audit.RelOwned && t.Rel != audit.RelAgentRoot && wl.Peer != r.Tid {
			// What the agent's Landlock domain refuses the caller itself.
			d.Errno, d.Rule, d.Target = syscall.EPERM, audit.RuleNotOwned, wl.Peer
			return d
		}
	}
	d.Allow, d.Rule = true, audit.RuleWallPassed
	return d
}

// engineName is a container engine's name for messages.
func engineName(dep Deputy) string {
	if dep == DeputyPodman {
		return "Podman"
	}
	return "Docker"
}

// decideProcFile decides an open for writing of a file in a process's
// /proc/PID directory: the caller's own, and the agent's processes',
// are allowed; anyone else's refused.
func decideProcFile(r Request, w World, d Decision) Decision {
	wl := r.Wall
	pid := wl.Proc
	d.Target = pid
	if pid == r.Tid || w.ThreadOf(r.Tid, pid) {
		d.Allow, d.Rule = true, audit.RuleSelf
		return d
	}
	t, err := w.Lookup(pid)
	if err != nil {
		return wallUndecidable(r, w, d, err)
	}
	switch t.Rel {
	case audit.RelOwned, audit.RelAgentRoot:
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	case audit.RelGone:
		// Its directory is gone with it: the open would fail the same.
		d.Errno, d.Rule, d.Target = syscall.ESRCH, audit.RuleNoSuchTarget, pid
		return d
	}
	return wallRefuse(r, w, d, audit.RuleNotOwned, fmt.Sprintf(
		"the file belongs to %s, which is %s, not the agent's: a write there changes that process (its OOM score, its memory, its name). Way out: write only the agent's own processes' files (owned: %s), or %s",
		procName(r, pid, t.Comm), t.Rel, ownedList(r, w), adoptWay(r, pid)))
}

// harmlessCgroupFiles are the cgroup files whose writes reach no process
// of the cgroup: cgroup v1's cgroup.event_control registers an eventfd of
// the writer's for a notification (memory.oom_control, a
// memory.usage_in_bytes threshold, memory.pressure_level), as conmon does
// for every container on a cgroup v1 host, in the cgroup it runs in.
var harmlessCgroupFiles = map[string]bool{"cgroup.event_control": true}

// decideCgroupFile decides an open for writing of a cgroup's file: allowed
// when every process in the cgroup and below it is the agent's (an empty
// cgroup too: one the agent made, or nobody's), or the file is one whose
// writes reach none of them (harmlessCgroupFiles); refused otherwise.
func decideCgroupFile(r Request, w World, d Decision) Decision {
	wl := r.Wall
	if harmlessCgroupFiles[wl.CgroupFile] {
		d.Allow, d.Rule = true, audit.RuleWallPassed
		return d
	}
	if wl.CgroupErr != nil {
		return wallUndecidable(r, w, d, wl.CgroupErr)
	}
	var foreign []string
	for _, pid := range wl.Members {
		if pid == r.Tid || w.ThreadOf(r.Tid, pid) {
			continue
		}
		t, err := w.Lookup(pid)
		if err != nil {
			return wallUndecidable(r, w, d, err)
		}
		if t.Rel == audit.RelOwned || t.Rel == audit.RelAgentRoot || t.Rel == audit.RelGone {
			continue
		}
		if len(foreign) < maxForeignInGroup {
			foreign = append(foreign, procName(r, pid, t.Comm))
		} else {
			foreign = append(foreign[:maxForeignInGroup], "...")
			break
		}
	}
	if len(foreign) == 0 {
		d.Allow, d.Rule = true, audit.RuleOwned
		return d
	}
	return wallRefuse(r, w, d, audit.RuleGroup, fmt.Sprintf(
		"it is a file of cgroup %s, which holds processes that are not the agent's (%s): a write there (cgroup.kill, cgroup.freeze, a limit) reaches them too. Way out: write only cgroups that hold nothing but the agent's processes (owned: %s).",
		wl.Cgroup, strings.Join(foreign, ", "), ownedList(r, w)))
}

// wallObject names what a walled call aims at: "open(/proc/42/oom_score_adj, O_WRONLY)", "connect(/tmp/tmux-1000/default)".
func wallObject(r Request) string {
	wl := r.Wall
	switch {
	case wl.Abstract != "":
		return fmt.Sprintf("%s(@%s)", r.Syscall, wl.Abstract)
	case wl.Path != "" && wl.Family == 0:
		return fmt.Sprintf("%s(%s, %s)", r.Syscall, wl.Path, openMode(wl.Flags))
	case wl.Path != "":
		return fmt.Sprintf("%s(%s)", r.Syscall, wl.Path)
	}
	return r.Syscall.String()
}

// openMode names an open's access mode.
func openMode(flags uint64) string {
	switch flags & 3 {
	case 1:
		return "O_WRONLY"
	case 2:
		return "O_RDWR"
	case 3:
		return "O_ACCMODE"
	}
	return "O_RDONLY"
}

// wallRefuse is a walled call refused under rule, with why (the message's
// reason and way out).
func wallRefuse(r Request, w World, d Decision, rule audit.Rule, why string) Decision {
	d.Allow, d.Errno, d.Rule, d.Refusal = false, syscall.EPERM, rule, true
	d.Message = fmt.Sprintf("paddock refused %s from %s: %s", wallObject(r), caller(r, w), why)
	return d
}

// wallUndecidable is a walled call refused because its target could not be
// established.
func wallUndecidable(r Request, w World, d Decision, err error) Decision {
	return wallRefuse(r, w, d, audit.RuleUndecidable, fmt.Sprintf(
		"paddock could not establish what it reaches (%v), and refuses when it cannot decide. Way out: retry; if it persists, name the file or socket by another path.", err))
}
