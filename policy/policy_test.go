package policy_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/audit"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/guard"
	. "github.com/paddock-dev/paddock/policy"
	"github.com/paddock-dev/paddock/policy/policytest"
	"github.com/paddock-dev/paddock/vram"
)

// The world of the tests:
//
//	1 init (foreign lifeline)   50 login shell (supervisor ancestor)   60 paddock (supervisor)
//	100 agent root, group 100; 101 owned child in group 100; 102 owned child in group 102 (own group)
//	103 owned, group 300 shared with foreign 301; 200 foreign process, group 200
//	101 has a second thread 111.
func world() policytest.World {
	return policytest.World{
		Policy: guard.Policy{AllowOptIn: true, Supervised: true},
		Procs: map[int]Target{
			1:   {Pid: 1, Comm: "systemd", Rel: audit.RelInit},
			50:  {Pid: 50, Comm: "bash", Rel: audit.RelSupervisorAncestor},
			60:  {Pid: 60, Comm: "paddock", Rel: audit.RelSupervisor},
			100: {Pid: 100, Comm: "agent", Rel: audit.RelAgentRoot},
			101: {Pid: 101, Comm: "worker", Rel: audit.RelOwned},
			102: {Pid: 102, Comm: "sleep", Rel: audit.RelOwned},
			103: {Pid: 103, Comm: "server", Rel: audit.RelOwned},
			200: {Pid: 200, Comm: "code", Rel: audit.RelForeign},
			301: {Pid: 301, Comm: "editor", Rel: audit.RelForeign},
		},
		Groups: map[int]int{1: 1, 50: 50, 60: 50, 100: 100, 101: 100, 102: 102, 103: 300, 200: 200, 301: 300},
		// The agent root 100 started worker 101, which started sleep 102
		// and server 103; paddock 60 started the root.
		Parents: map[int]int{60: 50, 100: 60, 101: 100, 102: 101, 103: 101},
		Signals: map[int][2]uint64{101: {1<<(10-1) | 1<<(1-1) | 1<<(2-1), 0}}, // worker catches SIGUSR1, SIGHUP and SIGINT
		Threads: map[int]int{111: 101},
		Fds:     map[[2]int]int{{101, 5}: 102, {101, 6}: 200, {101, 7}: -1, {101, 8}: 103, {102, 10}: 101},
		Ttys:    map[[2]int]int{{101, 20}: 102, {101, 21}: 300, {101, 22}: 0},
		Terms: map[[2]int]Term{
			{101, 0}:  {Dev: 0x8803, Name: "/dev/pts/3", Session: true},
			{101, 30}: {Dev: 0x8801, Name: "/dev/pts/1", Supervisor: true},
			{101, 31}: {Dev: 0x8807, Name: "/dev/pts/7", Foreign: []Target{{Pid: 50, Comm: "bash", Rel: audit.RelSupervisorAncestor}}},
			{101, 32}: {Dev: 0x8809, Name: "/dev/pts/9"},
			{101, 33}: {Dev: 0x8809, Name: "/dev/ptmx", Master: true},
			{101, 34}: {},
			{101, 35}: {Dev: 0x8801, Supervisor: true},
			{101, 36}: {Dev: 0x8801, Name: "/dev/pts/1", Session: true, Supervisor: true},
			{102, 0}:  {Dev: 0x8803, Name: "/dev/pts/3", Session: true},
			{102, 30}: {Dev: 0x8801, Name: "/dev/pts/1", Supervisor: true},
		},
		Admins: map[int]bool{102: true},
		Broken: map[int]bool{666: true},
	}
}

// pidfdSignalProcessGroup is PIDFD_SIGNAL_PROCESS_GROUP (linux/pidfd.h).
const pidfdSignalProcessGroup = 1 << 2

func req(tid int, sc filter.Syscall, args ...uint64) Request {
	r := Request{Tid: tid, Syscall: sc, ABI: filter.ABI{Name: "x86_64"}}
	copy(r.Args[:], args)
	return r
}

// mem attaches the bytes the backend read at the request's pointer argument.
func mem(r Request, b ...byte) Request {
	r.Mem = b
	return r
}

// neg encodes a negative int the way it arrives in a 64-bit register.
func neg(n int) uint64 { return uint64(int64(-n)) }

func TestDecide(t *testing.T) {
	const sigterm, sigkill = 15, 9
	tests := []struct {
		name    string
		r       Request
		allow   bool
		errno   syscall.Errno
		rule    audit.Rule
		target  int
		pin     int
		message []string // substrings the refusal message must hold
		resize  bool     // Decision.Resize
	}{
		{name: "kill owned child", r: req(100, filter.Kill, 102, sigterm), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "kill foreign", r: req(101, filter.Kill, 200, sigterm), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200,
			message: []string{"kill(SIGTERM)", "pid 200 (code)", "not owned by this session", "paddock adopt 200 --reason", "Active owned PIDs: 100 (agent), 101 (worker)", "by their PID"}},
		{name: "kill foreign signal 0 probe", r: req(101, filter.Kill, 200, 0), allow: true, rule: audit.RuleSignalZero},
		// The processes between the agent root and the caller are the agent
		// too (a harness behind its launcher): decideAncestor.
		{name: "kill its parent, an owned ancestor", r: req(102, filter.Kill, 101, sigterm), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101,
			message: []string{"pid 101 is the agent itself", "whether it catches it or not", "pgrep -a PATTERN"}},
		{name: "SIGKILL to an ancestor", r: req(102, filter.Kill, 101, 9), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101},
		{name: "SIGUSR1 to an ancestor that catches it", r: req(102, filter.Kill, 101, 10), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "SIGUSR2 to an ancestor that does not catch it", r: req(102, filter.Kill, 101, 12), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101,
			message: []string{"its default action for it would end or stop it"}},
		{name: "SIGCHLD to an ancestor", r: req(102, filter.Kill, 101, 17), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "SIGHUP to an ancestor that catches it (reload)", r: req(102, filter.Kill, 101, 1), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "SIGINT to an ancestor that catches it", r: req(102, filter.Kill, 101, 2), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101},
		{name: "an invalid signal to an ancestor: the kernel's EINVAL", r: req(102, filter.Kill, 101, uint64(0xfffffffb)), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "signal 65 to an ancestor: the kernel's EINVAL", r: req(102, filter.Kill, 101, 65), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "SIGTERM to a sibling", r: req(102, filter.Kill, 103, sigterm), allow: true, rule: audit.RuleOwned, target: 103, pin: 103},
		{name: "SIGTERM to its child", r: req(101, filter.Kill, 102, sigterm), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "tgkill of an ancestor's thread", r: req(102, filter.Tgkill, 101, 111, sigterm), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101},
		{name: "pidfd_send_signal to an ancestor", r: req(102, filter.PidfdSendSignal, 10, sigterm), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 101},
		// Harm without a signal (filter.Affecting), decided like kill(2).
		{name: "prlimit64 foreign", r: req(101, filter.Prlimit64, 200, 0, 0x7000, 0), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200,
			message: []string{"prlimit64 of pid 200 (code)", "paddock adopt 200", "Way out: aim prlimit64 at the processes the agent started by their PID"}},
		{name: "prlimit64 owned", r: req(100, filter.Prlimit64, 102, 0, 0x7000, 0), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "prlimit64 read of foreign", r: req(101, filter.Prlimit64, 200, 0, 0, 0x7000), allow: true, rule: audit.RuleSelf, target: 200},
		{name: "prlimit64 lifeline supervisor", r: req(101, filter.Prlimit64, 60, 7, 0x7000, 0), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 60},
		{name: "prlimit64 own thread", r: req(101, filter.Prlimit64, 111, 7, 0x7000, 0), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "perf_event_open foreign", r: req(101, filter.PerfEventOpen, 0x7000, 200, neg(1), neg(1), 0), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "perf_event_open owned", r: req(101, filter.PerfEventOpen, 0x7000, 102, neg(1), neg(1), 0), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "perf_event_open every process", r: req(101, filter.PerfEventOpen, 0x7000, neg(1), 0, neg(1), 0), errno: syscall.EPERM, rule: audit.RuleBroadcast,
			message: []string{"every process on a CPU"}},
		{name: "perf_event_open cgroup", r: req(101, filter.PerfEventOpen, 0x7000, 5, 0, neg(1), 1<<2), errno: syscall.EPERM, rule: audit.RuleBroadcast},
		{name: "setpriority foreign", r: req(101, filter.Setpriority, filter.PrioProcess, 200, 19), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "setpriority owned", r: req(100, filter.Setpriority, filter.PrioProcess, 101, 19), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "setpriority self", r: req(101, filter.Setpriority, filter.PrioProcess, 0, 19), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "setpriority mixed group", r: req(103, filter.Setpriority, filter.PrioPgrp, 300, 19), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300,
			message: []string{"process group 300", "301 (editor)"}},
		{name: "setpriority own group", r: req(102, filter.Setpriority, filter.PrioPgrp, 0, 19), allow: true, rule: audit.RuleOwned, target: -102},
		{name: "setpriority user", r: req(101, filter.Setpriority, filter.PrioUser, 1000, 19), errno: syscall.EPERM, rule: audit.RuleBroadcast,
			message: []string{"every process of user 1000"}},
		{name: "setpriority bad which", r: req(101, filter.Setpriority, 7, 200, 19), errno: syscall.EINVAL, rule: audit.RuleNoSuchTarget},
		{name: "ioprio_set foreign", r: req(101, filter.IoprioSet, filter.IoprioWhoProcess, 200, 0x6000), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "ioprio_set self", r: req(101, filter.IoprioSet, filter.IoprioWhoProcess, 0, 0x6000), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "ioprio_set user", r: req(101, filter.IoprioSet, filter.IoprioWhoUser, 0, 0x6000), errno: syscall.EPERM, rule: audit.RuleBroadcast},
		{name: "sched_setaffinity foreign", r: req(101, filter.SchedSetaffinity, 200, 8, 0x7000), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "sched_setaffinity own thread", r: req(101, filter.SchedSetaffinity, 111, 8, 0x7000), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "sched_setscheduler init", r: req(101, filter.SchedSetscheduler, 1, 5, 0x7000), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 1},
		{name: "sched_setparam foreign", r: req(101, filter.SchedSetparam, 200, 0x7000), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "sched_setattr gone", r: req(101, filter.SchedSetattr, 4242, 0x7000, 0), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 4242},
		{name: "migrate_pages foreign", r: req(101, filter.MigratePages, 200, 64, 0x7000, 0x7100), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "move_pages owned", r: req(101, filter.MovePages, 102, 1, 0x7000, 0, 0x7100, 0), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "process_madvise foreign pidfd", r: req(101, filter.ProcessMadvise, 6, 0x7000, 1, 21, 0), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "process_madvise owned pidfd", r: req(101, filter.ProcessMadvise, 5, 0x7000, 1, 21, 0), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "process_madvise not a pidfd", r: req(101, filter.ProcessMadvise, 9, 0x7000, 1, 21, 0), errno: syscall.EBADF, rule: audit.RuleNoSuchTarget},
		{name: "vhangup in the agent root's session", r: req(101, filter.Vhangup), errno: syscall.EPERM, rule: audit.RuleLifeline, target: -100,
			message: []string{"vhangup", "SIGHUP would reach the agent itself (pid 100", "setsid"}},
		{name: "vhangup in a session not the agent's", r: req(103, filter.Vhangup), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300,
			message: []string{"vhangup", "session 300", "without --no-pty"}},
		{name: "kill nonexistent", r: req(101, filter.Kill, 999, sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 999},
		{name: "kill pid 1", r: req(101, filter.Kill, 1, sigkill), errno: syscall.EPERM, rule: audit.RuleLifeline, message: []string{"critical session lifeline", "PID 1"}, target: 1},
		{name: "kill supervisor", r: req(101, filter.Kill, 60, sigkill), errno: syscall.EPERM, rule: audit.RuleLifeline, message: []string{"paddock supervisor"}, target: 60},
		{name: "kill supervisor ancestor", r: req(100, filter.Kill, 50, sigkill), errno: syscall.EPERM, rule: audit.RuleLifeline, message: []string{"ancestor of the paddock supervisor"}, target: 50},
		{name: "descendant kills agent root", r: req(101, filter.Kill, 100, sigterm), errno: syscall.EPERM, rule: audit.RuleLifeline,
			message: []string{"critical session lifeline", "the agent itself", "pkill -f"}, target: 100},
		{name: "supervisor side (paddock kill from outside) stops the agent", r: req(60, filter.Kill, 100, sigterm), allow: true, rule: audit.RuleOwned, target: 100, pin: 100},
		{name: "foreign caller (user's paddock kill) stops the agent", r: req(200, filter.Kill, 100, sigterm), allow: true, rule: audit.RuleOwned, target: 100, pin: 100},
		{name: "agent root kills itself", r: req(100, filter.Kill, 100, sigterm), allow: true, rule: audit.RuleSelf, target: 100, pin: 100},
		{name: "thread signals own process", r: req(111, filter.Kill, 101, sigterm), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "self allowed even when lookup fails", r: req(666, filter.Kill, 666, sigterm), allow: true, rule: audit.RuleSelf, target: 666},
		{name: "lookup failure fails closed", r: req(101, filter.Kill, 666, sigterm), errno: syscall.EPERM, rule: audit.RuleUndecidable, message: []string{"could not establish", "input/output error"}, target: 666},
		{name: "kill -1", r: req(101, filter.Kill, neg(1), sigkill), errno: syscall.EPERM, rule: audit.RuleBroadcast, target: -1, message: []string{"every process", "kill -- -PGID"}},
		{name: "kill -1 sig 0 is a probe", r: req(101, filter.Kill, neg(1), 0), allow: true, rule: audit.RuleSignalZero},
		{name: "i386 kill -1 (32-bit register)", r: req(101, filter.Kill, 0xffffffff, sigkill), errno: syscall.EPERM, rule: audit.RuleBroadcast, target: -1},
		{name: "kill own-group 0 from root", r: req(100, filter.Kill, 0, sigterm), allow: true, rule: audit.RuleOwned, target: -100},
		{name: "kill 0 from child hits agent root", r: req(101, filter.Kill, 0, sigterm), errno: syscall.EPERM, rule: audit.RuleGroup, target: -100, message: []string{"100 (agent)"}},
		{name: "kill -pgid all owned", r: req(101, filter.Kill, neg(102), sigterm), allow: true, rule: audit.RuleOwned, target: -102},
		{name: "kill -pgid with foreign member", r: req(101, filter.Kill, neg(300), sigterm), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300,
			message: []string{"process group 300", "301 (editor)", "owned members by PID"}},
		{name: "kill -pgid empty", r: req(101, filter.Kill, neg(400), sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: -400},
		{name: "tkill thread of owned", r: req(100, filter.Tkill, 111, sigterm), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "tkill foreign", r: req(100, filter.Tkill, 200, sigterm), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "tkill gone", r: req(100, filter.Tkill, 999, sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: 999},
		{name: "tgkill owned", r: req(100, filter.Tgkill, 101, 111, sigterm), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "tgkill foreign", r: req(100, filter.Tgkill, 200, 200, sigterm), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200, message: []string{"tgkill(SIGTERM)"}},
		{name: "tgkill sig 0", r: req(100, filter.Tgkill, 200, 200, 0), allow: true, rule: audit.RuleSignalZero},
		{name: "rt_sigqueueinfo foreign", r: req(100, filter.RtSigqueueinfo, 200, 10), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200, message: []string{"rt_sigqueueinfo(SIGUSR1)"}},
		{name: "rt_sigqueueinfo negative", r: req(100, filter.RtSigqueueinfo, neg(200), 10), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: -200},
		{name: "rt_tgsigqueueinfo owned", r: req(100, filter.RtTgsigqueueinfo, 102, 102, 10), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "pidfd_send_signal owned", r: req(101, filter.PidfdSendSignal, 5, sigterm), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "pidfd_send_signal foreign", r: req(101, filter.PidfdSendSignal, 6, sigterm), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200, message: []string{"pidfd_send_signal(SIGTERM)"}},
		{name: "pidfd_send_signal reaped", r: req(101, filter.PidfdSendSignal, 7, sigterm), errno: syscall.ESRCH, rule: audit.RuleNoSuchTarget, target: -1},
		{name: "pidfd_send_signal not a pidfd: the kernel's EBADF", r: req(101, filter.PidfdSendSignal, 9, sigterm), errno: syscall.EBADF, rule: audit.RuleNoSuchTarget},
		{name: "pidfd_send_signal process group with foreign", r: req(101, filter.PidfdSendSignal, 8, sigterm, 0, pidfdSignalProcessGroup), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300},
		{name: "ptrace attach owned", r: req(100, filter.Ptrace, 16, 102), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "ptrace attach supervisor", r: req(100, filter.Ptrace, 16, 60), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 60, message: []string{"ptrace of pid 60"}},
		{name: "ptrace seize foreign", r: req(100, filter.Ptrace, 0x4206, 200), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "ptrace traceme affects only the caller", r: req(101, filter.Ptrace, 0), allow: true, rule: audit.RuleSelf},
		{name: "ptrace traceme from root hangs it: refused", r: req(100, filter.Ptrace, 0), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 100,
			message: []string{"PTRACE_TRACEME", "the agent itself", "never traces it", "strace -f CMD"}},
		{name: "process_vm_writev foreign", r: req(100, filter.ProcessVMWritev, 200), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "process_vm_writev owned thread", r: req(100, filter.ProcessVMWritev, 111), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "pidfd_getfd foreign", r: req(101, filter.PidfdGetfd, 6, 3), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "pidfd_getfd owned", r: req(101, filter.PidfdGetfd, 5, 3), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "F_SETOWN own process", r: req(101, filter.Fcntl, 3, filter.FSetown, 101), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "F_SETOWN owned child", r: req(101, filter.Fcntl, 3, filter.FSetown, 102), allow: true, rule: audit.RuleOwned, target: 102, pin: 102},
		{name: "F_SETOWN foreign", r: req(101, filter.Fcntl, 3, filter.FSetown, 200), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200,
			message: []string{"fcntl(F_SETOWN) of pid 200 (code)", "not owned"}},
		{name: "F_SETOWN foreign via fcntl64", r: req(101, filter.Fcntl64, 3, filter.FSetown, 200), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200},
		{name: "F_SETOWN clears", r: req(101, filter.Fcntl, 3, filter.FSetown, 0), allow: true, rule: audit.RuleSelf},
		{name: "F_SETOWN own group", r: req(101, filter.Fcntl, 3, filter.FSetown, neg(102)), allow: true, rule: audit.RuleOwned, target: -102},
		{name: "F_SETOWN mixed group", r: req(101, filter.Fcntl, 3, filter.FSetown, neg(300)), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300},
		{name: "F_SETOWN lifeline", r: req(101, filter.Fcntl, 3, filter.FSetown, 1), errno: syscall.EPERM, rule: audit.RuleLifeline, target: 1},
		{name: "F_SETOWN_EX pid foreign", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 1, 0, 0, 0, 200, 0, 0, 0), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200,
			message: []string{"fcntl(F_SETOWN_EX)"}},
		{name: "F_SETOWN_EX tid owned", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 0, 0, 0, 0, 111, 0, 0, 0), allow: true, rule: audit.RuleOwned, target: 101, pin: 101},
		{name: "F_SETOWN_EX pgrp foreign", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 2, 0, 0, 0, 200, 0, 0, 0), errno: syscall.EPERM, rule: audit.RuleGroup, target: -200},
		{name: "F_SETOWN_EX bad type", r: mem(req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), 7, 0, 0, 0, 200, 0, 0, 0), errno: syscall.EINVAL, rule: audit.RuleNoSuchTarget},
		{name: "F_SETOWN_EX unreadable fails closed", r: req(101, filter.Fcntl, 3, filter.FSetownEx, 0x1000), errno: syscall.EPERM, rule: audit.RuleUndecidable, message: []string{"was not read"}},
		{name: "FIOSETOWN foreign", r: mem(req(101, filter.Ioctl, 3, filter.FIOSETOWN, 0x1000), 200, 0, 0, 0), errno: syscall.EPERM, rule: audit.RuleNotOwned, target: 200, message: []string{"ioctl(FIOSETOWN)"}},
		{name: "SIOCSPGRP negative is a group", r: mem(req(101, filter.Ioctl, 3, filter.SIOCSPGRP, 0x1000), 0x38, 0xff, 0xff, 0xff), errno: syscall.EPERM, rule: audit.RuleGroup, target: -200},
		{name: "TIOCSTI refused", r: req(101, filter.Ioctl, 0, filter.TIOCSTI, 0x1000), errno: syscall.EPERM, rule: audit.RuleTerminalInput, message: []string{"ioctl(TIOCSTI)", "dev.tty.legacy_tiocsti"}},
		{name: "TIOCSIG owned pty", r: req(101, filter.Ioctl, 20, filter.TIOCSIG, 2), allow: true, rule: audit.RuleOwned, target: -102},
		{name: "TIOCSIG pty of a mixed group", r: req(101, filter.Ioctl, 21, filter.TIOCSIG, 2), errno: syscall.EPERM, rule: audit.RuleGroup, target: -300, message: []string{"ioctl(TIOCSIG, SIGINT)"}},
		{name: "TIOCSIG not a pty fails closed", r: req(101, filter.Ioctl, 9, filter.TIOCSIG, 2), errno: syscall.EPERM, rule: audit.RuleUndecidable},
		{name: "TCSETS on the session's pty", r: req(101, filter.Ioctl, 0, filter.TCSETS, 0x1000), allow: true, rule: audit.RuleOwned},
		{name: "TIOCSETD on paddock's terminal", r: req(101, filter.Ioctl, 30, filter.TIOCSETD, 0x1000), errno: syscall.EPERM, rule: audit.RuleTerminalControl,
			message: []string{"ioctl(TIOCSETD) on /dev/pts/1 from pid 101 (worker)", "a terminal paddock runs on", "Way out:"}},
		{name: "TIOCEXCL on another window's terminal", r: req(101, filter.Ioctl, 31, filter.TIOCEXCL), errno: syscall.EPERM, rule: audit.RuleTerminalControl,
			message: []string{"ioctl(TIOCEXCL) on /dev/pts/7", "controlling terminal of pid 50 (bash)"}},
		{name: "TCXONC on a terminal named by its number", r: req(101, filter.Ioctl, 35, filter.TCXONC, 0), errno: syscall.EPERM, rule: audit.RuleTerminalControl,
			message: []string{"ioctl(TCXONC) on terminal 136:1"}},
		{name: "TIOCSWINSZ on a pty the agent opened", r: mem(req(101, filter.Ioctl, 32, filter.TIOCSWINSZ, 0x1000), 40, 0, 100, 0, 0, 0, 0, 0), allow: true, rule: audit.RuleOwned},
		{name: "TIOCSWINSZ on the session's pty: the relay carries it out", r: mem(req(101, filter.Ioctl, 0, filter.TIOCSWINSZ, 0x1000), 40, 0, 100, 0, 0, 0, 0, 0), allow: true, rule: audit.RuleOwned, resize: true},
		{name: "TIOCSWINSZ on the session's pty, unread: the kernel's", r: req(101, filter.Ioctl, 0, filter.TIOCSWINSZ, 0x1000), allow: true, rule: audit.RuleOwned},
		{name: "TIOCSWINSZ through a pty's master: not the session's", r: mem(req(101, filter.Ioctl, 33, filter.TIOCSWINSZ, 0x1000), 40, 0, 100, 0, 0, 0, 0, 0), allow: true, rule: audit.RuleOwned},
		{name: "TCSETS2 through a pty's master", r: req(101, filter.Ioctl, 33, filter.TCSETS2, 0x1000), allow: true, rule: audit.RuleOwned},
		{name: "TCSETS on a file", r: req(101, filter.Ioctl, 34, filter.TCSETS, 0x1000), allow: true, rule: audit.RuleSelf},
		{name: "TIOCSCTTY without stealing, unread", r: req(666, filter.Ioctl, 30, filter.TIOCSCTTY, 0), allow: true, rule: audit.RuleSelf},
		{name: "TIOCSCTTY stealing without CAP_SYS_ADMIN, unread", r: req(101, filter.Ioctl, 99, filter.TIOCSCTTY, 1<<32|1), allow: true, rule: audit.RuleSelf},
		{name: "TIOCSCTTY stealing paddock's terminal", r: req(102, filter.Ioctl, 30, filter.TIOCSCTTY, 1), errno: syscall.EPERM, rule: audit.RuleTerminalControl,
			message: []string{"ioctl(TIOCSCTTY) on /dev/pts/1"}},
		{name: "TIOCSCTTY stealing its own pty", r: req(102, filter.Ioctl, 0, filter.TIOCSCTTY, 1), allow: true, rule: audit.RuleOwned},
		{name: "TCSETSW with --no-pty: the user's terminal is the session's", r: req(101, filter.Ioctl, 36, filter.TCSETSW, 0x1000), allow: true, rule: audit.RuleOwned},
		{name: "TIOCSETD on a closed descriptor", r: req(101, filter.Ioctl, 99, filter.TIOCSETD, 0x1000), errno: syscall.EBADF, rule: audit.RuleNoSuchTarget},
		{name: "TIOCSETD unreadable fails closed", r: req(666, filter.Ioctl, 0, filter.TIOCSETD, 0x1000), errno: syscall.EPERM, rule: audit.RuleUndecidable,
			message: []string{"could not tell which terminal"}},
		{name: "an ioctl command no rule knows fails closed", r: req(101, filter.Ioctl, 0, 0x5401, 0x1000), errno: syscall.EPERM, rule: audit.RuleNotTrapped},
		{name: "seccomp filter with a listener", r: req(101, filter.Seccomp, 1, 1<<3|1<<5, 0x7ffc1000), errno: syscall.EBUSY, rule: audit.RuleShadowListener,
			message: []string{"SECCOMP_FILTER_FLAG_NEW_LISTENER", "pid 101 (worker)", "answer", "Way out:"}},
		{name: "seccomp filter without a listener", r: req(101, filter.Seccomp, 1, 0, 0x7ffc1000), allow: true, rule: audit.RuleSelf},
		{name: "seccomp listener flag probe with no program (libseccomp)", r: req(101, filter.Seccomp, 1, 1<<3), allow: true, rule: audit.RuleSelf},
		{name: "seccomp listener with a program in the upper half", r: req(101, filter.Seccomp, 1, 1<<3, 1<<32), errno: syscall.EBUSY, rule: audit.RuleShadowListener},
		{name: "seccomp get action avail", r: req(101, filter.Seccomp, 2, 1<<3), allow: true, rule: audit.RuleSelf},
		{name: "seccomp strict mode", r: req(101, filter.Seccomp, 0, 0), allow: true, rule: audit.RuleSelf},
		{name: "unknown syscall fails closed", r: req(101, filter.Unknown), errno: syscall.EPERM, rule: audit.RuleNotTrapped, message: []string{"fails closed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.r, world().Full())
			if d.Allow != tc.allow || d.Rule != tc.rule {
				t.Fatalf("Decide = allow %v rule %q (%s); want allow %v rule %q", d.Allow, d.Rule, d.Message, tc.allow, tc.rule)
			}
			if !d.Allow && d.Errno != tc.errno {
				t.Errorf("errno = %v, want %v", d.Errno, tc.errno)
			}
			if tc.target != 0 && d.Target != tc.target {
				t.Errorf("target = %d, want %d", d.Target, tc.target)
			}
			if d.Pin != tc.pin {
				t.Errorf("pin = %d, want %d", d.Pin, tc.pin)
			}
			if d.Resize != tc.resize {
				t.Errorf("Resize = %v, want %v", d.Resize, tc.resize)
			}
			// A vanished target (ESRCH), a malformed call (EINVAL) or a
			// descriptor that is no pidfd (EBADF) is not a refusal.
			wantRefusal := !d.Allow && d.Errno != syscall.ESRCH && d.Errno != syscall.EINVAL && d.Errno != syscall.EBADF
			if d.Refusal != wantRefusal {
				t.Errorf("Refusal = %v, want %v", d.Refusal, wantRefusal)
			}
			if d.Refusal && !strings.Contains(d.Message, "Way out:") {
				t.Errorf("refusal message lacks the way out: %s", d.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message lacks %q:\n%s", m, d.Message)
				}
			}
		})
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[int]string{9: "SIGKILL", 15: "SIGTERM", 18: "SIGCONT", 34: "SIGRTMIN+0", 40: "SIGRTMIN+6", 0: "signal 0", 99: "signal 99"} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}

func TestDecideExec(t *testing.T) {
	total, headroom := 24.0, 4.0
	b := vram.NewBudget(vram.Host{Headless: true}, vram.Settings{TotalGB: &total, HeadroomGB: &headroom, AllowOptIn: true})
	w := world()
	w.Budget = &b
	w.Absent = map[string]bool{"/usr/bin/nonexistent-reboot": true}
	exec := func(env []string, argv ...string) Request {
		r := req(101, filter.Execve)
		r.Exec = &Exec{Path: "/usr/bin/" + argv[0], Argv: argv, Env: env}
		return r
	}
	tests := []struct {
		name  string
		r     Request
		allow bool
		errno syscall.Errno
		rule  audit.Rule
		optIn string
	}{
		{"ordinary command", exec(nil, "ls", "-l"), true, 0, audit.RuleAllowedExec, ""},
		{"reboot refused", exec(nil, "reboot"), false, syscall.EPERM, "power_control", ""},
		{"reboot with opt-in", exec([]string{"PADDOCK_ALLOW_POWER_CONTROL=1"}, "reboot"), true, 0, "power_control", "PADDOCK_ALLOW_POWER_CONTROL"},
		{"guard allows, VRAM refuses", exec(nil, "vllm", "serve", "meta-llama/Llama-3-70B"), false, syscall.EPERM, "vram_over_budget", ""},
		{"VRAM within budget", exec(nil, "vllm", "serve", "meta-llama/Llama-3-8B", "--gpu-memory-utilization", "0.7"), true, 0, audit.RuleAllowedExec, ""},
		{"VRAM opt-in", exec([]string{"PADDOCK_ALLOW_OVERBUDGET_VRAM=1"}, "vllm", "serve", "meta-llama/Llama-3-70B"), true, 0, "vram_opt_in", "PADDOCK_ALLOW_OVERBUDGET_VRAM"},
		{"missing path is ENOENT, not a refusal", func() Request { r := exec(nil, "reboot"); r.Exec.Path = "/usr/bin/nonexistent-reboot"; return r }(), false, syscall.ENOENT, audit.RuleNoSuchTarget, ""},
		{"unreadable exec fails closed", func() Request { r := req(101, filter.Execve); r.Exec = &Exec{Err: errors.New("EFAULT")}; return r }(), false, syscall.EPERM, audit.RuleUndecidable, ""},
		{"no exec info fails closed", req(101, filter.Execve), false, syscall.EPERM, audit.RuleUndecidable, ""},
		{"non-dumpable caller's exec, allowed unread", unread(true), true, 0, audit.RuleExecUnread, ""},
		{"non-dumpable caller's exec, strict", unread(false), false, syscall.EPERM, audit.RuleUndecidable, ""},
		{"unreadable for another reason is refused even when unread execs are allowed", func() Request {
			r := unread(true)
			r.Exec.Err = errors.New("EFAULT")
			return r
		}(), false, syscall.EPERM, audit.RuleUndecidable, ""},
		{"reboot syscall refused", req(101, filter.Reboot), false, syscall.EPERM, "power_control", ""},
		{"reboot syscall with opt-in in the caller's environment", func() Request {
			r := req(101, filter.Reboot)
			r.Exec = &Exec{Env: []string{"PADDOCK_ALLOW_POWER_CONTROL=1"}}
			return r
		}(), true, 0, "power_control", "PADDOCK_ALLOW_POWER_CONTROL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.r, w.Full())
			if d.Allow != tc.allow || d.Rule != tc.rule || d.OptIn != tc.optIn {
				t.Fatalf("Decide = allow %v rule %q opt-in %q (%s); want allow %v rule %q opt-in %q", d.Allow, d.Rule, d.OptIn, d.Message, tc.allow, tc.rule, tc.optIn)
			}
			if !d.Allow && d.Errno != tc.errno {
				t.Errorf("errno = %v, want %v", d.Errno, tc.errno)
			}
			if d.Refusal != (!d.Allow && d.Errno == syscall.EPERM) {
				t.Errorf("Refusal = %v for allow %v errno %v", d.Refusal, d.Allow, d.Errno)
			}
			if d.Refusal && !strings.Contains(d.Message, "Way out") && !strings.Contains(d.Message, "way out") {
				t.Errorf("refusal without a way out: %s", d.Message)
			}
			if wantUnread := d.Rule == audit.RuleExecUnread; d.Unread != wantUnread || (d.Unread && d.Action != audit.ExecUnread) {
				t.Errorf("Unread = %v, action %q; want unread %v, journaled as exec_unread", d.Unread, d.Action, wantUnread)
			}
		})
	}
}

// unread is an execve whose strings the kernel would not let paddock read,
// with the unread-exec setting allow.
func unread(allow bool) Request {
	r := req(101, filter.Execve)
	r.Exec = &Exec{Err: fmt.Errorf("pid 101: read exec path: %w", ErrUnreadable)}
	r.AllowUnread = allow
	return r
}

// TestExecNeedsEnv: a backend may skip reading an exec's environment when
// ExecNeedsEnv says no, so the decision must then be the same with every
// opt-in variable set as with none; and the commands whose decision does
// read the environment must say yes.
func TestExecNeedsEnv(t *testing.T) {
	total, headroom := 24.0, 4.0
	b := vram.NewBudget(vram.Host{Headless: true}, vram.Settings{TotalGB: &total, HeadroomGB: &headroom, AllowOptIn: true})
	w := world()
	w.Budget = &b
	optIns := []string{"PADDOCK_ALLOW_POWER_CONTROL=1", "PADDOCK_ALLOW_OVERBUDGET_VRAM=1", "PADDOCK_INTENT=reboot", "VLLM_GPU_MEMORY_UTILIZATION=0.1"}
	for _, tc := range []struct {
		path string
		argv []string
		need bool
	}{
		{"/bin/true", []string{"true"}, false},
		{"/usr/bin/ls", []string{"ls", "-l", "/"}, false},
		{"/usr/bin/git", []string{"git", "commit", "-m", "reboot the server"}, false},
		{"/usr/bin/make", []string{"make", "reboot"}, false},
		{"/usr/sbin/reboot", []string{"reboot"}, true},
		{"/usr/bin/systemctl", []string{"systemctl", "poweroff"}, true},
		{"/usr/bin/env", []string{"env", "reboot"}, true},
		{"/bin/sh", []string{"sh", "-c", "reboot"}, true},
		{"/usr/local/bin/power-off", []string{"reboot"}, true},
		{"/usr/bin/vllm", []string{"vllm", "serve", "meta-llama/Llama-3-70B"}, true},
		{"/usr/bin/python3", []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "meta-llama/Llama-3-70B"}, true},
	} {
		if got := ExecNeedsEnv(tc.path, tc.argv); got != tc.need {
			t.Errorf("ExecNeedsEnv(%s, %q) = %v, want %v", tc.path, tc.argv, got, tc.need)
		}
		if tc.need {
			continue
		}
		decide := func(env []string) Decision {
			r := req(101, filter.Execve)
			r.Exec = &Exec{Path: tc.path, Argv: tc.argv, Env: env}
			return Decide(r, w.Full())
		}
		without, with := decide(nil), decide(optIns)
		if without.Allow != with.Allow || without.Rule != with.Rule || without.OptIn != with.OptIn || without.Errno != with.Errno {
			t.Errorf("%q: decided %v/%s without an environment, %v/%s with opt-ins, though ExecNeedsEnv says it is not read", tc.argv, without.Allow, without.Rule, with.Allow, with.Rule)
		}
	}
}

// listingCounter is a world that counts group listings.
type listingCounter struct {
	policytest.World
	listings *int
}

func (w listingCounter) Group(pgid int) ([]Target, error) {
	*w.listings++
	return w.World.Group(pgid)
}

// TestDecideGroupKnownOwned: a group the world knows to be all-owned (it
// lies in the agent's own session) is allowed without listing its
// members; any other group is listed, and a refusal names the group's
// owned members from that one listing.
func TestDecideGroupKnownOwned(t *testing.T) {
	const sigterm = 15
	tests := []struct {
		name     string
		own      map[int]bool
		r        Request
		allow    bool
		listings int
		message  []string
	}{
		{name: "kill 0 in a known group", own: map[int]bool{100: true}, r: req(101, filter.Kill, 0, sigterm), allow: true},
		{name: "kill -pgid of a known group", own: map[int]bool{102: true}, r: req(101, filter.Kill, neg(102), sigterm), allow: true},
		{name: "pidfd group signal of a known group", own: map[int]bool{300: true}, r: req(101, filter.PidfdSendSignal, 8, sigterm, 0, pidfdSignalProcessGroup), allow: true},
		{name: "TIOCSIG to a known group", own: map[int]bool{300: true}, r: req(101, filter.Ioctl, 21, filter.TIOCSIG, sigterm), allow: true},
		{name: "vhangup in the agent's session", own: map[int]bool{100: true}, r: req(101, filter.Vhangup), allow: true},
		{name: "vhangup elsewhere is refused without listing", r: req(103, filter.Vhangup), message: []string{"vhangup", "not this session's own"}},
		{name: "setpriority of a known group", own: map[int]bool{300: true}, r: req(101, filter.Setpriority, filter.PrioPgrp, 300, 19), allow: true},
		{name: "unknown group is listed and allowed", r: req(101, filter.Kill, neg(102), sigterm), allow: true, listings: 1},
		{name: "unknown group is listed and refused", own: map[int]bool{102: true}, r: req(101, filter.Kill, neg(300), sigterm), listings: 1,
			message: []string{"300", "301 (editor)", "owned members: 103 (server)"}},
		{name: "no owned member says none", r: req(101, filter.Kill, neg(200), sigterm), listings: 1,
			message: []string{"200 (code)", "owned members: none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			w := world()
			w.OwnGroups = tc.own
			full := w.Full()
			full.Processes = listingCounter{World: w, listings: &n}
			d := Decide(tc.r, full)
			if d.Allow != tc.allow || n != tc.listings {
				t.Fatalf("allow=%v after %d listings, want allow=%v after %d: %+v", d.Allow, n, tc.allow, tc.listings, d)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message lacks %q: %s", m, d.Message)
				}
			}
		})
	}
}

// A request names its target through the syscall table, in one place:
// each signal call's pid and thread, and a call no table knows as unknown,
// with its number in the message.
func TestNewRequestTargets(t *testing.T) {
	arch, name := uint32(unix.AUDIT_ARCH_X86_64), "x86_64"
	if runtime.GOARCH == "arm64" {
		arch, name = unix.AUDIT_ARCH_AARCH64, "aarch64"
	} else if runtime.GOARCH != "amd64" {
		t.Skipf("needs amd64 or arm64, the architectures paddock's tables cover: %s", runtime.GOARCH)
	}
	for _, tc := range []struct {
		sc          filter.Syscall
		nr          int
		args        [6]uint64
		pid, thread int
	}{
		{filter.Kill, unix.SYS_KILL, [6]uint64{0xffffffff, 9}, -1, 0},
		{filter.Tgkill, unix.SYS_TGKILL, [6]uint64{100, 101, 15}, 100, 101},
		{filter.Ptrace, unix.SYS_PTRACE, [6]uint64{16, 4242}, 4242, 0},
		{filter.Setpriority, unix.SYS_SETPRIORITY, [6]uint64{0, 77, 5}, 77, 0},
		{filter.Execve, unix.SYS_EXECVE, [6]uint64{1, 2, 3}, 0, 0},
	} {
		r := NewRequest(1, arch, int32(tc.nr), tc.args)
		if r.Syscall != tc.sc || r.ABI.Name != name {
			t.Errorf("NewRequest(%v) = %v %v", tc.sc, r.Syscall, r.ABI)
		}
		if r.Pid() != tc.pid || r.Thread() != tc.thread {
			t.Errorf("%v%v: pid %d thread %d, want %d %d", tc.sc, tc.args, r.Pid(), r.Thread(), tc.pid, tc.thread)
		}
	}
	r := NewRequest(1, arch, 4000, [6]uint64{})
	if r.Syscall != filter.Unknown {
		t.Fatalf("syscall 4000: %v, want unknown", r.Syscall)
	}
	d := Decide(r, policytest.World{}.Full())
	if d.Allow || !strings.Contains(d.Message, "syscall 4000 ("+name+" ABI)") {
		t.Errorf("an unknown call: allow %v, %q", d.Allow, d.Message)
	}
}

// A front end that leaves a part of the world out (fleet mode: no exec,
// no terminals) gets a refusal, never an allow, for a call that needs it.
func TestDecideWithoutAPart(t *testing.T) {
	w := policytest.World{Procs: map[int]Target{100: {Pid: 100, Comm: "agent", Rel: audit.RelAgentRoot}}}
	only := World{Processes: w}
	exec := Request{Tid: 100, Syscall: filter.Execve, Exec: &Exec{Path: "/bin/true", Argv: []string{"true"}}}
	if d := Decide(exec, w.Full()); !d.Allow {
		t.Fatalf("exec with the whole world: %+v", d)
	}
	if d := Decide(exec, only); d.Allow || d.Rule != audit.RuleUndecidable {
		t.Errorf("exec without Execs: allow %v rule %q, want refused as undecidable", d.Allow, d.Rule)
	}
	tiocsig := Request{Tid: 100, Syscall: filter.Ioctl, Args: [6]uint64{3, filter.TIOCSIG, 15}}
	if d := Decide(tiocsig, only); d.Allow || d.Rule != audit.RuleUndecidable {
		t.Errorf("TIOCSIG without Terminals: allow %v rule %q, want refused as undecidable", d.Allow, d.Rule)
	}
	tcsets := Request{Tid: 100, Syscall: filter.Ioctl, Args: [6]uint64{0, filter.TCSETS, 0x1000}}
	if d := Decide(tcsets, only); d.Allow || d.Rule != audit.RuleUndecidable {
		t.Errorf("TCSETS without Terminals: allow %v rule %q, want refused as undecidable", d.Allow, d.Rule)
	}
}

// Every terminal command the filter traps is refused on paddock's terminal
// and allowed on the session's, and its refusal names it.
func TestTerminalCommands(t *testing.T) {
	w := world().Full()
	for _, cmd := range filter.TerminalCommands() {
		// From 102, which holds CAP_SYS_ADMIN, with argument 1: TIOCSCTTY
		// then steals.
		d := Decide(req(102, filter.Ioctl, 30, uint64(cmd), 1), w)
		if d.Allow || d.Rule != audit.RuleTerminalControl || d.Action != audit.SignalDenied || strings.Contains(d.Message, "ioctl(0x") {
			t.Errorf("command %#x on paddock's terminal: allow %v rule %q action %q: %s", cmd, d.Allow, d.Rule, d.Action, d.Message)
		}
		if d := Decide(req(102, filter.Ioctl, 0, uint64(cmd), 1), w); !d.Allow {
			t.Errorf("command %#x on the session's pty refused: %s", cmd, d.Message)
		}
	}
}

// TestOwnedListInMessages: a refusal names the owned processes the agent
// first, then by pid, and says how many it left out, not "...".
func TestOwnedListInMessages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []int
		want  string
	}{
		{"all shown", nil, "Active owned PIDs: 100 (agent), 101 (worker), 102 (sleep), 103 (server). "},
		{"cut", []int{9993, 10000, 104, 105}, "Active owned PIDs: 100 (agent), 101 (worker), 102 (sleep), 103 (server), 104 (w), and 3 more. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world()
			for _, pid := range tc.extra {
				w.Procs[pid] = Target{Pid: pid, Comm: "w", Rel: audit.RelOwned}
			}
			d := Decide(req(101, filter.Kill, 200, 15), w.Full())
			if !strings.Contains(d.Message, tc.want) {
				t.Errorf("message lacks %q:\n%s", tc.want, d.Message)
			}
		})
	}
}

// TestAncestorUnreadable: when the caller's parents cannot be read, a
// signal that would end an owned process is refused as undecidable, not
// let through; without a Lineage (fleet mode) it is decided on ownership.
func TestAncestorUnreadable(t *testing.T) {
	w := world()
	w.Broken = map[int]bool{}
	w.Parents[104] = 102
	w.Procs[104] = Target{Pid: 104, Comm: "probe", Rel: audit.RelOwned}
	w.Signals[103] = [2]uint64{}
	// 102's stat fails from the walk only (Lookup of 103 and 104 works).
	lin := brokenStat{World: w, broken: 102}
	d := Decide(req(104, filter.Kill, 103, 15), World{Processes: w, Guard: w.Policy, Sessions: w, Terminals: w, Execs: w, Lineage: lin})
	if d.Allow || d.Rule != audit.RuleUndecidable {
		t.Errorf("with the caller's parent unreadable: allow %v rule %q, want refused as undecidable", d.Allow, d.Rule)
	}
	if d := Decide(req(102, filter.Kill, 101, 15), World{Processes: w, Guard: w.Policy, Sessions: w, Terminals: w, Execs: w}); !d.Allow {
		t.Errorf("without a Lineage, an owned parent's kill is refused: %s", d.Message)
	}
}

// brokenStat is a Lineage whose Stat of one pid fails.
type brokenStat struct {
	policytest.World
	broken int
}

func (b brokenStat) Stat(pid int) (int, uint64, bool, error) {
	if pid == b.broken {
		return 0, 0, false, policytest.ErrBroken
	}
	return b.World.Stat(pid)
}
