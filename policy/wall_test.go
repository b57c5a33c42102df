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

// TestDecideWall: the default wall's decisions from what the front end
// found of the target (the world of world(): 101 is the agent's, 200
// foreign, 60 paddock).
func TestDecideWall(t *testing.T) {
	w := world()
	w.Broken = map[int]bool{404: true}
	open := func(wl Wall) Request {
		wl.Flags = 1 // O_WRONLY
		return Request{Tid: 101, Syscall: filter.Openat, Wall: &wl}
	}
	conn := func(wl Wall) Request {
		wl.Family = 1 // AF_UNIX
		return Request{Tid: 101, Syscall: filter.Connect, Wall: &wl}
	}
	for _, tc := range []struct {
		name   string
		r      Request
		allow  bool
		errno  syscall.Errno
		rule   audit.Rule
		action audit.Action
		msg    string // in the message of a refusal
	}{
		{name: "a regular file", r: open(Wall{Path: "/home/u/x"}), allow: true, rule: audit.RuleWallPassed},
		{name: "own /proc file", r: open(Wall{Path: "/proc/self/oom_score_adj", FS: "proc", Proc: 101, ProcFile: "oom_score_adj"}), allow: true, rule: audit.RuleSelf},
		{name: "a thread's own process", r: func() Request {
			r := open(Wall{Path: "/proc/self/comm", FS: "proc", Proc: 101, ProcFile: "comm"})
			r.Tid = 111
			return r
		}(), allow: true, rule: audit.RuleSelf},
		{name: "a child's /proc file", r: open(Wall{Path: "/proc/102/oom_score_adj", FS: "proc", Proc: 102, ProcFile: "oom_score_adj"}), allow: true, rule: audit.RuleOwned},
		{name: "a foreign /proc file", r: open(Wall{Path: "/proc/200/oom_score_adj", FS: "proc", Proc: 200, ProcFile: "oom_score_adj"}),
			errno: syscall.EPERM, rule: audit.RuleNotOwned, action: audit.WriteDenied,
			msg: "paddock refused openat(/proc/200/oom_score_adj, O_WRONLY) from pid 101 (worker): the file belongs to pid 200 (code), which is foreign, not the agent's"},
		{name: "paddock's own /proc file", r: open(Wall{Path: "/proc/60/mem", FS: "proc", Proc: 60, ProcFile: "mem"}), errno: syscall.EPERM, rule: audit.RuleNotOwned, action: audit.WriteDenied},
		{name: "/proc not of a process", r: open(Wall{Path: "/proc/sys/vm/drop_caches", FS: "proc"}), allow: true, rule: audit.RuleWallPassed},
		{name: "an unreadable target", r: open(Wall{Path: "/proc/404/oom_score_adj", FS: "proc", Proc: 404}), errno: syscall.EPERM, rule: audit.RuleUndecidable, action: audit.WriteDenied},
		{name: "a resolution that failed", r: open(Wall{Path: "x", Err: errors.New("boom")}), errno: syscall.EPERM, rule: audit.RuleUndecidable, msg: "boom"},
		{name: "strict wall, own /proc file", r: open(Wall{Path: "/proc/self/oom_score_adj", FS: "proc", Proc: 101, StrictWall: true}), errno: syscall.EPERM, rule: audit.RuleStrictWall, msg: "--strict-wall"},
		{name: "strict wall, cgroup", r: open(Wall{Path: "/sys/fs/cgroup/x/cgroup.kill", FS: "cgroup", StrictWall: true}), errno: syscall.EPERM, rule: audit.RuleStrictWall},
		{name: "strict wall, a regular file", r: open(Wall{Path: "/tmp/x", StrictWall: true}), allow: true, rule: audit.RuleWallPassed},
		{name: "cgroup of the agent's", r: open(Wall{Path: "/sys/fs/cgroup/a/cgroup.freeze", FS: "cgroup", Cgroup: "/sys/fs/cgroup/a", Members: []int{101, 102}}), allow: true, rule: audit.RuleOwned},
		{name: "empty cgroup", r: open(Wall{Path: "/sys/fs/cgroup/e/cgroup.freeze", FS: "cgroup", Cgroup: "/sys/fs/cgroup/e"}), allow: true, rule: audit.RuleOwned},
		{name: "cgroup with a foreign member", r: open(Wall{Path: "/sys/fs/cgroup/u/cgroup.kill", FS: "cgroup", Cgroup: "/sys/fs/cgroup/u", Members: []int{101, 200}}),
			errno: syscall.EPERM, rule: audit.RuleGroup, action: audit.WriteDenied, msg: "which holds processes that are not the agent's (pid 200 (code))"},
		{name: "cgroup v1 event registration in a cgroup with a foreign member", r: open(Wall{Path: "/sys/fs/cgroup/memory/u/cgroup.event_control", FS: "cgroup", Cgroup: "/sys/fs/cgroup/memory/u", CgroupFile: "cgroup.event_control", Members: []int{101, 200}}),
			allow: true, rule: audit.RuleWallPassed},
		{name: "a link named cgroup.event_control decides by the file it reaches", r: open(Wall{Path: "/tmp/cgroup.event_control", FS: "cgroup", Cgroup: "/sys/fs/cgroup/u", CgroupFile: "cgroup.kill", Members: []int{101, 200}}),
			errno: syscall.EPERM, rule: audit.RuleGroup},
		{name: "strict wall, cgroup v1 event registration", r: open(Wall{Path: "/sys/fs/cgroup/memory/a/cgroup.event_control", FS: "cgroup", CgroupFile: "cgroup.event_control", StrictWall: true}), errno: syscall.EPERM, rule: audit.RuleStrictWall},
		{name: "cgroup not listed", r: open(Wall{Path: "/sys/fs/cgroup/big/cgroup.kill", FS: "cgroup", CgroupErr: errors.New("more than 4096 processes")}), errno: syscall.EPERM, rule: audit.RuleUndecidable},
		{name: "a user's tmux", r: conn(Wall{Path: "/tmp/tmux-1000/default", Deputy: DeputyTmux, Peer: 200}),
			errno: syscall.EPERM, rule: audit.RuleDeputy, action: audit.DeputyDenied, msg: "it reaches a tmux server the agent did not start (pid 200 (code), foreign)"},
		{name: "the agent's own tmux", r: conn(Wall{Path: "/tmp/tmux-1000/mine", Deputy: DeputyTmux, Peer: 103}), allow: true, rule: audit.RuleOwned},
		{name: "a screen nobody found", r: conn(Wall{Path: "/run/screen/S-u/1.x", Deputy: DeputyScreen}), errno: syscall.EPERM, rule: audit.RuleUndecidable},
		{name: "docker", r: conn(Wall{Path: "/run/docker.sock", Deputy: DeputyDocker}), errno: syscall.EPERM, rule: audit.RuleDeputy, action: audit.DeputyDenied, msg: `deputies_allowed = ["docker"]`},
		{name: "docker allowed", r: conn(Wall{Path: "/run/docker.sock", Deputy: DeputyDocker, EngineAllowed: true}), allow: true, rule: audit.RuleDeputy},
		{name: "podman", r: conn(Wall{Path: "/run/user/1000/podman/podman.sock", Deputy: DeputyPodman}), errno: syscall.EPERM, rule: audit.RuleDeputy, msg: "the Podman API"},
		{name: "the system bus, filtered", r: conn(Wall{Path: "/run/dbus/system_bus_socket", Deputy: DeputySystemBus}), allow: true, rule: audit.RuleDeputy},
		{name: "a dev server", r: conn(Wall{Path: "/tmp/dev.sock", Peer: 200}), allow: true, rule: audit.RuleWallPassed},
		{name: "abstract, scoped, foreign listener", r: conn(Wall{Abstract: "x", Scoped: true, Peer: 200}), errno: syscall.EPERM, rule: audit.RuleNotOwned},
		{name: "abstract, scoped, own listener", r: conn(Wall{Abstract: "x", Scoped: true, Peer: 103}), allow: true, rule: audit.RuleWallPassed},
		{name: "abstract, no scope", r: conn(Wall{Abstract: "x", Peer: 200}), allow: true, rule: audit.RuleWallPassed},
		{name: "no facts", r: Request{Tid: 101, Syscall: filter.Connect}, errno: syscall.EPERM, rule: audit.RuleUndecidable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.r, w.Full())
			if d.Allow != tc.allow || d.Errno != tc.errno || d.Rule != tc.rule {
				t.Fatalf("Decide: allow=%v errno=%v rule=%s; want allow=%v errno=%v rule=%s (%s)", d.Allow, d.Errno, d.Rule, tc.allow, tc.errno, tc.rule, d.Message)
			}
			if tc.action != "" && d.Action != tc.action {
				t.Errorf("action %s, want %s", d.Action, tc.action)
			}
			if !d.Allow && d.Refusal && !strings.Contains(d.Message, "Way out") {
				t.Errorf("a refusal without its way out: %s", d.Message)
			}
			if tc.msg != "" && !strings.Contains(d.Message, tc.msg) {
				t.Errorf("message %q lacks %q", d.Message, tc.msg)
			}
		})
	}
}
