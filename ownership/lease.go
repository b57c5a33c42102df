package ownership

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// Lease records a process the agent adopted: a process it did not start but
// has a stated reason to control (a daemon started in another terminal, a
// test subject in tmux). A lease authorizes the process and its descendants
// for as long as the process it was taken on lives; it is pinned by pid,
// start time and a pidfd, so a reused pid never inherits it.
type Lease struct {
	Identity
	Reason    string
	AdoptedBy string // who asked, e.g. "pid 4242 (bash) uid 1000"
	AdoptedAt time.Time
	// LifelineOverride is set when the process is a lifeline and the adopter
	// said --lifeline-ok.
	LifelineOverride bool
	pidfd            int
}

// AdoptError is a refused adoption; its message says why and what would be accepted.
type AdoptError struct{ msg string }

func (e *AdoptError) Error() string { return e.msg }

// AdoptRequest is one adoption.
type AdoptRequest struct {
	Pid        int
	Reason     string
	By         string
	LifelineOK bool
	Now        time.Time
}

// Adopt validates and records a lease, live at once (Prepare, then
// Install). The returned lease is a copy.
func (t *Tree) Adopt(r AdoptRequest) (Lease, error) {
	p, err := t.Prepare(r)
	if err != nil {
		return Lease{}, err
	}
	return t.Install(p), nil
}

// Pending is a lease validated and pinned by Prepare that authorizes
// nothing yet: Install makes it live, Discard drops it. One of the two
// must be called.
type Pending struct {
	l    Lease
	done bool
}

// Lease returns the lease as Install will record it (a copy).
func (p *Pending) Lease() Lease { return p.l }

// Discard drops a lease that was never installed (its record could not be
// made durable), releasing its pidfd. It does nothing after Install or a
// first Discard.
func (p *Pending) Discard() {
	if p.done {
		return
	}
	p.done = true
	unix.Close(p.l.pidfd)
}

// Install makes a prepared lease live and returns a copy. An adoption is
// journaled between Prepare and Install, so that no lease authorizes
// anything before its record is durable (supervisor's adopt): the agent
// cannot use a lease while its record waits, and then keep the record out.
// The process may have exited meanwhile: the lease then authorizes nothing
// (it is pinned by its pidfd) and Sweep expires it.
func (t *Tree) Install(p *Pending) Lease {
	if p.done {
		panic("ownership: Install of a lease already installed or discarded")
	}
	p.done = true
	l := p.l
	t.mu.Lock()
	if old, ok := t.leases[l.Pid]; ok {
		unix.Close(old.pidfd)
	}
	t.leases[l.Pid] = l
	t.epoch++
	t.mu.Unlock()
	return l
}

// Prepare validates an adoption and pins its process, but records nothing:
// the lease it returns (Pending) authorizes nothing until Install.
func (t *Tree) Prepare(r AdoptRequest) (*Pending, error) {
	if strings.TrimSpace(r.Reason) == "" {
		return nil, &AdoptError{fmt.Sprintf("adoption of pid %d refused: adoption needs a non-empty reason saying why the agent must control this process, e.g. paddock adopt %d --reason \"test subject started in tmux\"", r.Pid, r.Pid)}
	}
	if r.Pid <= 1 {
		return nil, &AdoptError{fmt.Sprintf("adoption of pid %d refused: adoption needs a valid non-system PID (greater than 1, of a running user process)", r.Pid)}
	}
	fd, err := unix.PidfdOpen(r.Pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL) {
			return nil, &AdoptError{fmt.Sprintf("adoption of pid %d refused: adoption needs a valid non-system PID, and no process %d exists (a thread id is not a process id)", r.Pid, r.Pid)}
		}
		return nil, fmt.Errorf("adopt %d: pidfd_open: %w", r.Pid, err)
	}
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	st, err := t.fs.Stat(r.Pid)
	if err != nil {
		if errors.Is(err, procfs.ErrNotFound) {
			return nil, &AdoptError{fmt.Sprintf("adoption of pid %d refused: adoption needs a valid non-system PID, and process %d has exited", r.Pid, r.Pid)}
		}
		return nil, fmt.Errorf("adopt %d: %w", r.Pid, err)
	}
	if st.KernelThread() {
		return nil, &AdoptError{fmt.Sprintf("adoption of pid %d (%s) refused: adoption needs a valid non-system PID, and %d is a kernel thread", r.Pid, st.Comm, r.Pid)}
	}
	// The stat line read after the pidfd was opened describes the pinned
	// process only if that process is still alive now.
	if Reaped(fd) {
		return nil, &AdoptError{fmt.Sprintf("adoption of pid %d refused: adoption needs a valid non-system PID, and process %d has exited", r.Pid, r.Pid)}
	}
	rel, err := t.classifyTree(st)
	if err != nil {
		return nil, fmt.Errorf("adopt %d: %w", r.Pid, err)
	}
	lifeline := rel.Lifeline() || rel == audit.RelAgentRoot
	if lifeline && !r.LifelineOK {
		return nil, &AdoptError{fmt.Sprintf("adoption of pid %d (%s) refused: pid %d is a critical session lifeline (%s); signalling it can end the session. If the user really wants the agent to control it, adopt it with --lifeline-ok (paddock adopt %d --reason \"...\" --lifeline-ok); that override is journaled.", r.Pid, st.Comm, r.Pid, rel, r.Pid)}
	}
	keep = true
	return &Pending{l: Lease{Identity: IdentityOf(st), Reason: strings.TrimSpace(r.Reason), AdoptedBy: r.By, AdoptedAt: r.Now.UTC(), LifelineOverride: lifeline, pidfd: fd}}, nil
}

// Release drops the lease on pid; ok=false when there was none.
func (t *Tree) Release(pid int) (Lease, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.leases[pid]
	if ok {
		unix.Close(l.pidfd)
		delete(t.leases, pid)
		t.epoch++
	}
	return l, ok
}

// Expired is a lease that stopped authorizing anything, and why.
type Expired struct {
	Lease
	Why string // "exited" or "pid reused"
}

// Sweep drops leases whose process has exited or whose pid now names
// another process, and returns them so the caller can journal them.
func (t *Tree) Sweep() []Expired {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Expired
	for pid, l := range t.leases {
		if why := t.leaseDead(l); why != "" {
			unix.Close(l.pidfd)
			delete(t.leases, pid)
			t.epoch++
			out = append(out, Expired{Lease: l, Why: why})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// leaseDead says why a lease no longer holds ("" while it does).
func (t *Tree) leaseDead(l Lease) string {
	if Reaped(l.pidfd) {
		return "exited"
	}
	st, err := t.fs.Stat(l.Pid)
	if err != nil {
		return "exited"
	}
	if st.StartTime != l.StartTime || st.State == 'Z' || st.State == 'X' {
		if st.StartTime != l.StartTime {
			return "pid reused"
		}
		return "exited"
	}
	return ""
}

// Leases lists the live leases, by pid.
func (t *Tree) Leases() []Lease {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Lease, 0, len(t.leases))
	for _, l := range t.leases {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// LeaseFor returns the lease that makes the process owned: its own, or the
// nearest adopted ancestor's. ok=false when it is not owned through adoption.
func (t *Tree) LeaseFor(pid int) (Lease, bool) {
	st, err := t.fs.Stat(pid)
	if err != nil {
		return Lease{}, false
	}
	for depth := 0; depth < maxDepth; depth++ {
		if l, ok := t.lease(st); ok {
			return l, true
		}
		if st.PPid <= 1 {
			return Lease{}, false
		}
		pst, err := t.fs.Stat(st.PPid)
		if err != nil || pst.StartTime > st.StartTime {
			return Lease{}, false
		}
		st = pst
	}
	return Lease{}, false
}

// lease returns the live lease matching this exact process (pid and start time).
func (t *Tree) lease(st procfs.Stat) (Lease, bool) {
	t.mu.RLock()
	l, ok := t.leases[st.Pid]
	t.mu.RUnlock()
	if !ok || l.StartTime != st.StartTime {
		return Lease{}, false
	}
	return l, true
}
