package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// SupervisorOOMScoreAdj is the oom_score_adj paddock run takes for itself
// once its agent is forked: under memory pressure the OOM killer picks
// the process with the highest badness (its memory, plus oom_score_adj
// thousandths of all memory), so the agent, which uses the memory, goes
// first and the supervisor outlives it, keeping its decisions, its
// journal and the clean-up of what the agent left. -900, not -1000 (never
// killed): a supervisor that itself ran away with nine tenths of the
// memory can still be killed, and with it its agent (PR_SET_PDEATHSIG).
// Lowering oom_score_adj needs CAP_SYS_RESOURCE: an unprivileged paddock
// keeps what it was started with (docs/limits.md).
const SupervisorOOMScoreAdj = -900

// oomScoreAdjFile is this process's oom_score_adj, which is the whole
// process's (every thread's) and is inherited at fork.
const oomScoreAdjFile = "/proc/self/oom_score_adj"

// lowerOOMScoreAdj sets this process's oom_score_adj to adj when that is
// lower than the value it has, which it returns: paddock never makes itself
// a likelier choice than it was started as. Without CAP_SYS_RESOURCE a
// value lower than the lowest this process has been given fails with
// EACCES and changes nothing.
func lowerOOMScoreAdj(adj int) (int, error) {
	prev, err := readOOMScoreAdj()
	if err != nil || prev <= adj {
		return prev, err
	}
	return prev, writeOOMScoreAdj(adj)
}

// readOOMScoreAdj reads this process's oom_score_adj.
func readOOMScoreAdj() (int, error) {
	b, err := os.ReadFile(oomScoreAdjFile)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", oomScoreAdjFile, err)
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return 0, fmt.Errorf("read %s: %q: %w", oomScoreAdjFile, b, err)
	}
	return n, nil
}

// writeOOMScoreAdj sets this process's oom_score_adj to adj.
func writeOOMScoreAdj(adj int) error {
	if err := os.WriteFile(oomScoreAdjFile, []byte(strconv.Itoa(adj)), 0); err != nil {
		return fmt.Errorf("write %d to %s: %w", adj, oomScoreAdjFile, err)
	}
	return nil
}
