package agent

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/filter/filtertest"
)

// An ABI of this build's filter, as the kernel presents a call made
// through it in struct seccomp_data.
type testABI struct {
	name   string
	arch   uint32 // seccomp_data.arch
	nrBit  uint32 // or'ed into nr (x32)
	narrow bool   // 32-bit registers: the kernel zero-extends every argument
}

// hostABIs are the ABIs the filter of this GOARCH handles (filter/tables_*.go).
func hostABIs() []testABI {
	switch runtime.GOARCH {
	case "amd64":
		return []testABI{
			{"x86_64", unix.AUDIT_ARCH_X86_64, 0, false},
			{"x32", unix.AUDIT_ARCH_X86_64, 0x40000000, false},
			{"i386", unix.AUDIT_ARCH_I386, 0, true},
		}
	case "arm64":
		return []testABI{
			{"aarch64", unix.AUDIT_ARCH_AARCH64, 0, false},
			{"arm", unix.AUDIT_ARCH_ARM, 0, true},
		}
	}
	return nil
}

// runBPF runs a seccomp program on one seccomp_data (nr, arch, args)
// through filtertest's interpreter and returns what it returns, failing
// the test on an instruction the interpreter does not know.
func runBPF(t *testing.T, prog []unix.SockFilter, nr, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	r, err := filtertest.Run(prog, filtertest.Data{Nr: int32(nr), Arch: arch, Args: args}, false)
	if err != nil {
		t.Fatalf("run the filter on nr %d arch %#x args %x: %v", nr, arch, args, err)
	}
	return r.Ret
}

// profileAction is what a runtime does with a call of name with args under
// p, as libseccomp builds it: the action of the rule whose conditions all
// hold (each compares the whole 64-bit argument), else the default. Two
// rules with different actions that both hold are an error here: the
// profile is meant to leave no such choice to the runtime.
func profileAction(p specs.LinuxSeccomp, name string, args [6]uint64) (specs.LinuxSeccompAction, error) {
	r, err := profileRule(p, name, args)
	return r.Action, err
}

// profileRule is profileAction's rule: the one whose conditions hold (its
// action and errno), or the default action with no errno.
func profileRule(p specs.LinuxSeccomp, name string, args [6]uint64) (specs.LinuxSyscall, error) {
	var got []specs.LinuxSeccompAction
	var rule specs.LinuxSyscall
	for _, r := range p.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		holds := true
		for _, c := range r.Args {
			a := args[c.Index]
			var ok bool
			switch c.Op {
			case specs.OpEqualTo:
				ok = a == c.Value
			case specs.OpNotEqual:
				ok = a != c.Value
			case specs.OpMaskedEqual:
				ok = a&c.Value == c.ValueTwo
			case specs.OpLessThan:
				ok = a < c.Value
			case specs.OpLessEqual:
				ok = a <= c.Value
			case specs.OpGreaterThan:
				ok = a > c.Value
			case specs.OpGreaterEqual:
				ok = a >= c.Value
			default:
				return rule, fmt.Errorf("%s: unknown op %s", name, c.Op)
			}
			holds = holds && ok
		}
		if holds && !slices.Contains(got, r.Action) {
			got = append(got, r.Action)
			rule = r
		}
	}
	switch len(got) {
	case 0:
		return specs.LinuxSyscall{Action: p.DefaultAction}, nil
	case 1:
		return rule, nil
	}
	return rule, fmt.Errorf("%s%v: rules with actions %v all hold", name, args[:3], got)
}

// argValues are the values tried in each of the first three arguments:
// the ones the filter's conditions name, their neighbours, and values
// with a high half the kernel ignores.
func argValues() []uint64 {
	vs := []uint64{0, 1, 2, 3, 9, 0xffffffff, 1 << 32, 1<<32 | 1,
		filter.SeccompSetModeFilter, filter.SeccompFlagNewListener, filter.SeccompFlagNewListener | 1,
		filter.PrioPgrp, filter.PrioUser, filter.IoprioWhoPgrp, filter.IoprioWhoUser}
	for _, s := range filter.Channels() {
		if _, values, ok := s.ArgFilter(); ok {
			for _, v := range values {
				vs = append(vs, uint64(v), uint64(v)|1<<32, uint64(v)+1)
			}
		}
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// TestProfileAgreesWithFilterProgram: for every ABI the filter of this
// build handles and every syscall it traps there, the runtime given the
// profile notifies the agent exactly when paddock run's BPF program (built
// from the same options, run here instruction by instruction) traps the
// call, argument conditions included, except that (1) what the runtime
// default refuses is refused whatever the arguments, and (2) a call with
// garbage in an argument's high half may be notified where the program,
// reading the low 32 bits as the kernel does, lets it through (libseccomp
// compares 64 bits); never the other way. The sets of notified syscalls
// per ABI are checked equal too.
func TestProfileAgreesWithFilterProgram(t *testing.T) {
	abis := hostABIs()
	if abis == nil {
		t.Skipf("no filter tables for GOARCH %s", runtime.GOARCH)
	}
	const trap = unix.SECCOMP_RET_USER_NOTIF
	o := FleetOptions()
	o.Action = trap
	prog, err := filter.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Profile("/run/paddock/agent.sock", "")
	if err != nil {
		t.Fatal(err)
	}
	denied := RuntimeDenied()
	notified := map[string]bool{}
	for _, r := range p.Syscalls {
		if r.Action == specs.ActNotify {
			for _, n := range r.Names {
				notified[n] = true
			}
		}
	}
	trapped := filter.Trapped(FleetOptions())
	values := argValues()
	for _, abi := range abis {
		// The syscalls this ABI has, found by number as the kernel hands
		// them over (the x32 range's legacy numbers included).
		has := map[filter.Syscall]uint32{}
		for nr := uint32(0); nr < 1024; nr++ {
			if s, _, ok := filter.Lookup(abi.arch, int32(nr|abi.nrBit)); ok {
				if _, seen := has[s]; !seen {
					has[s] = nr | abi.nrBit
				}
			}
		}
		var wantSet, gotSet []string
		for _, s := range trapped {
			if _, ok := has[s]; ok && !slices.Contains(denied, s.String()) {
				wantSet = append(wantSet, s.String())
			}
		}
		for n := range notified {
			if slices.ContainsFunc(trapped, func(s filter.Syscall) bool { _, ok := has[s]; return ok && s.String() == n }) {
				gotSet = append(gotSet, n)
			}
		}
		slices.Sort(wantSet)
		slices.Sort(gotSet)
		if !slices.Equal(wantSet, gotSet) {
			t.Errorf("%s: the profile notifies %v, the filter traps %v", abi.name, gotSet, wantSet)
		}
		if len(wantSet) == 0 {
			t.Errorf("%s: the filter traps nothing: the tables were not found", abi.name)
		}

		checked := 0
		for _, s := range trapped {
			nr, ok := has[s]
			if !ok {
				continue
			}
			name := s.String()
			for _, a0 := range values {
				for _, a1 := range values {
					for _, a2 := range values {
						args := [6]uint64{a0, a1, a2}
						high := a0>>32 != 0 || a1>>32 != 0 || a2>>32 != 0
						if abi.narrow && high {
							continue // the kernel zero-extends a 32-bit ABI's arguments
						}
						traps := runBPF(t, prog, nr, abi.arch, args) == trap
						act, err := profileAction(p, name, args)
						if err != nil {
							t.Fatalf("%s: %v", abi.name, err)
						}
						checked++
						var ok bool
						switch {
						case slices.Contains(denied, name):
							ok = act == specs.ActErrno
						case traps:
							ok = act == specs.ActNotify
						case high:
							ok = act == specs.ActAllow || act == specs.ActNotify
						default:
							ok = act == specs.ActAllow
						}
						if !ok {
							t.Fatalf("%s %s(%#x, %#x, %#x): the filter traps it: %v; the profile: %s",
								abi.name, name, a0, a1, a2, traps, act)
						}
					}
				}
			}
		}
		t.Logf("%s: %d syscalls notified, %d calls compared", abi.name, len(gotSet), checked)
	}
}

// TestProfileKeepsRuntimeDefault: what a runtime's default profile refuses
// stays refused under paddock's profile, with the same errno, and what it
// allows stays allowed (calls paddock does not decide).
func TestProfileKeepsRuntimeDefault(t *testing.T) {
	p, err := Profile("/run/paddock/agent.sock", "")
	if err != nil {
		t.Fatal(err)
	}
	const sigchld = 17
	cases := []struct {
		name  string
		call  string
		arg0  uint64
		errno uint // 0: allowed
	}{
		{"fork", "clone", sigchld, 0},
		{"a thread (glibc's pthread_create flags)", "clone", 0x3d0f00, 0},
		{"vfork", "clone", 0x4000 | 0x100 | sigchld, 0},
		{"a user namespace", "clone", unix.CLONE_NEWUSER | sigchld, 1},
		{"a mount namespace", "clone", unix.CLONE_NEWNS, 1},
		{"a cgroup namespace", "clone", unix.CLONE_NEWCGROUP, 1},
		{"a UTS namespace", "clone", unix.CLONE_NEWUTS, 1},
		{"an IPC namespace", "clone", unix.CLONE_NEWIPC, 1},
		{"a PID namespace", "clone", unix.CLONE_NEWPID | sigchld, 1},
		{"a network namespace", "clone", unix.CLONE_NEWNET, 1},
		{"every namespace", "clone", unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET, 1},
		{"clone3 (its flags are out of a filter's reach)", "clone3", 0, uint(unix.ENOSYS)},
		{"unshare", "unshare", unix.CLONE_NEWUSER, 1},
		{"setns", "setns", 3, 1},
		{"mount", "mount", 0, 1},
		{"the kernel log", "syslog", 3, 1},
		{"fanotify", "fanotify_init", 0, 1},
		{"the host name", "sethostname", 0, 1},
		{"a kernel module", "finit_module", 3, 1},
		{"bpf", "bpf", 0, 1},
		{"open", "openat", 0, 0},
		{"exec (not decided in fleet mode)", "execve", 0, 0},
		{"a signal probe", "kill", 0, 0},
	}
	for _, c := range cases {
		r, err := profileRule(p, c.call, [6]uint64{c.arg0})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.errno == 0 && r.Action != specs.ActAllow:
			t.Errorf("%s: %s(%#x) is %s, want allowed", c.name, c.call, c.arg0, r.Action)
		case c.errno != 0 && (r.Action != specs.ActErrno || r.ErrnoRet == nil || *r.ErrnoRet != c.errno):
			t.Errorf("%s: %s(%#x) is %s %v, want errno %d", c.name, c.call, c.arg0, r.Action, r.ErrnoRet, c.errno)
		}
	}
}
