package sockettest

import (
	"net"
	"path/filepath"
	"testing"
)

// StillOpen tells a connection the server holds from one it answered or
// closed, and Decode reads the answer. (On a local unix socket a write or a
// close has reached the peer when it returns.)
func TestStillOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		name   string
		server func(*net.UnixConn)
		open   bool
	}{
		{"held", func(*net.UnixConn) {}, true},
		{"answered", func(c *net.UnixConn) { _, _ = c.Write([]byte(`{"ok":true}` + "\n")) }, false},
		{"closed", func(c *net.UnixConn) { c.Close() }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Dial(t, path)
			s, err := l.AcceptUnix()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tc.server(s)
			if got := StillOpen(c); got != tc.open {
				t.Fatalf("StillOpen = %v, want %v", got, tc.open)
			}
			if tc.name == "answered" {
				var v struct{ OK bool }
				if Decode(t, c, &v); !v.OK {
					t.Fatalf("Decode = %+v, want the answer written", v)
				}
			}
		})
	}
}
