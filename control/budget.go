package control

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Connection budgets. A connection is charged, at accept time and before it
// is read, to the session (its connector is a process the session owns:
// the agent's tree or an adopted process) or to the outside (the user's
// terminal, scripts, root), and to its connector's pid. Neither side can
// use up the other's slots, and no one process can use up its side's.
const (
	// MaxInsideConns bounds the connections from the session's own
	// processes served at once. A connection whose connector cannot be
	// classified counts here: failing closed charges the agent, never the
	// user.
	MaxInsideConns = 32
	// MaxOutsideConns bounds the connections from processes outside the
	// session served at once: what the user's own `paddock ps`, `adopt`,
	// `release` and `kill` use, out of the agent's reach.
	MaxOutsideConns = 32
	// MaxPeerConns bounds the connections one connecting process (one pid,
	// as SO_PEERCRED names it) may have served at once, on either side.
	MaxPeerConns = 8
)

// side is which budget a connection is charged to.
type side int

const (
	inside side = iota
	outside
)

// String names the side in busy answers.
func (s side) String() string {
	if s == outside {
		return "processes outside the session"
	}
	return "the session's own processes"
}

// limits are the sizes of the budgets (the constants above, but for tests).
type limits struct {
	inside, outside, perPeer int
}

// defaultLimits are the budgets a Server has.
func defaultLimits() limits {
	return limits{inside: MaxInsideConns, outside: MaxOutsideConns, perPeer: MaxPeerConns}
}

// budget counts the connections being served, by side and by connector pid.
// The accept loop takes, each connection's goroutine gives back.
type budget struct {
	lim   limits
	mu    sync.Mutex
	sides [2]int
	peers map[int32]int
}

// newBudget returns an empty budget of the given sizes.
func newBudget(lim limits) *budget {
	return &budget{lim: lim, peers: map[int32]int{}}
}

// peerBusy says why pid may not have another connection, or nil: the
// accept loop asks before it classifies the connector, which costs /proc
// reads, and take asks again.
func (b *budget) peerBusy(pid int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peerBusyLocked(pid)
}

func (b *budget) peerBusyLocked(pid int32) error {
	if n := b.peers[pid]; n >= b.lim.perPeer {
		return fmt.Errorf("paddock is busy: pid %d already has %d control requests in progress on this session (at most %d per process); try again", pid, n, b.lim.perPeer)
	}
	return nil
}

// take charges a connection from pid to side s, or says in words why not.
func (b *budget) take(s side, pid int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.peerBusyLocked(pid); err != nil {
		return err
	}
	max := b.lim.inside
	if s == outside {
		max = b.lim.outside
	}
	if b.sides[s] >= max {
		return fmt.Errorf("paddock is busy: %d control requests from %s are in progress on this session (at most %d); try again", b.sides[s], s, max)
	}
	b.sides[s]++
	b.peers[pid]++
	return nil
}

// give returns what take charged.
func (b *budget) give(s side, pid int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sides[s]--
	if b.peers[pid]--; b.peers[pid] <= 0 {
		delete(b.peers, pid)
	}
}

// sideOf decides which budget a connection from cred is charged to: the
// outside only when the session says so of a connector that is still alive
// once it has answered (while a pidfd on it shows it unreaped, its pid
// cannot have named another process). Everything else, errors included,
// is charged inside, with the reason for the log.
func sideOf(ops Ops, pin func(pid int32) (int, error), cred *unix.Ucred, credErr error) (side, error) {
	if credErr != nil {
		return inside, fmt.Errorf("cannot identify the connector: %w", credErr)
	}
	if cred.Pid <= 0 {
		return inside, fmt.Errorf("the connector's pid is not visible in paddock's PID namespace (SO_PEERCRED pid %d)", cred.Pid)
	}
	pidfd, err := pin(cred.Pid)
	if err != nil {
		return inside, err
	}
	defer unix.Close(pidfd)
	in, err := ops.Inside(int(cred.Pid))
	if err != nil {
		return inside, fmt.Errorf("classifying pid %d: %w", cred.Pid, err)
	}
	if in {
		return inside, nil
	}
	if errors.Is(unix.PidfdSendSignal(pidfd, 0, nil, 0), unix.ESRCH) {
		return inside, fmt.Errorf("pid %d exited before it could be classified", cred.Pid)
	}
	return outside, nil
}
