package supervisor

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// A signal that reaches paddock after CatchSignals, before the agent
// exists, waits for the agent and is forwarded to it once it runs, instead
// of ending paddock by its default action: the agent, which does not
// catch SIGUSR1, dies of it.
func TestSignalBeforeStartIsForwarded(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	sg := CatchSignals(false, zerolog.Nop())
	select {
	case <-sg.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the signals were not caught within 10 s")
	}
	if err := unix.Kill(os.Getpid(), unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000 && len(sg.c) == 0; i++ {
		time.Sleep(time.Millisecond)
	}
	if len(sg.c) == 0 {
		t.Fatal("SIGUSR1 was not caught")
	}
	s := startSession(t, time.Minute, Config{Path: sleep, Args: []string{"sleep", "30"}, Signals: sg})
	done := make(chan int, 1)
	go func() { done <- s.Wait() }()
	select {
	case code := <-done:
		if code != 128+int(unix.SIGUSR1) {
			t.Errorf("the agent exited %d, want %d (SIGUSR1, forwarded)", code, 128+int(unix.SIGUSR1))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent was still running 20 s after a SIGUSR1 that should have been forwarded to it")
	}
}
