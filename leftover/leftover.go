// Package leftover answers the trapped calls of what a paddock run
// --keep-orphans session left running, once its paddock has exited.
//
// Those processes keep the session's seccomp filter for life. Without a
// listener the kernel fails each of their trapped calls (every kill of
// another process, every exec) with ENOSYS, which says nothing of why: a
// harness daemon left running (Codex's app-server) then fails its next
// session's commands with "Function not implemented". The keeper takes
// the listener from the ending paddock (supervisor.Session.HandOver) and
// answers instead: a process signalling itself is let through, as always,
// and so is signal 0, which delivers nothing;
// every other call is refused with EPERM and a message that says which
// session left the caller running, when it ended and what to do, on the
// caller's stderr where the kernel lets paddock write there, in the log
// and in the journal. It serves a control socket too, so that `paddock
// sessions` lists it, `paddock ps --socket` lists the leftovers and
// `paddock kill --socket` ends them. It exits when no process carries the
// filter any more.
//
// It decides nothing by ownership: with the session's agent gone, the
// leftovers' own children are refused like any other target (they failed
// with ENOSYS before); docs/limits.md says so.
package leftover

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// Config is what the keeper knows of the session that ended.
type Config struct {
	// Listener is the session's seccomp listener.
	Listener *os.File
	// Session is the ended session's id, Ended when its paddock ended.
	Session string
	Ended   time.Time
	// Processes are the leftovers at the hand-over.
	Processes []ownership.Identity
	// Journal, when set, gets a record of every refusal.
	Journal *journal.Journal
	// Log gets a line per refusal (rate-limited as a session's).
	Log zerolog.Logger
	// NotifyStderr writes each refusal's message to the caller's stderr.
	NotifyStderr bool
	// Ready, when set, is called with the control socket's path once the
	// keeper serves.
	Ready func(socket string)
}

// Serve answers the leftovers' calls until no process carries the filter,
// then closes the control socket and returns what it refused.
func Serve(cfg Config) (report.Summary, error) {
	fs := procfs.Default()
	tree, err := ownership.NewTree(fs, os.Getpid())
	if err != nil {
		return report.Summary{}, err
	}
	reason := fmt.Sprintf("left running by paddock session %s (--keep-orphans), which ended at %s", cfg.Session, cfg.Ended.UTC().Format(time.TimeOnly+" UTC"))
	for _, p := range cfg.Processes {
		// A lease each, by pid and start time: what they start later
		// descends from one, and ps lists it too.
		l, err := tree.Adopt(ownership.AdoptRequest{Pid: p.Pid, Reason: reason, By: "paddock run at its exit", Now: cfg.Ended})
		if err != nil || l.StartTime != p.StartTime {
			if err == nil {
				tree.Release(p.Pid) // another process of that pid since
			}
			continue
		}
	}
	k := &keeper{cfg: cfg, fs: fs, tree: tree, reason: reason}
	// Paced: a leftover that retries a refused call in a loop (a shell
	// loop's exec) runs at that pace, not at the CPU's, and its records
	// come no faster.
	k.pipeline = report.New(report.Options{Log: cfg.Log, FS: fs, Journal: cfg.Journal, NotifyStderr: cfg.NotifyStderr, Pace: keeperPace})
	srv, err := control.Listen(control.Options{Log: cfg.Log}, ops{k})
	if err != nil {
		k.pipeline.Close()
		return report.Summary{}, fmt.Errorf("the leftovers' control socket: %w", err)
	}
	k.socket = srv.Path()
	if cfg.Ready != nil {
		cfg.Ready(k.socket)
	}
	err = k.serve(int(cfg.Listener.Fd()))
	_ = srv.Close()
	k.pipeline.Flush()
	k.pipeline.Close()
	return k.pipeline.Summary(), err
}

// keeperPace is how many refusals a second the keeper answers at once
// (report.Options.Pace): nothing a leftover can still do needs more.
const keeperPace = 50

type keeper struct {
	cfg      Config
	fs       procfs.FS
	tree     *ownership.Tree
	reason   string
	socket   string
	pipeline *report.Pipeline
}

// serve is the notify loop.
func (k *keeper) serve(fd int) error {
	lastExec := 0 // the caller of the last exec refused, until another call
	for {
		var n seccomp.Notif
		if err := seccomp.Recv(fd, &n); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				if seccomp.FilterGone(fd) {
					return nil
				}
				continue
			}
			return fmt.Errorf("seccomp notify receive: %w", err)
		}
		req := policy.NewRequest(int(n.Pid), n.Data.Arch, n.Data.Nr, n.Data.Args)
		d := k.decide(req)
		if !d.Refusal {
			k.send(fd, n.ID, answer.Continue())
			continue
		}
		exec := d.Action == audit.ExecDenied
		if exec && lastExec == req.Tid {
			// A shell tries each PATH entry in turn: one command, one
			// refusal (its first).
			k.send(fd, n.ID, answer.Refuse(d.Errno))
			continue
		}
		lastExec = 0
		if exec {
			lastExec = req.Tid
		}
		if !seccomp.IDValid(fd, n.ID) {
			continue // the caller stopped waiting
		}
		after := k.pipeline.Decided(report.Event{When: time.Now(), Caller: req.Tid, ABI: req.ABI.String(), Decision: d})
		id := n.ID
		report.After(after, func() { k.send(fd, id, answer.Refuse(d.Errno)) })
	}
}

func (k *keeper) send(fd int, id uint64, a answer.Answer) {
	if err := seccomp.Answer(fd, id, a); err != nil && !errors.Is(err, unix.ENOENT) {
		k.cfg.Log.Error().Err(err).Msg("seccomp notify answer failed")
	}
}

// decide lets a signal a process sends itself, and signal 0, through and
// refuses everything else, saying why.
func (k *keeper) decide(req policy.Request) policy.Decision {
	if req.Syscall.Walled() {
		// The default wall's opens and connects: carrying them out needs
		// the session's ownership tree, which ended with it. A leftover's
		// files and sockets stay its own business, as before the wall
		// (docs/limits.md).
		return policy.Decision{Syscall: req.Syscall.String(), Allow: true, Rule: audit.RuleWallPassed}
	}
	d := policy.Decision{Syscall: req.Syscall.String(), Errno: unix.EPERM, Rule: audit.RuleSessionEnded, Refusal: true}
	call := d.Syscall
	if si, ok := req.Syscall.SignalArg(); ok {
		d.Signal = int(int32(req.Args[si]))
		call = fmt.Sprintf("%s(%s)", d.Syscall, policy.SignalName(d.Signal))
		if d.Signal == 0 || k.self(req) {
			// Signal 0 delivers nothing (it asks whether the target
			// exists: the kernel answers, within the agent's Landlock
			// scope); a process may always signal itself.
			return policy.Decision{Syscall: d.Syscall, Signal: d.Signal, Allow: true, Rule: audit.RuleSelf}
		}
	}
	if t := req.Pid(); t > 0 {
		d.Target = t
		call += fmt.Sprintf(" of pid %d", t)
	}
	d.Action = policy.ActionOf(req.Syscall, d)
	comm := "?"
	if st, err := k.fs.Stat(req.Tid); err == nil {
		comm = st.Comm
	}
	d.Message = fmt.Sprintf("paddock refused %s from pid %d (%s): it was %s; nobody decides its kills, ptrace and execs since, so paddock refuses them all (a process may still signal itself). Way out: end what the session left (paddock ps --socket %s lists it; paddock kill PID --socket %s) and start it again under a new paddock run, or run without --keep-orphans, which ends what the agent leaves.",
		call, req.Tid, comm, k.reason, k.socket, k.socket)
	return d
}

// self reports whether a signal call names the caller's own process (or a
// thread of it).
func (k *keeper) self(req policy.Request) bool {
	own, err := k.fs.Tgid(req.Tid)
	if err != nil {
		return false
	}
	switch req.Syscall {
	case filter.Kill, filter.RtSigqueueinfo, filter.Tgkill, filter.RtTgsigqueueinfo:
		return req.Pid() == own
	case filter.Tkill:
		t, err := k.fs.Tgid(req.Pid())
		return err == nil && t == own
	}
	return false
}

// ops is the keeper's control socket: ps lists the leftovers, kill ends
// them; nothing is adopted or released into a session that ended.
type ops struct{ k *keeper }

func (o ops) Adopt(pid int, _ string, _ bool, _ string, _ bool) (control.LeaseInfo, error) {
	return control.LeaseInfo{}, o.ended("adopt", pid)
}

func (o ops) Release(pid int, _ string) (control.LeaseInfo, error) {
	return control.LeaseInfo{}, o.ended("release", pid)
}

func (o ops) ended(op string, pid int) error {
	return fmt.Errorf("paddock refused %s of pid %d: this socket is not a running session's; it serves what paddock session %s left running when it ended (--keep-orphans), and nothing is adopted into it or released from it. Way out: start a new paddock run", op, pid, o.k.cfg.Session)
}

func (o ops) Owned() ([]control.Process, error) {
	var list []control.Process
	err := o.k.tree.ScanOwned(func(rel audit.Relation, st procfs.Stat) bool {
		p := control.Process{Pid: st.Pid, PPid: st.PPid, Comm: st.Comm, StartTime: st.StartTime, OwnedBy: "tree"}
		if l, ok := o.k.tree.LeaseFor(st.Pid); ok && l.StartTime == st.StartTime {
			p.OwnedBy, p.Reason = "left", l.Reason
		}
		list = append(list, p)
		return true
	})
	return list, err
}

func (o ops) Kill(requester, pid, sig int) (control.Signalled, error) {
	rel, st, err := o.k.tree.Classify(pid)
	if err != nil {
		return control.Signalled{}, err
	}
	if rel != audit.RelOwned {
		return control.Signalled{}, fmt.Errorf("paddock refused kill of pid %d: it is not among what paddock session %s left running (paddock ps --socket %s lists them)", pid, o.k.cfg.Session, o.k.socket)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return control.Signalled{}, fmt.Errorf("pidfd_open(%d): %w", pid, err)
	}
	defer unix.Close(fd)
	if now, err := o.k.fs.Stat(pid); err != nil || now.StartTime != st.StartTime {
		return control.Signalled{}, fmt.Errorf("pid %d exited", pid)
	}
	if err := unix.PidfdSendSignal(fd, unix.Signal(sig), nil, 0); err != nil {
		return control.Signalled{}, fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return control.Signalled{Pid: pid, Signal: sig, Comm: st.Comm}, nil
}

func (o ops) Info() control.SessionInfo {
	return control.SessionInfo{Supervisor: os.Getpid(), Ended: &control.Ended{Session: o.k.cfg.Session, At: o.k.cfg.Ended}}
}

func (o ops) Inside(pid int) (bool, error) {
	rel, _, err := o.k.tree.Classify(pid)
	return rel == audit.RelOwned, err
}

// Describe is the one-line account of a keeper for paddock sessions.
func Describe(e control.Ended) string {
	return fmt.Sprintf("(left by session %s, ended %s)", e.Session, e.At.Local().Format(time.TimeOnly))
}
