package proctest

import (
	"os/exec"
	"testing"
)

// Proc is a process a test started outside paddock (a "foreign" process
// that must survive the agent's attempts, or an owned one that must
// not), waited for in the background so that Alive never reads a reaped
// pid.
type Proc struct {
	// Cmd is the started command.
	Cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts cmd, waits for it in the background, and kills and reaps
// it when the test ends. A start that fails fails the test.
func Start(tb testing.TB, cmd *exec.Cmd) *Proc {
	tb.Helper()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd, err)
	}
	p := &Proc{Cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// Pid is the process's pid.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Alive reports whether the process still runs and nothing has doomed it
// (Alive): not reaped, not a zombie, not exiting, no fatal signal
// pending. A check right after the agent's attempts on it cannot pass on
// a process a signal got through to that has not died yet.
func (p *Proc) Alive(tb testing.TB) bool {
	tb.Helper()
	select {
	case <-p.exited:
		return false
	default:
	}
	alive := Alive(tb, p.Pid())
	select {
	case <-p.exited:
		// Reaped meanwhile: what was read may be another process's.
		return false
	default:
		return alive
	}
}
