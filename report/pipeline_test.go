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
	p, path := journaled(t)
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

// An honoured opt-in and an adoption are counted and listed in the
// summary, which --strict and the reports read; an allowed call and a
// refusal are not counted as either.
func TestSummaryCountsAdoptionsAndOptIns(t *testing.T) {
	p := New(Options{Log: zerolog.Nop()})
	defer p.Close()
	optIn := policy.Decision{Allow: true, Syscall: "execve", Rule: audit.Rule("power_control"), OptIn: "PADDOCK_ALLOW_POWER_CONTROL",
		Action: audit.OptInUsed, Exec: &policy.Exec{Path: "/sbin/reboot", Argv: []string{"reboot", "\nforged"}}}
	p.Decided(Event{Caller: 77, Decision: optIn})
	p.Decided(Event{Caller: 77, Decision: policy.Decision{Allow: true}})
	p.Decided(Event{Caller: 77, Decision: policy.Decision{Refusal: true, Rule: audit.RuleLifeline, Action: audit.SignalDenied, Message: "m"}})
	p.Adopted(Adoption{When: time.Now(), Pid: 4242, Comm: "sleep", Reason: "test\nsubject", By: "pid 77 (sh) uid 1000"})
	p.Flush()
	s := p.Summary()
	if s.Refusals != 1 || s.OptIns != 1 || s.Adoptions != 1 || !s.Widened() || len(s.Permitted) != 2 {
		t.Fatalf("summary %+v; want 1 refusal, 1 opt-in, 1 adoption, both listed", s)
	}
	for _, it := range s.Permitted {
		if strings.ContainsAny(it.Message, "\r\n") {
			t.Errorf("a permitted item's message spans lines: %q", it.Message)
		}
	}
	byAction := map[string]Permitted{}
	for _, it := range s.Permitted {
		byAction[it.Action] = it
	}
	if a := byAction["adopted"]; a.Pid != 4242 || !strings.Contains(a.Message, "pid 4242 (sleep) adopted by pid 77 (sh) uid 1000: test subject") {
		t.Errorf("adoption listed as %+v", a)
	}
	if o := byAction[string(audit.OptInUsed)]; o.Pid != 77 || o.OptIn != "PADDOCK_ALLOW_POWER_CONTROL" || !strings.Contains(o.Message, "allowed by the opt-in PADDOCK_ALLOW_POWER_CONTROL") {
		t.Errorf("opt-in listed as %+v", o)
	}
	if (Summary{Refusals: 3}).Widened() {
		t.Error("refusals alone count as a widening")
	}
}

// One command is one refusal: dash tries `systemctl reboot` at every PATH
// entry, and the tries after the first refused one (the same caller, the
// same arguments and rule, another path) are neither journaled nor counted;
// another caller's, or the same caller's other command, are.
func TestOneCommandOneRefusal(t *testing.T) {
	p, path := journaled(t)
	exec := func(caller int, path string, argv ...string) {
		p.Decided(Event{Caller: caller, Decision: policy.Decision{Refusal: true, Syscall: "execve", Rule: audit.Rule("power_control"),
			Action: audit.ExecDenied, Message: "refused " + path, Exec: &policy.Exec{Path: path, Argv: argv}}})
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		exec(500, dir+"/systemctl", "systemctl", "reboot")
	}
	exec(501, "/usr/bin/systemctl", "systemctl", "reboot")
	exec(500, "/usr/bin/systemctl", "systemctl", "poweroff")
	p.Close()
	if s := p.Summary(); s.Refusals != 3 {
		t.Errorf("summary counts %d refusals, want 3", s.Refusals)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if recs := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(recs) != 3 {
		t.Errorf("journal has %d records, want 3:\n%s", len(recs), b)
	}
}

// journaled is a pipeline whose journal is a file in the test's temporary
// directory, at path.
func journaled(t *testing.T) (p *Pipeline, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return New(Options{Log: zerolog.Nop(), Journal: j}), path
}

// A refusal of the kernel's wall is journaled as wall_denied with its
// target and labels (its blockers, the object), and counted; refusals a
// front end could not hand on one by one (Overflowed) count in the
// summary as refusals not listed.
func TestWallRefusalsAndOverflow(t *testing.T) {
	p, path := journaled(t)
	d := policy.Decision{Refusal: true, Syscall: "ptrace access", Target: 4562, Rule: audit.RuleKernelWall,
		Action: audit.WallDenied, Message: "paddock: the kernel refused a test's access"}
	p.Decided(Event{Caller: 4584, Decision: d, Quiet: true, Labels: []Label{{Key: "blockers", Value: "ptrace", Logged: true}, {Key: "wall", Value: "landlock"}}})
	p.Overflowed(3)
	p.Overflowed(0)
	p.Close()
	s := p.Summary()
	if s.Refusals != 4 || len(s.Items) != 1 || s.Unreported != 3 || s.ByRule[string(audit.RuleKernelWall)] != 1 || s.Items[0].Target != 4562 {
		t.Errorf("summary %+v; want 4 refusals, 3 of them unreported, one listed with its target", s)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(recs) != 1 {
		t.Fatalf("journal %q; want one record", recs)
	}
	for _, want := range []string{`"action":"wall_denied"`, `"target":4562`, `"blockers":"ptrace"`, `"wall":"landlock"`, `"rule":"kernel_wall"`, `"pid":4584`} {
		if !strings.Contains(recs[0], want) {
			t.Errorf("journal record %s lacks %s", recs[0], want)
		}
	}
}
