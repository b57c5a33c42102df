package featuretest_test

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/reexec"
)

func TestMain(m *testing.M) {
	reexec.Run(features.ProbeChild())
	os.Exit(m.Run())
}

// outcome is what a Require call did to its test: skipped it, failed it,
// or neither.
type outcome struct{ skipped, failed bool }

// TestRequireSince checks the three outcomes on the running kernel, whose
// version is at least 1.0 and below 1000.0.
func TestRequireSince(t *testing.T) {
	missing := errors.New("not there")
	for _, tc := range []struct {
		name    string
		since   features.Version
		missing error
		want    outcome
	}{
		{"present", features.Version{Major: 1000}, nil, outcome{}},
		{"missing on an older kernel", features.Version{Major: 1000}, missing, outcome{skipped: true}},
		{"missing on a newer kernel", features.Version{Major: 1}, missing, outcome{failed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(func(tb testing.TB) { featuretest.RequireSince(tb, tc.since, "x", tc.missing) })
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRequire checks that features every supported kernel has pass
// (the CI kernel is 6.x) and that an unknown id fails.
func TestRequire(t *testing.T) {
	featuretest.Require(t, features.IDSeccompActions, features.IDChildSubreaper)
	if got := run(func(tb testing.TB) { featuretest.Require(tb, "no such feature") }); !got.failed {
		t.Errorf("Require of an unknown id: %+v, want failed", got)
	}
}

// run calls f with a testing.TB that records instead of stopping the
// test; Skip and Fatal end f's goroutine.
func run(f func(testing.TB)) outcome {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return outcome{skipped: r.skipped, failed: r.failed}
}

// recorder is a testing.TB that records Skip and Fatal calls.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Logf(string, ...any)   {}
