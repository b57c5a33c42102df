package policy_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	. "github.com/paddock-dev/paddock/policy"
)

// names is a caller's PID namespace nested in the world of the tests:
// local number -> the world's.
type names map[int]int

func (n names) Host(id int) (int, error) {
	if id == 666 {
		return 0, errors.New("status unreadable")
	}
	return n[id], nil
}

func (n names) Local(h int) (int, error) {
	for l, x := range n {
		if x == h {
			return l, nil
		}
	}
	return 0, nil
}

// TestTranslate decides calls of worker 101, which sees itself as pid 1
// of a PID namespace of its own (unshare --pid, bwrap --unshare-pid),
// where 2 is the owned sleep 102, 7 the foreign editor 301 and 8 its
// group 300 (a process
// the namespace shows: the case of a root agent that entered a foreign
// one). The world's 2 does not exist, and its 200 is a foreign process no
// number of the namespace names: read untranslated, kill(2) would be
// ESRCH and kill(200) a refusal naming the foreign code, and
// `paddock adopt 200` the way out.
func TestTranslate(t *testing.T) {
	const sigterm = 15
	ns := names{1: 101, 2: 102, 7: 301, 8: 300, 9: 111}
	tests := []struct {
		name    string
		r       Request
		allow   bool
		errno   syscall.Errno
		rule    audit.Rule
		target  int
		args    [6]uint64 // the translated arguments, where allowed
		message []string
	}{
		{name: "kill of the namespace's sleep", r: req(101, filter.Kill, 2, sigterm), allow: true, rule: audit.RuleOwned, target: 102, args: [6]uint64{102, sigterm}},
		{name: "kill of a number the namespace lacks, a foreign process's outside", r: req(101, filter.Kill, 200, sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "probe of a number the namespace lacks", r: req(101, filter.Kill, 200, 0), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "kill of a group", r: req(101, filter.Kill, neg(2), sigterm), allow: true, rule: audit.RuleOwned, target: -102, args: [6]uint64{neg(102), sigterm}},
		{name: "kill of a group the namespace lacks", r: req(101, filter.Kill, neg(200), sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: -200},
		{name: "kill -1 is every process anywhere", r: req(101, filter.Kill, neg(1), sigterm), errno: syscall.EPERM, rule: audit.RuleBroadcast, target: -1},
		{name: "tgkill of its own thread", r: req(101, filter.Tgkill, 1, 9, sigterm), allow: true, rule: audit.RuleOwned, target: 101, args: [6]uint64{101, 111, sigterm}},
		{name: "tgkill of a thread the namespace lacks", r: req(101, filter.Tgkill, 1, 111, sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 111},
		{name: "tkill of a thread", r: req(101, filter.Tkill, 9, sigterm), allow: true, rule: audit.RuleOwned, target: 101, args: [6]uint64{111, sigterm}},
		{name: "prlimit64 of the sleep", r: req(101, filter.Prlimit64, 2, 7, 0x7000, 0), allow: true, rule: audit.RuleOwned, target: 102, args: [6]uint64{102, 7, 0x7000}},
		{name: "sched_setaffinity of a number the namespace lacks", r: req(101, filter.SchedSetaffinity, 200, 8, 0x7000), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "ptrace attach to the sleep", r: req(101, filter.Ptrace, 16, 2), allow: true, rule: audit.RuleOwned, target: 102, args: [6]uint64{16, 102}},
		{name: "process_vm_writev of a number the namespace lacks", r: req(101, filter.ProcessVMWritev, 200, 0x7000, 1, 0x7100, 1, 0), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "setpriority of the sleep's group", r: req(101, filter.Setpriority, filter.PrioPgrp, 2, 19), allow: true, rule: audit.RuleOwned, target: -102, args: [6]uint64{filter.PrioPgrp, 102, 19}},
		{name: "setpriority of a user is not a pid", r: req(101, filter.Setpriority, filter.PrioUser, 200, 19), errno: syscall.EPERM, rule: audit.RuleBroadcast},
		{name: "perf_event_open of a cgroup is not a pid", r: req(101, filter.PerfEventOpen, 0x7000, 200, 0, neg(1), 1<<2), errno: syscall.EPERM, rule: audit.RuleBroadcast},
		{name: "F_SETOWN of a number the namespace lacks", r: req(101, filter.Fcntl, 3, filter.FSetown, 200), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "F_SETOWN of the sleep's group", r: req(101, filter.Fcntl, 3, filter.FSetown, neg(2)), allow: true, rule: audit.RuleOwned, target: -102, args: [6]uint64{3, filter.FSetown, neg(102)}},
		{name: "F_SETOWN_EX of the sleep", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 1, 0, 0, 0, 2, 0, 0, 0), allow: true, rule: audit.RuleOwned, target: 102, args: [6]uint64{3, filter.FSetownEx, 0x1000}},
		{name: "F_SETOWN_EX of a number the namespace lacks", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 1, 0, 0, 0, 200, 0, 0, 0), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 200},
		{name: "FIOSETOWN of the sleep's group", r: mem(req(101, filter.Ioctl, 3, filter.FIOSETOWN, 0x1000), 0xfe, 0xff, 0xff, 0xff), allow: true, rule: audit.RuleOwned, target: -102, args: [6]uint64{3, filter.FIOSETOWN, 0x1000}},
		{name: "a number that cannot be read", r: req(101, filter.Kill, 666, sigterm), errno: syscall.EPERM, rule: audit.RuleUndecidable, target: 666,
			message: []string{"what pid 666 names in the caller's PID namespace", "status unreadable"}},
		{name: "refusal names the pid the caller used and paddock's", r: req(101, filter.Kill, 7, sigterm), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 301,
			message: []string{"of pid 7 (editor; paddock's pid 301) from pid 1 (worker; paddock's pid 101)", "pid 7 is not owned", "paddock adopt 7 --reason",
				"Active owned PIDs: paddock's pid 100 (agent), 1 (worker), 2 (sleep)", "From outside the caller's PID namespace", "paddock adopt 301 --reason \"...\" --socket"}},
		{name: "group refusal names the group as the caller did", r: req(101, filter.Kill, neg(8), sigterm), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300,
			message: []string{"of process group 8 (paddock's 300)", "7 (editor)"}},
	}
	w := world().Full()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, d, done := Translate(tc.r, ns, w)
			if !done {
				if r.Said != tc.r.Args || r.Names == nil {
					t.Errorf("the translated request lost what the caller said: %v", r.Said)
				}
				d = Decide(r, w)
			}
			if d.Allow != tc.allow || d.Errno != tc.errno || d.Rule != tc.rule || d.Target != tc.target {
				t.Fatalf("got allow=%v errno=%v rule=%s target=%d (%s); want allow=%v errno=%v rule=%s target=%d",
					d.Allow, d.Errno, d.Rule, d.Target, d.Message, tc.allow, tc.errno, tc.rule, tc.target)
			}
			if tc.allow && tc.args != ([6]uint64{}) && r.Args != tc.args {
				t.Errorf("translated args %v, want %v", r.Args, tc.args)
			}
			if d.Refusal != (tc.errno == syscall.EPERM) {
				t.Errorf("Refusal = %v for errno %v", d.Refusal, tc.errno)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q lacks %q", d.Message, m)
				}
			}
		})
	}
}
