package dbustest

import "testing"

// StandIn serves name on the bus at busPath with h, from a connection of
// its own, until the test ends: a stand-in for a real service (logind,
// a notification daemon). It returns once the connection owns name.
// Should serving fail, the test fails and the stand-in leaves the bus,
// which answers the calls still waiting on it with an error: a client's
// call ends rather than hangs.
func StandIn(t testing.TB, busPath, name string, h Handler) {
	t.Helper()
	c, _, err := Dial(busPath)
	if err != nil {
		t.Fatalf("stand-in %s: %v", name, err)
	}
	failed := make(chan error, 1)
	t.Cleanup(func() {
		c.Close()
		select {
		case err := <-failed:
			t.Errorf("stand-in %s failed: %v", name, err)
		default:
		}
	})
	if err := c.RequestName(name); err != nil {
		t.Fatalf("stand-in %s: %v", name, err)
	}
	go func() {
		if err := c.Serve(h); err != nil {
			failed <- err
			c.Close()
		}
	}()
}
