package supervisor

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/policy"
)

// TestTellReachesCallerGoneBeforeTheWrite: a refused caller that exits
// before the teller comes to write its message (a loaded machine, a caller
// that exits on its EPERM) still gets the message on its standard error.
// The caller here is a sleep with a pipe for stderr; the teller starts only
// once it is killed and reaped, so that writing through anything but the
// descriptor taken while it waited finds nothing to write to.
func TestTellReachesCallerGoneBeforeTheWrite(t *testing.T) {
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
	wr.Close()
	rep := &reporter{log: zerolog.Nop(), fs: procfs.Default(), notifyStderr: true,
		limits: map[int]*callerLimit{}, tells: make(chan *tellJob, tellQueueLen)}
	const msg = "paddock refused kill(SIGTERM) of pid 1 (init): a test's message"
	rep.tell(refusal{when: time.Now(), caller: caller.Process.Pid, d: policy.Decision{Refusal: true, Message: msg}})
	_ = caller.Process.Kill()
	_ = caller.Wait()
	close(rep.tells)
	rep.teller()
	got, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != msg+"\n" {
		t.Errorf("the gone caller's stderr got %q, want the message", got)
	}
}
