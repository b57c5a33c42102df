// Package sockettest helps tests act as the client of a unix socket server:
// connect, read one JSON answer, and tell a connection the server still
// holds from one it has answered or closed. It exists so that the control
// socket's tests and the supervisor's, which hold that socket busy while
// the agent runs, share one copy.
package sockettest

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ShortDir makes a temporary directory, removed when the test ends, whose
// path is short enough for a unix socket in a directory under it (a
// socket's path has 108 bytes; t.TempDir's carries the test's name).
func ShortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "st")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Dial connects to the unix socket at path, closing the connection when the
// test ends.
func Dial(t testing.TB, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Decode reads one JSON value from c into v; the deadline only keeps a
// broken server from hanging the test.
func Decode(t testing.TB, c *net.UnixConn, v any) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(v); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
}

// StillOpen reports whether the server has neither answered nor closed c:
// nothing to read, and no end of file (a non-blocking peek).
func StillOpen(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = errors.Is(err, unix.EAGAIN)
	})
	return open
}
