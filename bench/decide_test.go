package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
	"github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/policy/policytest"
)

// newFakeWorld is a small policy.World: an agent root, one owned child of
// it and one foreign process, as a supervisor would see them.
func newFakeWorld() policytest.World {
	return policytest.World{
		Procs: map[int]policy.Target{
			1000: {Pid: 1000, Comm: "agent", StartTime: 5000, Rel: audit.RelAgentRoot},
			1001: {Pid: 1001, Comm: "worker", StartTime: 5001, Rel: audit.RelOwned},
			4242: {Pid: 4242, Comm: "postgres", StartTime: 10, Rel: audit.RelForeign},
		},
		Groups: map[int]int{1000: 1000, 1001: 1000, 4242: 4242},
		Policy: guard.Policy{Supervised: true},
	}
}

var sink policy.Decision

// BenchmarkDecideOwnedKill is the hot path of a supervised agent: the agent
// root sends SIGCONT to a process it started, and Decide allows it.
func BenchmarkDecideOwnedKill(b *testing.B) {
	w := newFakeWorld()
	req := policy.Request{Tid: 1000, Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{1001, uint64(syscall.SIGCONT)}}
	if d := policy.Decide(req, w.Full()); !d.Allow || d.Rule != audit.RuleOwned {
		b.Fatalf("Decide(kill(owned, SIGCONT)) = allow %v rule %q, want allow, rule %q", d.Allow, d.Rule, audit.RuleOwned)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = policy.Decide(req, w.Full())
	}
}

// BenchmarkDecideForeignKill is the refusal path: the agent signals a
// process it does not own and Decide builds the explanation message. It is
// not hot (refusals are rare), but it shows what a refusal costs.
func BenchmarkDecideForeignKill(b *testing.B) {
	w := newFakeWorld()
	req := policy.Request{Tid: 1000, Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{4242, uint64(syscall.SIGTERM)}}
	if d := policy.Decide(req, w.Full()); d.Allow || d.Rule != audit.RuleNotOwned {
		b.Fatalf("Decide(kill(foreign, SIGTERM)) = allow %v rule %q, want deny, rule %q", d.Allow, d.Rule, audit.RuleNotOwned)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = policy.Decide(req, w.Full())
	}
}

// BenchmarkClassifyLive classifies a real process through /proc, as the
// supervisor does for each trapped signal aimed at a process the agent
// started. The benchmark process plays the supervisor; a shell it starts
// plays the agent root (set with SetRoot), and the shell's own child, the
// target, is therefore Owned. (A direct child of the supervisor without the
// agent's seccomp filter is not owned: the process hosting the supervisor
// started it, not the agent.)
func BenchmarkClassifyLive(b *testing.B) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		b.Skipf("no sh to start an agent root: %v", err)
	}
	fs := procfs.Default()
	tree, err := ownership.NewTree(fs, os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	root := exec.Command(sh, "-c", "sleep 3600 & echo $!; wait")
	out, err := root.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := root.Start(); err != nil {
		b.Fatal(err)
	}
	pid := 0
	b.Cleanup(func() {
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = root.Process.Kill()
		_ = root.Wait()
	})
	if _, err := fmt.Fscan(bufio.NewReader(out), &pid); err != nil || pid <= 0 {
		b.Fatalf("reading the target's pid from the agent root: %v", err)
	}
	st, err := fs.Stat(root.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	tree.SetRoot(ownership.IdentityOf(st))
	if rel, _, err := tree.Classify(pid); err != nil || rel != audit.RelOwned {
		b.Fatalf("Classify(target %d) = %v, %v; want owned", pid, rel, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rel, _, err := tree.Classify(pid)
		if err != nil || rel != audit.RelOwned {
			b.Fatalf("Classify(target %d) = %v, %v; want owned", pid, rel, err)
		}
	}
}

// BenchmarkDecideExec is the exec path's decision once the caller's memory
// is read: the agent runs a plain command, which the guards let through.
func BenchmarkDecideExec(b *testing.B) {
	w := newFakeWorld()
	req := policy.Request{Tid: 1000, Syscall: filter.Execve, ABI: filter.ABI{Name: "x86_64"},
		Exec: &policy.Exec{Path: "/usr/bin/true", Argv: []string{"true", "--version"}}}
	if d := policy.Decide(req, w.Full()); !d.Allow {
		b.Fatalf("Decide(execve true) refused: %s", d.Message)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = policy.Decide(req, w.Full())
	}
}
