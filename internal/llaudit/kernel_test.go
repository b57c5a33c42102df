package llaudit_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/llaudit"
	"github.com/paddock-dev/paddock/internal/llaudit/llaudittest"
)

// TestProbe: on this kernel, as root with auditing on, a thread of this
// process refused by a Landlock domain of its own is seen in the kernel's
// audit records (what paddock doctor's item says).
func TestProbe(t *testing.T) {
	llaudittest.Require(t)
	if err := llaudit.Probe(10 * time.Second); err != nil {
		t.Fatalf("Probe: %v", err)
	}
}

// TestSyncHandsOnWhatCameBefore: once Sync returns true, every denial the
// kernel logged before it was called has been handed on, whether its
// event is complete (its AUDIT_EOE came, where this process has an audit
// context) or still held (it has none). Checked with a Sync that does not
// wait for its mark: the denial has not come yet in most runs.
func TestSyncHandsOnWhatCameBefore(t *testing.T) {
	llaudittest.Require(t)
	got := make(chan llaudit.Denial, 16)
	enabled := make(chan bool, 1)
	r, err := llaudit.Open(llaudit.Options{
		Ours:   func(d llaudit.Domain) bool { return d.Pid == os.Getpid() },
		Denied: func(d llaudit.Denial) { got <- d },
		Audit: func(on bool, err error) {
			if err == nil {
				enabled <- on
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if on := <-enabled; !on {
		t.Fatal("the reader was told auditing is off, which Require checked was on")
	}
	name := fmt.Sprintf("paddock-llaudit-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := llaudit.RefusedConnect(name); err != nil {
		t.Fatal(err)
	}
	if !r.Sync(10 * time.Second) {
		t.Fatal("Sync: its own mark never came")
	}
	select {
	case d := <-got:
		if d.Path != "@"+name || !slices.Contains(d.Blockers, "scope.abstract_unix_socket") {
			t.Errorf("handed on %+v, want the refused connection to @%s", d, name)
		}
		if d.Caller != 0 && d.Caller != os.Getpid() {
			t.Errorf("the denial names caller %d, not this process (%d)", d.Caller, os.Getpid())
		}
	default:
		t.Fatal("Sync returned, and the denial logged before it was not handed on")
	}
}
