package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// oomScoreAdjOf reads pid's oom_score_adj.
func oomScoreAdjOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Config.OOMScoreAdj is the supervisor's once the agent is forked, and
// only when lower than its own; the agent keeps the value the supervisor
// had, under both backends. The supervisor here is this test process,
// which first raises its own value, so that lowering it back needs no
// privilege (paddock run's SupervisorOOMScoreAdj needs CAP_SYS_RESOURCE:
// the end-to-end test TestSupervisorOOMScoreAdj checks it as root).
func TestOOMScoreAdjIsTheSupervisorsAlone(t *testing.T) {
	before, err := readOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	if before > 900 {
		t.Skipf("oom_score_adj is %d: no room to raise it", before)
	}
	// Every Session makes this process non-dumpable, and a non-dumpable
	// process's /proc files are root's: only a process that may write
	// root's files can then set its own value, at all.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := writeOOMScoreAdj(before); errors.Is(err, fs.ErrPermission) {
		t.Skipf("needs to write this process's oom_score_adj once it is non-dumpable, as a session makes it (root's file then; uid %d): %v", os.Geteuid(), err)
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := writeOOMScoreAdj(before); err != nil {
			t.Fatalf("give back oom_score_adj %d: %v", before, err)
		}
	})
	tests := []struct {
		backend   Backend
		adj, want int // Config.OOMScoreAdj; the supervisor's after Start
	}{
		{BackendSeccomp, before + 50, before + 50},
		{BackendPtrace, before + 50, before + 50},
		{BackendSeccomp, before + 150, before + 100}, // higher: left as it is
	}
	for _, tc := range tests {
		t.Run(string(tc.backend)+"/"+strconv.Itoa(tc.adj-before), func(t *testing.T) {
			if err := writeOOMScoreAdj(before + 100); err != nil {
				t.Fatal(err)
			}
			s := startSession(t, 0, Config{Backend: tc.backend, OOMScoreAdj: tc.adj})
			if got := oomScoreAdjOf(t, os.Getpid()); got != tc.want {
				t.Errorf("the supervisor's oom_score_adj is %d, want %d", got, tc.want)
			}
			if got := oomScoreAdjOf(t, s.Pid()); got != before+100 {
				t.Errorf("the agent's oom_score_adj is %d, want the supervisor's own before, %d", got, before+100)
			}
		})
	}
}
