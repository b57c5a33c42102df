package supervisor

import (
	"os/exec"
	"testing"

	"github.com/paddock-dev/paddock/audit"
)

// TestSweepDropsEveryExitedPin: the processes of more pins than one
// epoll_wait returns exit; the next check of a decision's cached pins
// drops every one of them (so none can vouch for a pid reused since) and
// keeps the pin of the live agent root.
func TestSweepDropsEveryExitedPin(t *testing.T) {
	w, _, root := pinWorld(t)
	lookup(t, w, root)
	n := 2*len(w.exits.events) + 3
	var cmds []*exec.Cmd
	for i := 0; i < n; i++ {
		c := exec.Command("true")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		if rel, p := lookup(t, w, c.Process.Pid); rel == audit.RelGone || !p.cached {
			t.Fatalf("lookup of pid %d: %v %+v; want kept", c.Process.Pid, rel, p)
		}
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
	if _, p := lookup(t, w, root); !p.hit || !w.cur.hitsHold() {
		t.Fatalf("the live root's pin: %+v; want a hit that holds", p)
	}
	for _, c := range cmds {
		if _, ok := w.pins.byPid[c.Process.Pid]; ok {
			t.Errorf("pid %d exited, and its pin is still kept", c.Process.Pid)
		}
	}
	if _, ok := w.pins.byPid[root]; !ok {
		t.Error("the live root's pin was dropped")
	}
}
