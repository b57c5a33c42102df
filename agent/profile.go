package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
)

// FleetOptions are the filter options whose trapped syscalls a container's
// profile sends to the agent: the signal, ptrace-class, descriptor-owner
// and harm-without-a-signal calls, and seccomp(2) for a listener; not exec
// (fleet mode does not read the caller's memory) nor the power calls (the
// runtime's own rules refuse them).
func FleetOptions() filter.Options { return filter.Options{} }

// RuntimeDenied is what a container runtime's default profile refuses
// outright (Docker's and containerd's default, as documented: kernel
// modules, keyrings, clocks, mounts and namespaces, tracing and other
// processes' memory, NUMA policy, reboot and kexec, swap, BPF,
// userfaultfd, old compatibility calls). The generated profile keeps
// refusing them with EPERM; where one is also a syscall paddock decides
// (ptrace, process_vm_writev, perf_event_open, move_pages), the refusal
// wins: it is the stricter rule. (ptrace is stricter than the defaults
// themselves: containerd's and Docker's allow it on Linux 4.8 and later.)
// Listed as a deny list on an allowing default rather than the runtime's
// allow list, so a syscall newer than this list is allowed; the refusals
// that depend on arguments are runtimeConditional's.
func RuntimeDenied() []string {
	return []string{"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
		"finit_module", "get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp", "kexec_file_load",
		"kexec_load", "keyctl", "lookup_dcookie", "mbind", "mount", "move_pages", "name_to_handle_at", "nfsservctl",
		"open_by_handle_at", "perf_event_open", "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace",
		"query_module", "quotactl", "reboot", "request_key", "set_mempolicy", "setns", "settimeofday", "stime",
		"swapoff", "swapon", "sysfs", "_sysctl", "umount", "umount2", "unshare", "uselib", "userfaultfd", "ustat",
		"vm86", "vm86old",
		// Refused by the runtime defaults without CAP_SYS_ADMIN (or
		// CAP_SYSLOG), which a pod does not have by default: the kernel
		// log (readable by anyone where kernel.dmesg_restrict is 0),
		// fanotify, the UTS names.
		"fanotify_init", "setdomainname", "sethostname", "syslog"}
}

// runtimeConditional are the runtime defaults' refusals that depend on a
// call's arguments, as rules on an allowing default: clone with a
// namespace flag is refused with EPERM (one rule per flag, as a default
// profile allows clone only when none is set; unshare and setns are in
// RuntimeDenied), and clone3, whose flags lie in memory a filter cannot
// read, fails with ENOSYS, so that C libraries fall back to clone (what
// containerd's and Docker's defaults do). clone's flags are argument 0 on
// every architecture the profile lists (s390 would differ).
func runtimeConditional() []specs.LinuxSyscall {
	eperm, nosys := uint(unix.EPERM), uint(unix.ENOSYS)
	var out []specs.LinuxSyscall
	// Each makes a namespace, which the runtime defaults refuse without
	// CAP_SYS_ADMIN.
	for _, f := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
		out = append(out, specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: f, ValueTwo: f, Op: specs.OpMaskedEqual}}})
	}
	return append(out, specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &nosys})
}

// Profile is the seccomp section that makes a container's runtime hand its
// listener to the agent at socket: SCMP_ACT_NOTIFY on exactly the calls
// `paddock run`'s filter traps (FleetOptions, from the same tables, with
// the same argument conditions: see notifyWhen), the runtime default's
// refusals kept (RuntimeDenied), everything else allowed.
func Profile(socket, metadata string) (specs.LinuxSeccomp, error) {
	if err := checkSocket(socket); err != nil {
		return specs.LinuxSeccomp{}, err
	}
	denied := RuntimeDenied()
	p := specs.LinuxSeccomp{
		DefaultAction:    specs.ActAllow,
		Architectures:    []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		ListenerPath:     socket,
		ListenerMetadata: metadata,
		Syscalls: []specs.LinuxSyscall{{
			Names: denied, Action: specs.ActErrno, ErrnoRet: func() *uint { e := uint(unix.EPERM); return &e }(),
		}},
	}
	p.Syscalls = append(p.Syscalls, runtimeConditional()...)
	var plain []string
	for _, s := range filter.Trapped(FleetOptions()) {
		name := s.String()
		if slices.Contains(denied, name) {
			continue
		}
		conds := notifyWhen(s)
		if conds == nil {
			plain = append(plain, name)
			continue
		}
		for _, c := range conds {
			p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: []string{name}, Action: specs.ActNotify, Args: c})
		}
	}
	p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{Names: plain, Action: specs.ActNotify})
	return p, nil
}

// notifyWhen returns the argument conditions under which the program built
// from FleetOptions traps s, as OCI seccomp rules: each inner slice is one
// rule (its conditions all hold), and s is notified when any rule holds;
// nil means whatever the arguments. The filter's fast paths become
// conditions here, so the agent is asked exactly what paddock run's
// supervisor is asked, and a container's calls that paddock lets through
// keep working while the agent is down:
//
//   - a signal syscall with signal 0 (a probe) is allowed: notified when
//     the signal argument is not 0;
//   - a harm-without-a-signal call aimed at the caller itself (SelfArgs:
//     pid 0, or PRIO_PROCESS/IOPRIO_WHO_PROCESS with who 0) is allowed:
//     notified when any of those conditions fails, one rule each;
//   - fcntl and ioctl are notified for the commands in ArgFilter only,
//     one rule each, compared on the low 32 bits as the kernel reads them;
//   - seccomp(2) is notified for SECCOMP_SET_MODE_FILTER (low 32 bits)
//     with SECCOMP_FILTER_FLAG_NEW_LISTENER set.
//
// The runtimes compare an argument on all 64 bits (libseccomp), the filter
// on the low 32: a "not equal" condition also holds for a value with
// garbage in its high half, so such a call is notified where the filter
// would let it through (the agent reads the low 32 bits, as the kernel
// does). That errs towards asking, never towards letting through.
func notifyWhen(s filter.Syscall) [][]specs.LinuxSeccompArg {
	const low32 = 0xffffffff
	if s == filter.Seccomp {
		return [][]specs.LinuxSeccompArg{{
			{Index: 0, Value: low32, ValueTwo: filter.SeccompSetModeFilter, Op: specs.OpMaskedEqual},
			{Index: 1, Value: filter.SeccompFlagNewListener, ValueTwo: filter.SeccompFlagNewListener, Op: specs.OpMaskedEqual},
		}}
	}
	if arg, ok := s.SignalArg(); ok && !FleetOptions().Probes {
		return [][]specs.LinuxSeccompArg{{{Index: uint(arg), Value: 0, Op: specs.OpNotEqual}}}
	}
	if arg, values, ok := s.ArgFilter(); ok {
		var out [][]specs.LinuxSeccompArg
		for _, v := range values {
			out = append(out, []specs.LinuxSeccompArg{{Index: uint(arg), Value: low32, ValueTwo: uint64(v), Op: specs.OpMaskedEqual}})
		}
		return out
	}
	if conds, ok := s.SelfArgs(); ok {
		var out [][]specs.LinuxSeccompArg
		for _, c := range conds {
			out = append(out, []specs.LinuxSeccompArg{{Index: uint(c.Arg), Value: uint64(c.Value), Op: specs.OpNotEqual}})
		}
		return out
	}
	return nil
}

// SPOListenerDir is where the Security Profiles Operator accepts listener
// paths.
const SPOListenerDir = "/var/run/security-profiles-operator/"

// Formats are the forms `paddock agent profile` prints.
func Formats() []string { return []string{"oci", "kubernetes", "spo"} }

// RenderProfile renders p: "oci" is the linux.seccomp object of a
// config.json, "kubernetes" the file kubelet reads for a Localhost profile
// (the same JSON), "spo" a Security Profiles Operator SeccompProfile (YAML,
// whose listener path must lie under SPOListenerDir).
func RenderProfile(p specs.LinuxSeccomp, format string) ([]byte, error) {
	switch format {
	case "oci", "kubernetes":
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	case "spo":
		if !strings.HasPrefix(p.ListenerPath, SPOListenerDir) {
			return nil, fmt.Errorf("--socket %s: the Security Profiles Operator accepts listener paths under %s only", p.ListenerPath, SPOListenerDir)
		}
		return spoYAML(p), nil
	}
	return nil, fmt.Errorf("--format %q: want one of %s", format, strings.Join(Formats(), ", "))
}

// spoYAML writes p as a SeccompProfile. Every string is JSON-quoted, which
// YAML reads as the same string.
func spoYAML(p specs.LinuxSeccomp) []byte {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("apiVersion: security-profiles-operator.x-k8s.io/v1beta1\nkind: SeccompProfile\nmetadata:\n  name: paddock\nspec:\n")
	b.WriteString("  defaultAction: " + q(string(p.DefaultAction)) + "\n")
	b.WriteString("  listenerPath: " + q(p.ListenerPath) + "\n")
	if p.ListenerMetadata != "" {
		b.WriteString("  listenerMetadata: " + q(p.ListenerMetadata) + "\n")
	}
	b.WriteString("  architectures:\n")
	for _, a := range p.Architectures {
		b.WriteString("  - " + q(string(a)) + "\n")
	}
	b.WriteString("  syscalls:\n")
	for _, s := range p.Syscalls {
		b.WriteString("  - action: " + q(string(s.Action)) + "\n")
		if s.ErrnoRet != nil {
			fmt.Fprintf(&b, "    errnoRet: %d\n", *s.ErrnoRet)
		}
		b.WriteString("    names:\n")
		for _, n := range s.Names {
			b.WriteString("    - " + q(n) + "\n")
		}
		if len(s.Args) > 0 {
			b.WriteString("    args:\n")
			for _, a := range s.Args {
				fmt.Fprintf(&b, "    - index: %d\n      value: %d\n      valueTwo: %d\n      op: %s\n", a.Index, a.Value, a.ValueTwo, q(string(a.Op)))
			}
		}
	}
	return []byte(b.String())
}
