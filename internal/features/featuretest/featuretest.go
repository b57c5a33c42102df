// Package featuretest lets tests depend on kernel features the way
// cilium/ebpf's testutils do: a test that needs a feature skips, with the
// probe's reason, where the feature is absent, and fails where the running
// kernel is new enough that the feature must be there (a skip would then
// hide a broken kernel, config or probe). The features are probed by
// package features, the same probes `paddock doctor` and the runtime use.
package featuretest

import (
	"errors"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
)

// Require skips tb unless this kernel and process have every feature ids
// names (the features.ID* constants), and fails it where one is missing on
// a kernel that has had it since features.Since. Features only the
// listener probe child finds out (features.NeedsChild) run that child: the
// test binary must then serve features.ProbeChild in TestMain (see package
// reexec); the others are probed in-process.
func Require(tb testing.TB, ids ...string) {
	tb.Helper()
	child := false
	for _, id := range ids {
		child = child || features.NeedsChild(id)
	}
	var r features.Report
	if child {
		r = features.Probe("")
	} else {
		r = features.ProbeLocal()
	}
	for _, id := range ids {
		check(tb, id, r.Need(id))
	}
}

// check skips or fails tb for Need's answer about id.
func check(tb testing.TB, id string, err error) {
	tb.Helper()
	var u *features.Unavailable
	switch {
	case err == nil:
	case errors.As(err, &u) && !u.MustHave:
		tb.Skipf("needs %s: %v", id, err)
	default:
		tb.Fatalf("needs %s, which this kernel must have: %v", id, err)
	}
}

// RequireSince is Require for a kernel feature that package features does
// not list (the EEVDF scheduler, custom slices): missing is why the test
// found it missing (nil: present, nothing happens). It skips tb on kernels
// older than since and fails it on since and newer.
func RequireSince(tb testing.TB, since features.Version, what string, missing error) {
	tb.Helper()
	if missing == nil {
		return
	}
	v, err := features.KernelVersion()
	if err != nil {
		tb.Fatalf("needs %s (%v), and the kernel version is unknown: %v", what, missing, err)
	}
	if v.AtLeast(since) {
		tb.Fatalf("needs %s, which Linux %v has since %v: %v", what, v, since, missing)
	}
	tb.Skipf("needs %s (Linux %v+; this is %v): %v", what, since, v, missing)
}
