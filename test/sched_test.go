package test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sched"
)

// sliceIn returns the se.slice value (ns) in a /proc/.../sched text.
func sliceIn(text string) (int64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "se.slice" {
			ns, err := strconv.ParseInt(f[2], 10, 64)
			return ns, err == nil
		}
	}
	return 0, false
}

// customSlices skips the test unless this kernel shows and honours a
// custom scheduler slice (EEVDF with sched_attr.sched_runtime, Linux 6.12+),
// and returns the default slice a process gets.
func customSlices(t *testing.T) int64 {
	t.Helper()
	p := startForeign(t, "sleep", "300")
	path := "/proc/" + itoa(p.pid()) + "/sched"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("needs /proc/PID/sched: %v", err)
	}
	def, ok := sliceIn(string(b))
	if !ok {
		t.Skip("needs the EEVDF scheduler (Linux 6.6+): no se.slice in " + path)
	}
	a, err := unix.SchedGetAttr(p.pid(), 0)
	if err != nil {
		t.Skipf("needs sched_getattr: %v", err)
	}
	a.Runtime, a.Flags = uint64(sched.SupervisorSlice.Nanoseconds()), 0
	if err := unix.SchedSetAttr(p.pid(), a, 0); err != nil {
		t.Skipf("needs sched_setattr: %v", err)
	}
	b, _ = os.ReadFile(path)
	if got, _ := sliceIn(string(b)); got != sched.SupervisorSlice.Nanoseconds() {
		t.Skipf("needs custom scheduler slices (Linux 6.12+): a slice of %v reads back as %d ns", sched.SupervisorSlice, got)
	}
	return def
}

// supervisorSliceNotInherited: paddock's threads supervise with the short
// scheduler slice (internal/sched), and the agent, forked by one of them,
// still starts with the kernel's default one.
func supervisorSliceNotInherited(t *testing.T, b backend) {
	b.require(t)
	def := customSlices(t)
	// The agent's parent is the supervisor on both backends (the ptrace
	// backend's init becomes the agent by exec).
	r := b.sh(t, `cat /proc/self/sched; for f in /proc/$PPID/task/*/sched; do echo "== $f"; cat "$f"; done`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	parts := strings.Split(r.stdout, "== ")
	agent, ok := sliceIn(parts[0])
	if !ok {
		t.Fatalf("no se.slice in the agent's /proc/self/sched:\n%s", r.stdout)
	}
	if agent != def {
		t.Errorf("agent slice %d ns, want the default %d ns", agent, def)
	}
	short := 0
	for _, p := range parts[1:] {
		if ns, ok := sliceIn(p); ok && time.Duration(ns) == sched.SupervisorSlice {
			short++
		}
	}
	// Every thread but the one that forked the agent (on the seccomp
	// backend it keeps the default it gave the agent, and only waits).
	if threads := len(parts) - 1; short < threads-1 || threads < 2 {
		t.Errorf("%d of paddock's %d threads have the %v slice:\n%s", short, threads, sched.SupervisorSlice, r.stdout)
	}
}
