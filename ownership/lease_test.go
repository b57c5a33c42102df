package ownership

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/procfs"
)

// foreignTree is a tree whose supervisor is a pid nobody has, so every
// process the test starts is foreign unless adopted.
func foreignTree(t *testing.T) *Tree {
	t.Helper()
	tr, err := NewTree(procfs.Default(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tr.supervisor = Identity{Pid: 1 << 30}
	tr.ancestors = map[int]uint64{}
	return tr
}

func startSleep(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", append([]string{"30"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// classify is Classify with the test's fatal on error.
func classify(t *testing.T, tr *Tree, pid int) audit.Relation {
	t.Helper()
	rel, _, err := tr.Classify(pid)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// Seed: test_adopt_process_records_and_enables_signaling (the ownership half).
func TestAdoptMakesOwned(t *testing.T) {
	tr := foreignTree(t)
	c := startSleep(t)
	if rel := classify(t, tr, c.Process.Pid); rel != audit.RelForeign {
		t.Fatalf("before adoption: %v, want foreign", rel)
	}
	l, err := tr.Adopt(AdoptRequest{Pid: c.Process.Pid, Reason: "private daemon test subject in tmux", By: "test", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pid != c.Process.Pid || l.Reason != "private daemon test subject in tmux" || l.Comm != "sleep" || l.StartTime == 0 {
		t.Fatalf("lease = %+v", l)
	}
	if rel := classify(t, tr, c.Process.Pid); rel != audit.RelOwned {
		t.Fatalf("after adoption: %v, want owned", rel)
	}
	if _, ok := tr.Release(c.Process.Pid); !ok {
		t.Fatal("release found no lease")
	}
	if rel := classify(t, tr, c.Process.Pid); rel != audit.RelForeign {
		t.Fatalf("after release: %v, want foreign", rel)
	}
}

// Seed: test_pid_reuse_identity_mismatch_refuses_signal — a lease whose
// recorded start time differs from the live process's authorizes nothing.
func TestLeaseIdentityMismatchAuthorizesNothing(t *testing.T) {
	tr := foreignTree(t)
	c := startSleep(t)
	if _, err := tr.Adopt(AdoptRequest{Pid: c.Process.Pid, Reason: "x", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	l := tr.leases[c.Process.Pid]
	l.StartTime++ // the identity the lease was taken on is not the process now at this pid
	l.Comm = "stranger"
	tr.leases[c.Process.Pid] = l
	tr.mu.Unlock()
	if rel := classify(t, tr, c.Process.Pid); rel == audit.RelOwned {
		t.Fatal("a lease with a mismatched start time still authorizes the pid")
	}
	exp := tr.Sweep()
	if len(exp) != 1 || exp[0].Why != "pid reused" {
		t.Fatalf("Sweep = %+v, want one lease expired as pid reused", exp)
	}
	if len(tr.Leases()) != 0 {
		t.Fatal("the expired lease is still listed")
	}
}

// Seed: test_dead_process_lease_expires_and_refuses_signal. The adopted
// process is owned while it runs; once it has exited, and while it is still
// a zombie (its /proc entry, with the start time the lease was taken on, is
// still there, so the lease alone decides), the sweep expires the lease as
// exited and the zombie is owned no more; reaped, it is gone.
func TestLeaseExpiresOnExit(t *testing.T) {
	tr := foreignTree(t)
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	if _, err := tr.Adopt(AdoptRequest{Pid: pid, Reason: "short", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rel := classify(t, tr, pid); rel != audit.RelOwned {
		t.Fatalf("the adopted process, running: %v, want owned", rel)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("wait for the adopted process to exit: %v", err)
	}
	exp := tr.Sweep()
	if len(exp) != 1 || exp[0].Why != "exited" || exp[0].Pid != pid {
		t.Fatalf("Sweep = %+v, want the lease expired as exited", exp)
	}
	if rel := classify(t, tr, pid); rel == audit.RelOwned {
		t.Fatal("the exited process, not yet reaped, is still owned after its lease expired")
	}
	if len(tr.Leases()) != 0 {
		t.Fatalf("leases after the sweep: %+v, want none", tr.Leases())
	}
	_ = c.Wait()
	reaped = true
	if rel := classify(t, tr, pid); rel != audit.RelGone {
		t.Fatalf("the reaped process: %v, want gone", rel)
	}
}

// Seed: test_descendant_process_is_owned_via_ancestry_walk and
// test_ancestry_walk_does_not_cache_visited_strangers — a grandchild of an
// adopted process is owned, and asking about it enrolls nothing.
func TestAdoptedDescendantsOwnedWithoutEnrolment(t *testing.T) {
	tr := foreignTree(t)
	sh := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if _, err := tr.Adopt(AdoptRequest{Pid: sh.Process.Pid, Reason: "parent", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rel := classify(t, tr, grandchild); rel != audit.RelOwned {
		t.Fatalf("grandchild of an adopted process: %v, want owned", rel)
	}
	if l, ok := tr.LeaseFor(grandchild); !ok || l.Pid != sh.Process.Pid {
		t.Fatalf("LeaseFor(grandchild) = %+v, %v; want the parent's lease", l, ok)
	}
	leases := tr.Leases()
	if len(leases) != 1 || leases[0].Pid != sh.Process.Pid {
		t.Fatalf("leases after the walk = %+v; the walk must not enrol the processes it visits", leases)
	}
}

// Seed: test_adopt_process_without_reason_is_refused, test_adopt_process_invalid_pid_is_refused,
// test_adopt_lifeline_refused_without_opt_in, test_adopt_lifeline_permitted_with_opt_in_and_audited (ownership half).
func TestAdoptRefusals(t *testing.T) {
	tr, err := NewTree(procfs.Default(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	c := startSleep(t)
	tests := []struct {
		name     string
		req      AdoptRequest
		want     string
		override bool
	}{
		{"empty reason", AdoptRequest{Pid: c.Process.Pid, Reason: ""}, "non-empty reason", false},
		{"blank reason", AdoptRequest{Pid: c.Process.Pid, Reason: " \t"}, "non-empty reason", false},
		{"pid 1", AdoptRequest{Pid: 1, Reason: "cannot adopt init"}, "valid non-system PID", false},
		{"negative", AdoptRequest{Pid: -5, Reason: "invalid negative pid"}, "valid non-system PID", false},
		{"nonexistent", AdoptRequest{Pid: 1 << 30, Reason: "x"}, "valid non-system PID", false},
		{"supervisor itself", AdoptRequest{Pid: os.Getpid(), Reason: "attempt self adopt"}, "critical session lifeline", false},
		{"supervisor's parent", AdoptRequest{Pid: os.Getppid(), Reason: "attempt ppid adopt"}, "--lifeline-ok", false},
		{"supervisor's parent with override", AdoptRequest{Pid: os.Getppid(), Reason: "explicit supervisor restart", LifelineOK: true}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tr.Adopt(tc.req)
			if tc.want == "" {
				if err != nil || !l.LifelineOverride || l.Pid != tc.req.Pid {
					t.Fatalf("Adopt = %+v, %v; want an override lease", l, err)
				}
				return
			}
			if _, ok := err.(*AdoptError); !ok || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Adopt err = %v; want an AdoptError containing %q", err, tc.want)
			}
		})
	}
}

// Stable: answers may be reused only while no lease is held, and every
// change to the root, its exit or the leases starts a new epoch.
func TestStableEpochs(t *testing.T) {
	tr := foreignTree(t)
	a, b := startSleep(t), startSleep(t)
	steps := []struct {
		name   string
		do     func()
		stable bool
		moved  bool
	}{
		{"nothing changed", func() {}, true, false},
		{"root set", func() { tr.SetRoot(Identity{Pid: a.Process.Pid}) }, true, true},
		{"adopted", func() {
			if _, err := tr.Adopt(AdoptRequest{Pid: b.Process.Pid, Reason: "test", By: "test", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"release of a pid with no lease", func() { tr.Release(a.Process.Pid) }, false, false},
		{"released", func() { tr.Release(b.Process.Pid) }, true, true},
		{"adopted again", func() {
			if _, err := tr.Adopt(AdoptRequest{Pid: b.Process.Pid, Reason: "test", By: "test", Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"sweep with the process alive", func() { tr.Sweep() }, false, false},
		{"swept after it died", func() {
			_ = b.Process.Kill()
			_ = b.Wait()
			if n := len(tr.Sweep()); n != 1 {
				t.Fatalf("swept %d leases, want 1", n)
			}
		}, true, true},
		{"root exited", tr.RootExited, true, true},
	}
	epoch, _ := tr.Stable()
	for _, s := range steps {
		s.do()
		e, ok := tr.Stable()
		if ok != s.stable || (e != epoch) != s.moved {
			t.Errorf("%s: Stable() = %d, %v; want stable %v, epoch moved %v (was %d)", s.name, e, ok, s.stable, s.moved, epoch)
		}
		epoch = e
	}
}

// Reaped: false while the process runs and while it is a zombie (its pid
// is still its own), true once it has been collected.
func TestReaped(t *testing.T) {
	featuretest.Require(t, features.IDPidfdOpen)
	c := startSleep(t)
	fd, err := unix.PidfdOpen(c.Process.Pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", c.Process.Pid, err)
	}
	defer unix.Close(fd)
	check := func(when string, want bool) {
		t.Helper()
		if got := Reaped(fd); got != want {
			t.Errorf("Reaped %s: %v; want %v", when, got, want)
		}
	}
	check("for a running process", false)
	_ = c.Process.Kill()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid(%d, WNOWAIT): %v", c.Process.Pid, err)
	}
	check("for a zombie", false)
	_ = c.Wait()
	check("once the process was collected", true)
}
