package report

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/ptytest"
	"github.com/paddock-dev/paddock/policy"
)

// TestTellReachesCallerGoneBeforeTheWrite: a refused caller that exits
// before the teller comes to write its message (a loaded machine, a caller
// that exits on its EPERM) still gets the message on its standard error.
// The caller is a sleep, and the teller starts only once it is killed and
// reaped, so that only the descriptor taken while it waited can still
// reach its stderr. On a pipe the message is written at once, before the
// caller is answered (callerio.WriteNow); on a terminal it waits for the teller.
func TestTellReachesCallerGoneBeforeTheWrite(t *testing.T) {
	const msg = "paddock refused kill(SIGTERM) of pid 1 (init): a test's message"
	for _, tc := range []struct {
		name string
		// open gives the caller's stderr and where to read what it got.
		open func(t *testing.T) (stderr, read *os.File)
		want string
		// now: the message is there before the teller runs.
		now bool
	}{
		{"pipe", func(t *testing.T) (*os.File, *os.File) {
			rd, wr, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rd.Close() })
			return wr, rd
		}, msg + "\n", true},
		{"terminal", func(t *testing.T) (*os.File, *os.File) {
			master, slave := ptytest.Open(t)
			return slave, master
		}, msg + "\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, read := tc.open(t)
			caller := exec.Command("sleep", "300")
			caller.Stderr = stderr
			if err := caller.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.name == "pipe" {
				stderr.Close() // EOF once the caller and the teller are done
			}
			// A pipeline whose teller is not running yet.
			rep := &Pipeline{log: zerolog.Nop(), fs: procfs.Default(), notifyStderr: true,
				limits: map[int]*callerLimit{}, tells: make(chan *tellJob, tellQueueLen)}
			rep.tell(Event{When: time.Now(), Caller: caller.Process.Pid, Decision: policy.Decision{Refusal: true, Message: msg}})
			_ = caller.Process.Kill()
			_ = caller.Wait()
			if queued := len(rep.tells); (queued == 0) != tc.now {
				t.Errorf("%d messages left for the teller; want them written at once: %v", queued, tc.now)
			}
			close(rep.tells)
			rep.teller()
			got := make(chan []byte, 1)
			go func() {
				if tc.name == "pipe" {
					b, _ := io.ReadAll(read)
					got <- b
					return
				}
				b := make([]byte, len(tc.want))
				n, _ := io.ReadFull(read, b)
				got <- b[:n]
			}()
			select {
			case b := <-got:
				if !bytes.Equal(b, []byte(tc.want)) {
					t.Errorf("the gone caller's stderr got %q, want %q", b, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the gone caller's stderr got nothing (10 s, a safety)")
			}
		})
	}
}

// TestMessagesUnderPkill: pkill sends one kill per match. Six refusals of
// foreign processes use up the caller's budget (the sixth is suppressed),
// but the refusal of the agent itself (a lifeline, which says how many
// were not shown) and the first refusal under another rule still get their
// messages; and when the caller exits with refusals suppressed since, its
// stderr gets their count before EOF.
// The caller is a real process (sleep) whose stderr is a pipe.
func TestMessagesUnderPkill(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	caller := exec.Command("sleep", "300")
	caller.Stderr = wr
	if err := caller.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close() // EOF once the caller and paddock's copies are gone
	defer func() { _ = caller.Process.Kill(); _ = caller.Wait() }()
	p := New(Options{Log: zerolog.Nop(), NotifyStderr: true})
	defer p.Close()
	now := time.Now()
	refuse := func(rule audit.Rule, msg string) {
		t.Helper()
		w := p.Decided(Event{When: now, Caller: caller.Process.Pid, Decision: policy.Decision{Refusal: true, Rule: rule, Message: msg}})
		if w != nil {
			<-w
		}
	}
	for i := range BurstPerCaller + 1 {
		refuse(audit.RuleNotOwned, "foreign "+strconv.Itoa(i))
	}
	refuse(audit.RuleLifeline, "the agent itself")
	refuse(audit.RuleGroup, "a mixed group")
	refuse(audit.RuleNotOwned, "foreign again")
	refuse(audit.RuleNotOwned, "foreign once more")
	_ = caller.Process.Kill()
	_ = caller.Wait()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(rd)
		got <- string(b)
	}()
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the caller's stderr never ended (10 s, a safety): the exit watch holds it")
	}
	want := "foreign 0\nforeign 1\nforeign 2\nforeign 3\nforeign 4\n" +
		"paddock: 1 more refusals to this process were not shown; see the journal\nthe agent itself\n" +
		"a mixed group\n" +
		"paddock: 2 more refusals to this process were not shown; see the journal\n"
	if out != want {
		t.Errorf("the caller's stderr got\n%s\nwant\n%s", out, want)
	}
}

// TestRefusalOnceOnASharedStream: without a terminal, where paddock's log
// and the refused caller's stderr are one pipe (a CI log, a harness that
// reads both from one pipe), the refusal shows once there, as the caller's
// message, with no log line repeating it; where they are two pipes, the
// log has its line. The caller is a real process (sleep).
func TestRefusalOnceOnASharedStream(t *testing.T) {
	const msg = "paddock refused kill(SIGTERM) of pid 1 (init): a test's message"
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "one pipe", false: "two pipes"}[shared], func(t *testing.T) {
			logR, logW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer logR.Close()
			errR, errW := logR, logW
			if !shared {
				if errR, errW, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
				defer errR.Close()
			}
			caller := exec.Command("sleep", "300")
			caller.Stderr = errW
			if err := caller.Start(); err != nil {
				t.Fatal(err)
			}
			if !shared {
				errW.Close()
			}
			p := New(Options{Log: zerolog.New(logW), LogFile: logW, NotifyStderr: true})
			if w := p.Decided(Event{Caller: caller.Process.Pid, Decision: policy.Decision{Refusal: true, Rule: audit.RuleNotOwned,
				Syscall: "kill", Target: 1, Signal: 15, Message: msg}}); w != nil {
				<-w
			}
			p.Close()
			_ = caller.Process.Kill()
			_ = caller.Wait()
			logW.Close()
			read := func(f *os.File) string {
				got := make(chan string, 1)
				go func() { b, _ := io.ReadAll(f); got <- string(b) }()
				select {
				case s := <-got:
					return s
				case <-time.After(10 * time.Second):
					t.Fatal("a pipe never ended (10 s, a safety)")
					return ""
				}
			}
			logOut := read(logR)
			if shared {
				if n := strings.Count(logOut, msg); n != 1 || !strings.HasPrefix(logOut, msg+"\n") {
					t.Errorf("the shared pipe shows the refusal %d times, want once, as the caller's message:\n%s", n, logOut)
				}
				return
			}
			if callerOut := read(errR); callerOut != msg+"\n" {
				t.Errorf("the caller's stderr got %q, want the message", callerOut)
			}
			if !strings.Contains(logOut, `"level":"warn"`) || !strings.Contains(logOut, msg) {
				t.Errorf("the log, a pipe of its own, lacks the refusal's line:\n%s", logOut)
			}
		})
	}
}
