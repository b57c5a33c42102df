package terminal

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/ptytest"
)

// TestNoTerminalNoRelay: without a terminal among the descriptors there is
// nothing to relay.
func TestNoTerminalNoRelay(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	relay, err := New(r, w, w)
	if err != nil || relay != nil {
		t.Fatalf("New on pipes = %v, %v; want nil, nil", relay, err)
	}
}

// readUntil reads f until want shows, 10 s at most (a safety).
func readUntil(t *testing.T, f *os.File, want string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 256)
		for !strings.Contains(b.String(), want) {
			n, err := f.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, want) {
			t.Fatalf("read %q, want %q in it", s, want)
		}
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%q never came", want)
		return ""
	}
}

// TestRelay: the agent gets the pty's slave in place of each terminal and
// keeps the others; the pty starts with the user's settings and size; the
// user's terminal is raw while relaying; input and output are relayed; and
// Close restores the user's settings exactly.
func TestRelay(t *testing.T) {
	master, user := ptytest.Open(t)
	if err := unix.IoctlSetWinsize(int(user.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 77}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(user.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	relay, err := New(user, user, pw)
	if err != nil || relay == nil {
		t.Fatalf("New: %v, %v", relay, err)
	}
	defer relay.Close()
	in, out, errf := relay.Agent()
	if in != relay.Slave() || out != relay.Slave() || errf != pw {
		t.Fatalf("Agent() = %v %v %v: want the slave for the terminals, the pipe as given", in.Name(), out.Name(), errf.Name())
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	raw, err := unix.IoctlGetTermios(int(user.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Errorf("the user's terminal is not raw while relaying: lflag %#x", raw.Lflag)
	}
	inner, err := unix.IoctlGetTermios(int(relay.Slave().Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if inner.Lflag != before.Lflag || inner.Cc != before.Cc {
		t.Errorf("the pty does not start with the user's settings: %+v, want %+v", inner, before)
	}
	ws, err := unix.IoctlGetWinsize(int(relay.Slave().Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row != 33 || ws.Col != 77 {
		t.Errorf("the pty's size is %+v (%v), want 33x77", ws, err)
	}

	// Output: the agent writes on the pty, the user reads it.
	if _, err := relay.Slave().Write([]byte("from-agent\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, master, "from-agent\r\n")
	// Input: the user types, the agent reads it (the pty is canonical).
	if _, err := master.Write([]byte("typed\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, relay.Slave(), "typed\n")

	// paddock's own lines get "\r\n" while the terminal is raw.
	var log bytes.Buffer
	lw := relay.LogWriter(&log)
	if _, err := io.WriteString(lw, "one\ntwo\n"); err != nil {
		t.Fatal(err)
	}
	if log.String() != "one\r\ntwo\r\n" {
		t.Errorf("log while raw: %q", log.String())
	}

	if err := relay.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := unix.IoctlGetTermios(int(user.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("the user's terminal after Close: %+v, want %+v", after, before)
	}
	log.Reset()
	_, _ = io.WriteString(lw, "three\n")
	if log.String() != "three\n" {
		t.Errorf("log after Close: %q", log.String())
	}
}

// TestCloseDrainsOutput: what the agent wrote just before it went is
// written out before Close returns.
func TestCloseDrainsOutput(t *testing.T) {
	master, user := ptytest.Open(t)
	relay, err := New(user, user, user)
	if err != nil || relay == nil {
		t.Fatalf("New: %v, %v", relay, err)
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.Slave().Write([]byte("last-words\n")); err != nil {
		t.Fatal(err)
	}
	if err := relay.Close(); err != nil {
		t.Fatal(err)
	}
	// Written on the user's terminal by now: it waits there to be read.
	readUntil(t, master, "last-words")
}
