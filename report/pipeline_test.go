package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/policy"
)

// Under a pace, a burst of paceBurst refusals over it is answered at once,
// the next waits its turn, and after a quiet second the burst is there
// again.
func TestPace(t *testing.T) {
	p := &Pipeline{pace: time.Millisecond}
	t0 := time.Unix(1000, 0)
	for i := range paceBurst + 1 {
		if w := p.paced(t0, nil); w != nil {
			t.Fatalf("refusal %d of a burst waits; want the first %d answered at once", i, paceBurst+1)
		}
	}
	w := p.paced(t0, nil)
	if w == nil {
		t.Fatalf("refusal %d of a burst is answered at once; want it to wait its turn", paceBurst+2)
	}
	<-w // its turn comes (a millisecond later)
	if w := p.paced(t0.Add(time.Second), nil); w != nil {
		t.Error("after a quiet second a refusal waits; want it answered at once")
	}
}

// A pipeline reports each decision once, in the journal with the event's
// labels and in the summary; Close ends it, and a decision after Close is
// counted, not reported, and does not panic.
func TestPipelineReportsAndCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	p := New(Options{Log: zerolog.Nop(), Journal: j})
	d := policy.Decision{Refusal: true, Syscall: "kill", Target: 1, Signal: 9, Rule: audit.RuleLifeline,
		Action: audit.SignalDenied, Message: "paddock refused kill(SIGKILL) of pid 1: a test's message"}
	if w := p.Decided(Event{Caller: 4242, ABI: "x86_64", Decision: d, Labels: []Label{{Key: "container", Value: "c1", Logged: true}}}); w != nil {
		t.Error("a refusal with no message to write waits")
	}
	if w := p.Decided(Event{Caller: 4242, Decision: policy.Decision{Allow: true}}); w != nil {
		t.Error("an allowed call waits")
	}
	p.Close()
	p.Close() // again: nothing
	if w := p.Decided(Event{Caller: 4242, Decision: d}); w != nil {
		t.Error("a refusal after Close waits")
	}
	s := p.Summary()
	if s.Refusals != 2 || len(s.Items) != 1 || s.ByRule[string(audit.RuleLifeline)] != 1 || s.Items[0].Target != 1 {
		t.Errorf("summary %+v; want 2 refusals, one reported with its target", s)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(recs) != 1 || !strings.Contains(recs[0], `"container":"c1"`) || !strings.Contains(recs[0], `"target":1`) {
		t.Errorf("journal %q; want one record with the container's label and the target", recs)
	}
}
