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

// closeWithin calls relay.Close and returns what it said; a minute at
// most, as a safety: a Close that waits on the terminal for ever fails.
func closeWithin(t *testing.T, relay *Relay) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- relay.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Close did not return in a minute: it waits on the user's terminal")
		return nil
	}
}

// TestCloseOnStoppedTerminal: the user's terminal stops taking output
// (tcflow(TCOOFF), as an agent that opened it by its path would do) while
// the agent's last words are on the pty. Close gives up what the terminal
// does not take within the stall bound, says how much, and restarts the
// terminal's output, so that paddock's own lines and the user's shell
// write to it again; it no longer waits for ever.
func TestCloseOnStoppedTerminal(t *testing.T) {
	master, user := ptytest.Open(t)
	relay, err := New(user, user, user)
	if err != nil || relay == nil {
		t.Fatalf("New: %v, %v", relay, err)
	}
	relay.stall = 100 * time.Millisecond
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(int(user.Fd()), unix.TCXONC, unix.TCOOFF); err != nil {
		t.Fatalf("stop the terminal's output: %v", err)
	}
	if _, err := relay.Slave().Write([]byte("last-words\n")); err != nil {
		t.Fatal(err)
	}
	err = closeWithin(t, relay)
	if err == nil || !strings.Contains(err.Error(), "took no output") || strings.Contains(err.Error(), " 0 bytes of the agent's") {
		t.Errorf("Close said %v; want what it gave up of the agent's output", err)
	}
	// Written at once: the terminal's output runs again.
	nb, err := os.OpenFile(user.Name(), os.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if _, err := unix.Write(int(nb.Fd()), []byte("flowing\n")); err != nil {
		_ = unix.IoctlSetInt(int(user.Fd()), unix.TCXONC, unix.TCOON)
		t.Fatalf("the terminal's output is still stopped after Close: %v", err)
	}
	readUntil(t, master, "flowing")
}

// TestLogWriterOnStoppedTerminal: paddock's own line on a terminal whose
// output is stopped is given up within the bound, and the next one at
// once; Close counts them.
func TestLogWriterOnStoppedTerminal(t *testing.T) {
	_, user := ptytest.Open(t)
	relay, err := New(user, user, user)
	if err != nil || relay == nil {
		t.Fatalf("New: %v, %v", relay, err)
	}
	relay.stall = 100 * time.Millisecond
	lw := relay.LogWriter(user)
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(int(user.Fd()), unix.TCXONC, unix.TCOOFF); err != nil {
		t.Fatalf("stop the terminal's output: %v", err)
	}
	for _, line := range []string{"first\n", "second\n"} {
		done := make(chan error, 1)
		go func() { _, err := io.WriteString(lw, line); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a line was written to a terminal whose output is stopped")
			}
		case <-time.After(time.Minute):
			t.Fatal("a log line waited a minute on a stopped terminal")
		}
	}
	if err := closeWithin(t, relay); err == nil || !strings.Contains(err.Error(), "bytes of paddock's own lines") {
		t.Errorf("Close said %v; want the lines it gave up", err)
	}
}

// TestCloseRestoresSharedState: what everyone on the user's terminal
// shares and something other than paddock changed while the relay ran
// (through the terminal opened by its path) is back when Close returns:
// the line discipline (N_NULL drops everything), exclusive mode (later
// opens fail with EBUSY) and stopped output.
func TestCloseRestoresSharedState(t *testing.T) {
	master, user := ptytest.Open(t)
	relay, err := New(user, user, user)
	if err != nil || relay == nil {
		t.Fatalf("New: %v, %v", relay, err)
	}
	relay.stall = 100 * time.Millisecond
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(user.Name(), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.IoctlSetInt(int(other.Fd()), unix.TCXONC, unix.TCOOFF); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(int(other.Fd()), unix.TIOCEXCL, 0); err != nil {
		t.Fatal(err)
	}
	const nNull = 27
	if err := unix.IoctlSetPointerInt(int(other.Fd()), unix.TIOCSETD, nNull); err != nil {
		_ = unix.IoctlSetInt(int(other.Fd()), unix.TCXONC, unix.TCOON)
		t.Skipf("needs the N_NULL line discipline: %v", err)
	}
	_ = closeWithin(t, relay)
	ldisc, err := unix.IoctlGetInt(int(user.Fd()), unix.TIOCGETD)
	if err != nil || ldisc != 0 {
		t.Errorf("line discipline after Close: %d (%v), want 0 (N_TTY)", ldisc, err)
	}
	excl, err := unix.IoctlGetInt(int(user.Fd()), unix.TIOCGEXCL)
	if err != nil || excl != 0 {
		t.Errorf("exclusive mode after Close: %d (%v), want 0", excl, err)
	}
	nb, err := os.OpenFile(user.Name(), os.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if _, err := unix.Write(int(nb.Fd()), []byte("flowing\n")); err != nil {
		_ = unix.IoctlSetInt(int(user.Fd()), unix.TCXONC, unix.TCOON)
		t.Fatalf("the terminal's output is still stopped after Close: %v", err)
	}
	readUntil(t, master, "flowing")
}

// TestAgentResize: the agent's settings of the pty's size are carried out
// in order with the relay's copies of the user's size, and one that echoes
// a size a copy replaced since the agent's last setting (readline's read
// and write of the size at each prompt, around a resize) leaves the pty
// at the user's size; a setting of the agent's own stands.
func TestAgentResize(t *testing.T) {
	ws := func(r, c uint16) unix.Winsize { return unix.Winsize{Row: r, Col: c} }
	type step struct {
		user  *unix.Winsize // resize the user's terminal to this, and copy it
		agent *unix.Winsize // else the agent sets this
	}
	user := func(w unix.Winsize) step { return step{user: &w} }
	agent := func(w unix.Winsize) step { return step{agent: &w} }
	for _, tc := range []struct {
		name  string
		steps []step
		want  unix.Winsize
	}{
		{"an echo of the size before a resize", []step{user(ws(40, 100)), user(ws(50, 120)), agent(ws(40, 100))}, ws(50, 120)},
		{"an echo across two resizes", []step{user(ws(40, 100)), user(ws(50, 120)), user(ws(60, 130)), agent(ws(40, 100))}, ws(60, 130)},
		{"the new size, read after the resize", []step{user(ws(40, 100)), user(ws(50, 120)), agent(ws(50, 120))}, ws(50, 120)},
		{"a size of the agent's own", []step{user(ws(40, 100)), user(ws(50, 120)), agent(ws(33, 90))}, ws(33, 90)},
		{"the old size after a setting of the agent's", []step{user(ws(40, 100)), user(ws(50, 120)), agent(ws(50, 120)), agent(ws(40, 100))}, ws(40, 100)},
		{"a resize after the agent's own size", []step{user(ws(40, 100)), agent(ws(33, 90)), user(ws(50, 120))}, ws(50, 120)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, u := ptytest.Open(t)
			relay, err := New(u, u, u)
			if err != nil || relay == nil {
				t.Fatalf("New: %v, %v", relay, err)
			}
			defer relay.Close()
			for _, s := range tc.steps {
				if s.user != nil {
					if err := unix.IoctlSetWinsize(int(u.Fd()), unix.TIOCSWINSZ, s.user); err != nil {
						t.Fatal(err)
					}
					relay.copySize()
					continue
				}
				if err := relay.AgentResize(s.agent); err != nil {
					t.Fatalf("AgentResize(%+v): %v", *s.agent, err)
				}
			}
			got, err := unix.IoctlGetWinsize(int(relay.Slave().Fd()), unix.TIOCGWINSZ)
			if err != nil || *got != tc.want {
				t.Errorf("the pty's size is %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
}
