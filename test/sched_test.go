package test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
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
	path := "/proc/" + itoa(p.Pid()) + "/sched"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("needs /proc/PID/sched: %v", err)
	}
	def, ok := sliceIn(string(b))
	if !ok {
		featuretest.RequireSince(t, features.Version{Major: 6, Minor: 6}, "the EEVDF scheduler", errors.New("no se.slice in "+path))
	}
	a, err := unix.SchedGetAttr(p.Pid(), 0)
	if err != nil {
		t.Skipf("needs sched_getattr: %v", err)
	}
	a.Runtime, a.Flags = uint64(sched.SupervisorSlice.Nanoseconds()), 0
	if err := unix.SchedSetAttr(p.Pid(), a, 0); err != nil {
		t.Skipf("needs sched_setattr: %v", err)
	}
	b, _ = os.ReadFile(path)
	if got, _ := sliceIn(string(b)); got != sched.SupervisorSlice.Nanoseconds() {
		featuretest.RequireSince(t, features.Version{Major: 6, Minor: 12}, "custom scheduler slices", fmt.Errorf("a slice of %v reads back as %d ns", sched.SupervisorSlice, got))
	}
	return def
}

// niceIn returns the nice value in a /proc/.../stat line (field 19).
func niceIn(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 17 {
		return 0, false
	}
	n, err := strconv.Atoi(f[16])
	return n, err == nil
}

// supervisorSliceNotInherited: paddock's threads supervise at a nice value
// sched.SupervisorBoost below the one paddock was started with as root,
// and with the short scheduler slice otherwise (internal/sched); the agent,
// forked before they took it, still starts with the default slice and paddock's
// own nice value. paddock runs under nice -n 2 here, so that both are told
// apart from a nice value of 0.
func supervisorSliceNotInherited(t *testing.T, b backend) {
	b.require(t)
	def := customSlices(t)
	niceBin, err := exec.LookPath("nice")
	if err != nil {
		t.Skipf("needs nice(1): %v", err)
	}
	// The agent's parent is the supervisor on both backends (the ptrace
	// backend's init becomes the agent by exec).
	cmd, _ := b.paddockCmd(t, "--", "bash", "-c",
		`cat /proc/self/sched; echo "stat $(cat /proc/self/stat)"; for t in /proc/$PPID/task/*; do echo "== $t"; cat $t/sched; echo "stat $(cat $t/stat)"; done`)
	cmd.Args = append([]string{"nice", "-n", "2"}, cmd.Args...)
	cmd.Path = niceBin
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	parts := strings.Split(string(out), "== ")
	wantSup, wantSlice := 2, sched.SupervisorSlice
	if unix.Geteuid() == 0 {
		wantSup, wantSlice = 2-sched.SupervisorBoost, time.Duration(def)
	}
	statOf := func(part string) string {
		if i := strings.Index(part, "stat "); i >= 0 {
			return part[i+5:]
		}
		return ""
	}
	agent, ok1 := sliceIn(parts[0])
	agentNice, ok2 := niceIn(statOf(parts[0]))
	if !ok1 || !ok2 {
		t.Fatalf("no se.slice or nice value for the agent:\n%s", out)
	}
	if agent != def || agentNice != 2 {
		t.Errorf("agent: slice %d ns and nice %d, want the default %d ns and paddock's own 2", agent, agentNice, def)
	}
	supervising := 0
	for _, p := range parts[1:] {
		ns, ok1 := sliceIn(p)
		n, ok2 := niceIn(statOf(p))
		if ok1 && ok2 && time.Duration(ns) == wantSlice && n == wantSup {
			supervising++
		}
	}
	// Every thread supervises so (the check asks for all but one at least).
	if threads := len(parts) - 1; supervising < threads-1 || threads < 2 {
		t.Errorf("%d of paddock's %d threads have slice %v and nice %d:\n%s", supervising, threads, wantSlice, wantSup, out)
	}
}
