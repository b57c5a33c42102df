package bench

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/vram"
)

// fakeWorld is a small in-memory policy.World: an agent root, one owned
// child of it and one foreign process, as a supervisor would see them.
type fakeWorld struct {
	root  int
	procs map[int]policy.Target
	owned []policy.Target
}

func newFakeWorld() *fakeWorld {
	w := &fakeWorld{root: 1000, procs: map[int]policy.Target{
		1000: {Pid: 1000, Comm: "agent", StartTime: 5000, PPid: 999, Pgrp: 1000, Rel: ownership.AgentRoot},
		1001: {Pid: 1001, Comm: "worker", StartTime: 5001, PPid: 1000, Pgrp: 1000, Rel: ownership.Owned},
		4242: {Pid: 4242, Comm: "postgres", StartTime: 10, PPid: 1, Pgrp: 4242, Rel: ownership.Foreign},
	}}
	w.owned = []policy.Target{w.procs[1000], w.procs[1001]}
	return w
}

func (w *fakeWorld) Lookup(pid int) (policy.Target, error) {
	if t, ok := w.procs[pid]; ok {
		return t, nil
	}
	return policy.Target{Pid: pid, Rel: ownership.Gone}, nil
}

func (w *fakeWorld) ThreadOf(tid, pid int) bool { return tid == pid }

func (w *fakeWorld) Tgid(tid int) (int, error) {
	if _, ok := w.procs[tid]; ok {
		return tid, nil
	}
	return 0, nil
}

func (w *fakeWorld) Group(pgid int) ([]policy.Target, error) {
	var out []policy.Target
	for _, t := range w.procs {
		if t.Pgrp == pgid {
			out = append(out, t)
		}
	}
	return out, nil
}

func (w *fakeWorld) FdPid(tid, fd int) (int, error) { return 0, syscall.EBADF }

func (w *fakeWorld) Root() int { return w.root }

func (w *fakeWorld) Guard() guard.Policy { return guard.Policy{Supervised: true} }

func (w *fakeWorld) VRAM() *vram.Budget { return nil }

func (w *fakeWorld) Files(int) vram.Files { return vram.Files{} }

func (w *fakeWorld) Owned(max int) []policy.Target {
	if len(w.owned) > max {
		return w.owned[:max]
	}
	return w.owned
}

var sink policy.Decision

// BenchmarkDecideOwnedKill is the hot path of a supervised agent: the agent
// root sends SIGCONT to a process it started, and Decide allows it.
func BenchmarkDecideOwnedKill(b *testing.B) {
	w := newFakeWorld()
	req := policy.Request{Tid: 1000, Syscall: filter.Kill, ABI: "x86_64", Args: [6]uint64{1001, uint64(syscall.SIGCONT)}}
	if d := policy.Decide(req, w); !d.Allow || d.Rule != policy.RuleOwned {
		b.Fatalf("Decide(kill(owned, SIGCONT)) = allow %v rule %q, want allow, rule %q", d.Allow, d.Rule, policy.RuleOwned)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = policy.Decide(req, w)
	}
}

// BenchmarkDecideForeignKill is the refusal path: the agent signals a
// process it does not own and Decide builds the explanation message. It is
// not hot (refusals are rare), but it shows what a refusal costs.
func BenchmarkDecideForeignKill(b *testing.B) {
	w := newFakeWorld()
	req := policy.Request{Tid: 1000, Syscall: filter.Kill, ABI: "x86_64", Args: [6]uint64{4242, uint64(syscall.SIGTERM)}}
	if d := policy.Decide(req, w); d.Allow || d.Rule != policy.RuleNotOwned {
		b.Fatalf("Decide(kill(foreign, SIGTERM)) = allow %v rule %q, want deny, rule %q", d.Allow, d.Rule, policy.RuleNotOwned)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = policy.Decide(req, w)
	}
}

// BenchmarkClassifyLive classifies a real process through /proc, as the
// supervisor does for each trapped signal: the benchmark process plays the
// supervisor and its own child is therefore Owned.
func BenchmarkClassifyLive(b *testing.B) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Skipf("no sleep binary to start a child: %v", err)
	}
	tree, err := ownership.NewTree(procfs.Default(), os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	child := exec.Command(sleep, "3600")
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	pid := child.Process.Pid
	if rel, _, err := tree.Classify(pid); err != nil || rel != ownership.Owned {
		b.Fatalf("Classify(child %d) = %v, %v; want owned", pid, rel, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rel, _, err := tree.Classify(pid)
		if err != nil || rel != ownership.Owned {
			b.Fatalf("Classify(child %d) = %v, %v; want owned", pid, rel, err)
		}
	}
}
