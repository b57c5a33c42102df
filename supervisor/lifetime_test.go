package supervisor

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A session's goroutines end with it: ten ended sessions and ten failed
// starts in one process leave no more goroutines than one session did
// (the reporter's two goroutines used to stay for ever, 2 becoming 23
// after ten sessions and 43 after ten failed starts as well).
func TestSessionsEndTheirGoroutines(t *testing.T) {
	for _, b := range []Backend{BackendSeccomp, BackendPtrace} {
		t.Run(string(b), func(t *testing.T) { sessionsEndTheirGoroutines(t, b) })
	}
}

func sessionsEndTheirGoroutines(t *testing.T, b Backend) {
	path, err := exec.LookPath("true")
	if err != nil {
		t.Skip(err)
	}
	one := func() {
		t.Helper()
		s := startSession(t, time.Minute, Config{Path: path, Args: []string{"true"}, Backend: b})
		if code := s.Wait(); code != 0 {
			t.Fatalf("true exited %d", code)
		}
		<-s.ended
	}
	one() // whatever a first session starts once for the process
	before := runtime.NumGoroutine()
	for range 10 {
		one()
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	for range 10 {
		if _, err := Start(Config{Path: path, Args: []string{"true"}, Backend: b, Log: zerolog.Nop()}); err == nil {
			t.Fatal("Start with no directory for its control socket succeeded")
		}
	}
	// A few goroutines of the last session's Wait may be ending still
	// (giving its signals back): a leak of even one per session is ten.
	const slack = 4
	if after := runtime.NumGoroutine(); after > before+slack {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after 10 sessions and 10 failed starts, %d after the first session\n%s",
			after, before, buf[:runtime.Stack(buf, true)])
	}
}
