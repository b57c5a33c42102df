package main

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
)

type closed struct{ n *int }

func (c closed) Close() error { *c.n++; return nil }

// TestControlItem: doctor's control-socket item is ok, with the socket
// closed again, where one can be made, and MISSING, naming the error and
// that paddock run cannot start, where not (a sandbox refusing unix sockets).
func TestControlItem(t *testing.T) {
	var n int
	ok := controlItem(func() (io.Closer, string, error) { return closed{&n}, "/run/user/1000/paddock-1/control.sock", nil })
	if ok.Status != features.OK || n != 1 || !strings.Contains(ok.Value, "/run/user/1000/paddock-1/control.sock") {
		t.Errorf("a socket that could be made: %+v, closed %d times", ok, n)
	}
	bad := controlItem(func() (io.Closer, string, error) {
		return nil, "", errors.New("control socket: socket: operation not permitted")
	})
	if bad.Status != features.Missing || !strings.Contains(bad.Value, "operation not permitted") || !strings.Contains(bad.Note, "paddock run cannot start here") {
		t.Errorf("a socket that could not be made: %+v", bad)
	}
}

// TestListenControl makes and removes a real control socket.
func TestListenControl(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	c, path, err := listenControl()
	if err != nil {
		t.Fatalf("paddock doctor could not make its trial control socket: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the trial socket %s: %v", path, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("the trial socket %s is still there after Close", path)
	}
}
