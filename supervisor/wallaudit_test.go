package supervisor

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/internal/llaudit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/ownership"
)

// TestWallOurs: the agent's domain is the one paddock's program made, in
// this process (a direct launch) or in the agent root before its exec (the
// init); a domain the agent's own programs made (a harness sandboxing
// itself, as the agent root or as any other process), or another
// process's, is not.
func TestWallOurs(t *testing.T) {
	tree, err := ownership.NewTree(procfs.Default(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const root = 4242
	tree.SetRoot(ownership.Identity{Pid: root})
	w := &wallAudit{s: &Session{tree: tree}, exes: []string{"/usr/bin/paddock", "/opt/paddock-init"}}
	tests := []struct {
		name string
		d    llaudit.Domain
		want bool
	}{
		{"direct launch", llaudit.Domain{Pid: os.Getpid(), Exe: "/usr/bin/paddock"}, true},
		{"through the init", llaudit.Domain{Pid: root, Exe: "/opt/paddock-init"}, true},
		{"paddock's program replaced since", llaudit.Domain{Pid: root, Exe: "/usr/bin/paddock (deleted)"}, true},
		{"the agent root's own sandbox", llaudit.Domain{Pid: root, Exe: "/usr/bin/codex"}, false},
		{"another process running paddock", llaudit.Domain{Pid: 1, Exe: "/usr/bin/paddock"}, false},
		{"no pid", llaudit.Domain{Exe: "/usr/bin/paddock"}, false},
	}
	for _, tt := range tests {
		if got := w.ours(tt.d); got != tt.want {
			t.Errorf("%s: ours(%+v) = %v, want %v", tt.name, tt.d, got, tt.want)
		}
	}
}

// TestWallEvent: a denial of the agent's domain becomes a refusal under
// the rule kernel_wall, journaled as wall_denied with what refused and
// its object; its caller is told only where the record names one that is
// still the session's (a pid that names no process of the session's may
// have been reused).
func TestWallEvent(t *testing.T) {
	tree, err := ownership.NewTree(procfs.Default(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{tree: tree}
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		t.Skipf("no syscall table of paddock's for %s", runtime.GOARCH)
	}
	tests := []struct {
		name      string
		d         llaudit.Denial
		strict    bool
		call      string
		quiet     bool
		labels    map[string]string
		inMessage []string
	}{
		{name: "ptrace, caller unknown",
			d:    llaudit.Denial{Domain: 0x1a, Blockers: []string{"ptrace"}, Target: 77, TargetComm: "sleep"},
			call: "ptrace access", quiet: true,
			labels:    map[string]string{"wall": "landlock", "blockers": "ptrace", "target_comm": "sleep", "domain": "1a", "caller": "unknown: the kernel wrote no syscall record for it (a process without an audit context)"},
			inMessage: []string{"refused a process of the agent's ptrace-class access to pid 77 (sleep)", "/proc/77/mem"}},
		{name: "a trapped syscall named, caller not the session's",
			d: llaudit.Denial{Domain: 0x1a, Blockers: []string{"scope.signal"}, Target: 77, TargetComm: "sleep",
				Caller: os.Getpid(), Comm: "helper", Arch: arch, Syscall: unix.SYS_KILL, Exit: -1},
			call: "kill", quiet: true,
			labels:    map[string]string{"blockers": "scope.signal", "comm": "helper", "syscall_nr": strconv.Itoa(unix.SYS_KILL)},
			inMessage: []string{"refused a signal from pid " + strconv.Itoa(os.Getpid()) + " (helper) to pid 77 (sleep)"}},
		{name: "strict wall",
			d:      llaudit.Denial{Domain: 0x1a, Blockers: []string{"fs.write_file"}, Path: "/proc/77/oom_score_adj", Dev: "proc", Ino: 9},
			strict: true, call: "write", quiet: true,
			labels:    map[string]string{"wall": "landlock, strict", "object": "/proc/77/oom_score_adj"},
			inMessage: []string{"writing /proc/77/oom_score_adj", "--strict-wall"}},
		{name: "abstract socket",
			d:    llaudit.Denial{Domain: 0x1a, Blockers: []string{"scope.abstract_unix_socket"}, Path: "@/tmp/.X11-unix/X0"},
			call: "connect", quiet: true,
			labels:    map[string]string{"object": "@/tmp/.X11-unix/X0"},
			inMessage: []string{"abstract unix socket @/tmp/.X11-unix/X0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.cfg.StrictWall = tt.strict
			ev := s.wallEvent(tt.d)
			d := ev.Decision
			if !d.Refusal || d.Rule != audit.RuleKernelWall || d.Action != audit.WallDenied || d.Syscall != tt.call || d.Target != tt.d.Target {
				t.Errorf("decision %+v; want a kernel_wall refusal of %q, journaled as wall_denied, aimed at %d", d, tt.call, tt.d.Target)
			}
			if ev.Quiet != tt.quiet || ev.Caller != tt.d.Caller {
				t.Errorf("caller %d, quiet %v; want %d, %v", ev.Caller, ev.Quiet, tt.d.Caller, tt.quiet)
			}
			got := map[string]string{}
			for _, l := range ev.Labels {
				if l.Value == "" {
					t.Errorf("an empty label %q", l.Key)
				}
				got[l.Key] = l.Value
			}
			for k, v := range tt.labels {
				if got[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], v, got)
				}
			}
			for _, w := range tt.inMessage {
				if !strings.Contains(d.Message, w) {
					t.Errorf("message %q lacks %q", d.Message, w)
				}
			}
		})
	}
}
