package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// confined is what the launch sequence (confine) put on the calling
// thread, which the agent inherits.
type confined struct {
	// listener is the notify filter's listener (-1: none was asked for,
	// or none could be had: listenErr says why).
	listener  int
	listenErr error
	// wall is why the thread is not in a Landlock domain of its own (nil:
	// it is).
	wall error
}

// confine is the one launch sequence, for both ways of starting the agent:
// the thread that forks it (launchDirect) and the init that execs it
// (runInit) run it, and the agent inherits what it put on the thread:
//
//  1. a root agent's hardening, unless keepCaps (hardenAgent);
//  2. the notify filter prog and its listener, when prog is set (the
//     ptrace backend's filter goes on after the tracer has seized the
//     thread, outside this sequence);
//  3. the Landlock wall (enterLandlockDomain), after the filter, so that
//     a thread left behind by a filter that could not be installed is
//     left outside the domain only if the launch ends there.
//
// Its error is fatal to the launch: no hardening, or no strict wall where
// one was asked for. A listener that could not be had is not an error here
// (listenErr): the caller may fall back to ptrace. A wall that is not up
// without --strict-wall is said on the start line (wall).
func confine(prog []unix.SockFilter, keepCaps, strict bool) (confined, error) {
	c := confined{listener: -1}
	if err := hardenAgent(keepCaps); err != nil {
		return c, err
	}
	if prog != nil {
		c.listener, c.listenErr = listen(prog)
	}
	c.wall = enterLandlockDomain(keepCaps, strict)
	if c.wall != nil && strict {
		if c.listener >= 0 {
			unix.Close(c.listener)
			c.listener = -1
		}
		return c, fmt.Errorf("--strict-wall: %w", c.wall)
	}
	return c, nil
}

// wallOf is why the agent an init started is not behind its Landlock wall
// (nil: it is), from what the init said in its handoff: the kernel's own
// reason where it has no Landlock for this session (the same here as in
// the init), else the init's.
func wallOf(said string, keepCaps bool) error {
	if err := landlockReady(keepCaps); err != nil {
		return err
	}
	if said == "" {
		return nil
	}
	return errors.New("the agent's init: " + said)
}
