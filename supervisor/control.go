package supervisor

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/report"
)

// The session's side of the control socket (package control serves it):
// adoption, release, listing and kill, for the socket and the library alike.

// LeaseInfo is a lease as Session.Adopt reports it (and the socket's clients see it).
type LeaseInfo = control.LeaseInfo

// Process is one owned process as Session.Owned lists it (and `paddock ps` shows it).
type Process = control.Process

// Signalled is what Session.KillProcess (and `paddock kill`) signalled.
type Signalled = control.Signalled

// leaseInfo reports a lease of the ownership tree as clients see it.
func leaseInfo(l ownership.Lease) LeaseInfo {
	return LeaseInfo{Pid: l.Pid, Comm: l.Comm, StartTime: l.StartTime, Reason: l.Reason, AdoptedBy: l.AdoptedBy, AdoptedAt: l.AdoptedAt, LifelineOverride: l.LifelineOverride}
}

// controlOps is the session as the control socket sees it: control.Ops,
// whose method names Session's own library API already uses.
type controlOps struct{ s *Session }

// Adopt implements control.Ops.
func (o controlOps) Adopt(pid int, reason string, lifelineOK bool, by string, inside bool) (LeaseInfo, error) {
	if err := o.s.mayAdopt(inside); err != nil {
		return LeaseInfo{}, err
	}
	l, err := o.s.adopt(pid, reason, lifelineOK, by)
	if err != nil {
		return LeaseInfo{}, err
	}
	return leaseInfo(l), nil
}

// Release implements control.Ops.
func (o controlOps) Release(pid int, by string) (LeaseInfo, error) {
	l, err := o.s.release(pid, by)
	if err != nil {
		return LeaseInfo{}, err
	}
	return leaseInfo(l), nil
}

// Owned implements control.Ops.
func (o controlOps) Owned() ([]Process, error) { return o.s.Owned() }

// Kill implements control.Ops.
func (o controlOps) Kill(requester, pid, sig int) (Signalled, error) {
	sd, err := o.s.kill(requester, pid, sig)
	if err != nil {
		return Signalled{}, err
	}
	return *sd, nil
}

// Info implements control.Ops: this supervisor and the agent root it runs.
func (o controlOps) Info() control.SessionInfo {
	return control.SessionInfo{Supervisor: os.Getpid(), Agent: o.s.tree.Root().Pid}
}

// Inside implements control.Ops: the agent's tree and adopted processes
// (with their descendants) are the session's; a process that is gone, or
// whose relation cannot be established, is counted as the session's too
// (the control socket then charges the agent's budget, never the user's).
func (o controlOps) Inside(pid int) (bool, error) {
	rel, _, err := o.s.tree.Classify(pid)
	if err != nil {
		return true, fmt.Errorf("ownership of pid %d: %w", pid, err)
	}
	switch rel {
	case audit.RelOwned, audit.RelAgentRoot:
		return true, nil
	case audit.RelGone:
		return true, fmt.Errorf("pid %d is gone", pid)
	}
	return false, nil
}

// mayAdopt applies Config.Adoption to a control-socket client: inside says
// whether the client belongs to the session (the agent's tree or an
// adopted process; unclassifiable clients count as inside).
func (s *Session) mayAdopt(inside bool) error {
	switch s.cfg.Adoption {
	case AdoptOff:
		return errors.New("adoption refused: adoption is off in this session (profile key adoption = \"off\"). Way out: signal only what the agent started; to change this, set adoption = \"agent\" or \"outside\" in the host profile and restart paddock run")
	case AdoptFromOutside:
		if inside {
			return errors.New("adoption refused: in this session only the user may adopt, from outside it (profile key adoption = \"outside\"), and this request came from inside the session. Way out: ask the user to run `paddock adopt PID --reason \"...\" --socket " + s.SocketPath() + "` from their own terminal")
		}
	}
	return nil
}

// adopt journals a lease, then records it; an adoption whose records
// cannot be made durable (written to the journal and fsynced, or, when the
// file fails, taken by the journal's mirror) is refused, since an
// unaudited widening of what the agent may signal is exactly what the
// journal exists to prevent. The lease authorizes nothing before then.
func (s *Session) adopt(pid int, reason string, lifelineOK bool, by string) (ownership.Lease, error) {
	if s.cfg.Journal == nil {
		return ownership.Lease{}, errors.New("adoption refused: this session has no audit journal, and adoptions must be journaled. Way out: restart paddock run with --journal FILE")
	}
	s.adoptMu.Lock()
	defer s.adoptMu.Unlock()
	// Validated and pinned, but authorizing nothing until its records are
	// durable: while they wait (for the journal's lock, say, which the
	// agent can hold), the process is as foreign as before.
	p, err := s.tree.Prepare(ownership.AdoptRequest{Pid: pid, Reason: reason, By: by, LifelineOK: lifelineOK, Now: time.Now()})
	if err != nil {
		return ownership.Lease{}, err
	}
	defer p.Discard() // nothing once installed
	l := p.Lease()
	fields := map[string]any{"reason": l.Reason, "comm": l.Comm, "start_time": l.StartTime, "adopted_by": by}
	if l.LifelineOverride {
		fields["self_lifeline_opt_in"] = true
	}
	recs := []journal.Record{{TS: l.AdoptedAt, Action: audit.Adopted, Pid: l.Pid, Fields: fields}}
	if l.LifelineOverride {
		recs = append(recs, journal.Record{TS: l.AdoptedAt, Action: audit.SelfLifelineOverride, Pid: l.Pid, Fields: map[string]any{
			"reason": l.Reason, "comm": l.Comm, "adopted_by": by, "self_lifeline_opt_in": true,
		}})
	}
	var mirrorOnly error
	for _, r := range recs {
		// Durable in the file (written and fsynced), or, where the file
		// could not take it, sent to the mirror: else refused.
		err := s.cfg.Journal.AppendSync(r)
		var fe *journal.FileError
		switch {
		case err == nil:
		case errors.As(err, &fe) && fe.Mirrored:
			mirrorOnly = err
		default:
			s.cfg.Log.Error().Err(err).Int("pid", pid).Msg("adoption refused: the audit journal could not be written")
			return ownership.Lease{}, fmt.Errorf("adoption of pid %d refused: the audit journal could not be written (%v); nothing was adopted", pid, err)
		}
	}
	l = s.tree.Install(p)
	if mirrorOnly != nil {
		s.cfg.Log.Error().Err(mirrorOnly).Int("pid", l.Pid).Msg("adopted, recorded in the journal mirror only: the journal file could not take the record")
	}
	s.cfg.Log.Info().Int("pid", l.Pid).Str("comm", l.Comm).Str("reason", l.Reason).Str("by", by).Bool("lifeline_override", l.LifelineOverride).Msg("adopted")
	return l, nil
}

// release drops a lease and journals it.
func (s *Session) release(pid int, by string) (ownership.Lease, error) {
	l, ok := s.tree.Release(pid)
	if !ok {
		return l, fmt.Errorf("release of pid %d refused: pid %d is not adopted by this session (paddock ps lists what is)", pid, pid)
	}
	s.journal(audit.Released, pid, map[string]any{"reason": l.Reason, "comm": l.Comm, "released_by": by})
	return l, nil
}

// journal appends a record, loudly when it fails (the action itself stands).
func (s *Session) journal(action audit.Action, pid int, fields map[string]any) {
	if s.cfg.Journal == nil {
		return
	}
	if err := s.cfg.Journal.Append(journal.Record{Action: action, Pid: pid, Fields: fields}); err != nil {
		s.cfg.Log.Error().Err(err).Str("action", string(action)).Msg("paddock could not write the audit journal")
	}
}

// sweepLeases expires leases whose process is gone, every interval, until done.
func (s *Session) sweepLeases(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.expireLeases()
		case <-s.done:
			return
		}
	}
}

func (s *Session) expireLeases() {
	for _, e := range s.tree.Sweep() {
		s.journal(audit.LeaseExpired, e.Pid, map[string]any{"why": e.Why, "reason": e.Reason, "comm": e.Comm, "start_time": e.StartTime})
	}
}

// kill decides `paddock kill` exactly as the kernel path would decide a
// kill(2) from the requesting process, then delivers it from the supervisor:
// to the whole process group only when the target leads it and every member
// is owned, otherwise to the pinned process alone.
func (s *Session) kill(requester, pid, sig int) (*Signalled, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("paddock kill refused: %d is not a process id; paddock kill signals one process (and its group when it leads a group the session wholly owns)", pid)
	}
	req := policy.Request{Tid: requester, Syscall: filter.Kill, ABI: filter.ABI{Name: "paddock kill"}, Args: [6]uint64{uint64(pid), uint64(sig)}}
	w := newLiveWorld(s.tree, s.fs, s.cfg.Guard, s.cfg.VRAM).begin(req, -1, 0)
	defer w.reset()
	d := policy.Decide(req, w.world())
	if !d.Allow {
		if d.Refusal {
			s.pipeline.Decided(report.Event{Caller: requester, ABI: req.ABI.String(), Decision: d, Quiet: true})
			return nil, errors.New(d.Message)
		}
		return nil, fmt.Errorf("paddock kill refused: pid %d is not owned by this session: %v (it has exited, or never existed). Way out: paddock ps lists the processes this session owns", pid, syscall.Errno(d.Errno))
	}
	t, err := w.Lookup(pid)
	if err != nil {
		return nil, err
	}
	out := &Signalled{Pid: pid, Signal: sig, Comm: t.Comm}
	if pgrp, err := w.Pgrp(pid); err == nil && pgrp == pid {
		greq := req
		greq.Args[0] = uint64(-int64(pid))
		if gd := policy.Decide(greq, w.world()); gd.Allow {
			members, err := s.fs.GroupMembers(pid)
			if err == nil {
				if err := unix.Kill(-pid, unix.Signal(sig)); err != nil {
					return nil, fmt.Errorf("paddock kill: process group %d: %w", pid, err)
				}
				out.Group = true
				for _, m := range members {
					out.Members = append(out.Members, m.Pid)
				}
				sort.Ints(out.Members)
				return out, nil
			}
		}
	}
	if !w.stillThere(pid) {
		return nil, fmt.Errorf("paddock kill: pid %d exited meanwhile", pid)
	}
	if err := unix.PidfdSendSignal(w.pidfd(pid), unix.Signal(sig), nil, 0); err != nil {
		return nil, fmt.Errorf("paddock kill: pid %d: %w", pid, err)
	}
	return out, nil
}

// Owned lists the processes the session owns now: the agent's tree and the
// adopted processes with their descendants.
func (s *Session) Owned() ([]Process, error) {
	s.expireLeases()
	var out []Process
	err := s.tree.ScanOwned(func(rel audit.Relation, st procfs.Stat) bool {
		pid := st.Pid
		p := Process{Pid: pid, PPid: st.PPid, Comm: st.Comm, StartTime: st.StartTime, OwnedBy: "tree", Agent: rel == audit.RelAgentRoot}
		if l, ok := s.tree.LeaseFor(pid); ok {
			p.OwnedBy = "adopted"
			if l.Pid == pid {
				at := l.AdoptedAt
				p.Reason, p.AdoptedAt = l.Reason, &at
			} else {
				p.Lease, p.Reason = l.Pid, l.Reason
			}
		}
		out = append(out, p)
		return true
	})
	return out, err
}
