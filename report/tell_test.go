package report

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"

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
