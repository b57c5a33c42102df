package supervisor

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/guard"
	"github.com/paddock-dev/paddock/vram"
)

// A decision that waits on a model file (here one whose read never ends
// until the test lets it) does not hold up the decisions behind it: the
// agent's next kill is answered while the exec decision still waits, under
// both backends. Without workers the kill would wait behind the read.
func TestWaitingExecDoesNotHoldUpSignals(t *testing.T) {
	for _, b := range []Backend{BackendSeccomp, BackendPtrace} {
		t.Run(string(b), func(t *testing.T) { waitingExecDoesNotHoldUpSignals(t, b) })
	}
}

func waitingExecDoesNotHoldUpSignals(t *testing.T, b Backend) {
	dir := t.TempDir()
	server := filepath.Join(dir, "llama-server")
	if err := os.WriteFile(server, []byte("#!/bin/sh\necho served >"+filepath.Join(dir, "served")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{}, 1)
	release := make(chan struct{})
	files := func(int) vram.Files {
		return vram.Files{
			Size: func(string) (int64, error) { return 4 << 30, nil },
			Open: func(string) (io.ReadCloser, error) {
				opened <- struct{}{}
				<-release
				return nil, errors.New("reading model.gguf: gave up")
			},
		}
	}
	budget := &vram.Budget{TotalGB: 24, AvailableGB: 24, Configured: true, Source: "profile"}
	script := server + ` -m model.gguf & read go; sleep 600 & kill $!; echo "status $?"; wait`
	s, inW, outR := startScript(t, time.Minute, script, Config{
		TrapExec: true, Guard: guard.Policy{Supervised: true}, Backend: b,
		VRAM: func() *vram.Budget { return budget }, modelFiles: files,
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	select {
	case <-opened:
	case <-time.After(time.Minute):
		t.Fatal("the llama-server exec never reached its model file")
	}
	if _, err := inW.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := outR.ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		if line != "status 0\n" {
			t.Fatalf("the agent's kill of its own sleep: %q, want status 0", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's kill was not answered while an exec decision waited on a file")
	}
	if _, err := os.Stat(filepath.Join(dir, "served")); err == nil {
		t.Fatal("llama-server ran before its decision was taken")
	}
	close(release)
	if code := s.Wait(); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "served")); err != nil || !strings.Contains(string(got), "served") {
		t.Fatalf("llama-server did not run once its decision was taken: %q, %v", got, err)
	}
}
