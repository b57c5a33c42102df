package filter

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Options say what the program traps and what it returns for a trapped
// syscall.
type Options struct {
	// Action is the seccomp return for trapped syscalls:
	// unix.SECCOMP_RET_USER_NOTIF for the notify supervisor, or
	// unix.SECCOMP_RET_TRACE (with data in the low 16 bits) for the ptrace
	// backend. Tests use SECCOMP_RET_ERRNO|errno, which needs no listener.
	// Build refuses 0 (SECCOMP_RET_KILL_THREAD, almost always a forgotten
	// field; use SECCOMP_RET_KILL_PROCESS to kill on purpose) and actions
	// that let the syscall run (ALLOW, LOG).
	Action uint32
	// Exec also traps execve and execveat, so the supervisor sees every
	// program the agent starts.
	Exec bool
	// Power also traps reboot, kexec_load and kexec_file_load.
	Power bool
	// Probes also traps the signal syscalls with signal 0, for an agent
	// whose Landlock domain scopes signals (LANDLOCK_SCOPE_SIGNAL): the
	// kernel would refuse its probe of a process outside the domain, so
	// the supervisor answers probes itself (existence, as the caller
	// would see it without the domain).
	Probes bool
	// Terminals also traps ioctl for TerminalCommands, the calls that
	// change a terminal for everyone on it, so that the supervisor can
	// refuse them on a terminal that is not the session's own (the
	// user's, opened by its path).
	Terminals bool
	// Wall also traps the calls of the default wall (Syscall.Walled): a
	// connect or sendto to an address of any length but an IPv4 or IPv6
	// address's (unix sockets, and the others, which the supervisor
	// carries out on the caller's behalf), and every open for writing, so
	// that the supervisor refuses deputies and writes into other
	// processes' /proc and cgroup files. The seccomp backend only: it
	// answers with a descriptor it opened (SECCOMP_IOCTL_NOTIF_ADDFD).
	Wall bool
}

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow returns the offset of the low 32 bits of args[i]. Every GOARCH
// with tables (amd64, arm64) is little-endian; a big-endian one would need
// +4 here.
func argLow(i int) uint32 { return offArgs + 8*uint32(i) }

// Labels shared by all sections of the program.
const (
	lblTrap     = "trap"
	lblAllow    = "allow"
	lblListener = "listener"
)

func sigLabel(arg int) string { return "sig" + strconv.Itoa(arg) }

// selfLabel is the tail that lets s run when aimed at the caller itself
// (SelfArgs); syscalls with the same conditions share one.
func selfLabel(conds []ArgEq) string {
	l := "self"
	for _, c := range conds {
		l += "-" + strconv.Itoa(c.Arg) + "=" + strconv.FormatUint(uint64(c.Value), 10)
	}
	return l
}

// argLabel is the tail that checks s's command argument (fcntl64 shares
// fcntl's).
func argLabel(s Syscall) string {
	if s == Fcntl64 {
		s = Fcntl
	}
	return "arg-" + s.String()
}

// addrLabel is the tail that lets s run without an address, or with one
// of an IP address's length (AddrArg).
func addrLabel(s Syscall) string { return "addr-" + s.String() }

// writeLabel is the tail that lets an open run for reading only, or
// to make a new file (WriteFlagsArg).
func writeLabel(arg int) string { return "write" + strconv.Itoa(arg) }

// Build assembles the seccomp program for the running GOARCH: the native
// ABI plus every other ABI the kernel may accept (x32 and i386 on amd64,
// AArch32 on arm64), so a process cannot step around the filter by entering
// the kernel another way. Any other seccomp_data.arch is trapped.
//
// The program, per ABI section: compare nr against the trapped numbers with
// a small binary search (jumps on nr and arch only, so the kernel's
// per-syscall allow cache covers every untrapped syscall); a signal syscall
// then loads the low 32 bits of its signal argument and is allowed when it
// is 0 (unless o.Probes); every other trapped syscall returns o.Action; the rest return
// SECCOMP_RET_ALLOW.
func Build(o Options) ([]unix.SockFilter, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if host.native == nil {
		return nil, fmt.Errorf("filter: no syscall tables for GOARCH=%s; paddock supports amd64 and arm64", runtime.GOARCH)
	}
	return host.build(o)
}

func (o Options) check() error {
	switch {
	case o.Action == unix.SECCOMP_RET_KILL_THREAD:
		return fmt.Errorf("filter: Options.Action is 0 (SECCOMP_RET_KILL_THREAD); set it to SECCOMP_RET_USER_NOTIF or SECCOMP_RET_TRACE (or SECCOMP_RET_KILL_PROCESS to kill on purpose)")
	case o.Action&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ALLOW,
		o.Action&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_LOG:
		return fmt.Errorf("filter: Options.Action %#x lets trapped syscalls run; use SECCOMP_RET_USER_NOTIF or SECCOMP_RET_TRACE", o.Action)
	}
	return nil
}

// entry is one trapped number of a section and where the program goes for it.
type entry struct {
	nr     uint32
	target string
}

func (h archSpec) build(o Options) ([]unix.SockFilter, error) {
	var a assembler
	// Label of the arch check after the native one.
	nextArch := func(i int) string {
		if i < len(h.compat) {
			return "arch" + strconv.Itoa(i)
		}
		return lblTrap
	}

	// Native ABI first: it is what nearly every syscall uses.
	native, err := entries(o, h.native)
	if err != nil {
		return nil, err
	}
	a.loadAbs(offArch)
	a.jump(unix.BPF_JEQ, h.native.abi.Arch, "", nextArch(0))
	a.loadAbs(offNr)
	if h.x32 != nil {
		a.jump(unix.BPF_JGE, x32Bit, "x32", "")
	}
	a.tree(native, lblAllow)

	if h.x32 != nil {
		// nr >= 0x40000000 on x86_64: the x32 ABI. Only the x32 bit is
		// cleared, so a nr with any other high bit set matches nothing (the
		// kernel runs no syscall for it either).
		es, err := entries(o, h.x32)
		if err != nil {
			return nil, err
		}
		a.label("x32")
		a.and(^uint32(x32Bit))
		a.tree(es, lblAllow)
	}

	for i, t := range h.compat {
		es, err := entries(o, t)
		if err != nil {
			return nil, err
		}
		a.label(nextArch(i))
		a.jump(unix.BPF_JEQ, t.abi.Arch, "", nextArch(i+1))
		a.loadAbs(offNr)
		a.tree(es, lblAllow)
	}

	// Shared tails. seccomp_data has the same layout under every ABI, so a
	// compat signal syscall takes exactly the path of the native one.
	for _, arg := range []int{1, 2} {
		if o.Probes {
			break // no signal syscall jumps here
		}
		a.label(sigLabel(arg))
		a.loadAbs(argLow(arg))
		a.jump(unix.BPF_JEQ, 0, lblAllow, lblTrap)
	}
	// fcntl and ioctl: trapped only for the commands that aim signals
	// (and, with o.Terminals, those that change a terminal), found by the
	// same binary search as the numbers.
	for _, s := range []Syscall{Fcntl, Ioctl, Socketcall} {
		if s == Socketcall && !o.Wall {
			continue
		}
		arg, values, _ := o.ArgFilter(s)
		cmds := make([]entry, 0, len(values))
		for _, v := range values {
			cmds = append(cmds, entry{nr: v, target: lblTrap})
		}
		slices.SortFunc(cmds, func(x, y entry) int { return cmp.Compare(x.nr, y.nr) })
		a.label(argLabel(s))
		a.loadAbs(argLow(arg))
		a.tree(cmds, lblAllow)
	}
	if o.Wall {
		// connect and sendto: no address (sendto on a connected socket),
		// or an IPv4 or IPv6 address's length, run without asking. A
		// pointer is 64 bits on the native ABI: both halves must be 0.
		for _, s := range []Syscall{Connect, Sendto} {
			addr, length, _ := s.AddrArg()
			a.label(addrLabel(s))
			if s == Sendto {
				byLength := a.newLabel()
				a.loadAbs(argLow(addr))
				a.jump(unix.BPF_JEQ, 0, "", byLength)
				a.loadAbs(argLow(addr) + 4)
				a.jump(unix.BPF_JEQ, 0, lblAllow, "")
				a.label(byLength)
			}
			a.loadAbs(argLow(length))
			a.jump(unix.BPF_JEQ, SockaddrInLen, lblAllow, "")
			a.jump(unix.BPF_JEQ, SockaddrIn6Len, lblAllow, lblTrap)
		}
		// open and openat: trapped when the access mode writes, unless
		// O_CREAT|O_EXCL makes the call create a new file: it fails on any
		// name that exists (a symbolic link too, a magic one included), so
		// it can open no process's /proc file, no cgroup file and no FIFO
		// (docs/deputies.md). git's objects and lock files are made so.
		for _, arg := range []int{1, 2} {
			a.label(writeLabel(arg))
			a.loadAbs(argLow(arg))
			a.jump(unix.BPF_JSET, OAccWrite, "", lblAllow)
			a.and(OCreatExcl)
			a.jump(unix.BPF_JEQ, OCreatExcl, lblAllow, lblTrap)
		}
	}
	// seccomp(2): trapped only for a filter with a listener
	// (SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_NEW_LISTENER).
	a.label(lblListener)
	a.loadAbs(argLow(0))
	a.jump(unix.BPF_JEQ, SeccompSetModeFilter, "", lblAllow)
	a.loadAbs(argLow(1))
	a.jump(unix.BPF_JSET, SeccompFlagNewListener, lblTrap, lblAllow)
	// The syscalls allowed when aimed at the caller itself: every
	// condition must hold, the first that fails traps.
	done := map[string]bool{}
	for _, sc := range Affecting() {
		conds, ok := sc.SelfArgs()
		if !ok || done[selfLabel(conds)] {
			continue
		}
		done[selfLabel(conds)] = true
		a.label(selfLabel(conds))
		for i, c := range conds {
			a.loadAbs(argLow(c.Arg))
			jt := ""
			if i == len(conds)-1 {
				jt = lblAllow
			}
			a.jump(unix.BPF_JEQ, c.Value, jt, lblTrap)
		}
	}
	a.label(lblTrap)
	a.ret(o.Action)
	a.label(lblAllow)
	a.ret(unix.SECCOMP_RET_ALLOW)
	return a.assemble()
}

// entries returns the numbers of t (and of its legacy table) that o traps,
// sorted, each with its target label.
func entries(o Options, t *table) ([]entry, error) {
	seen := make(map[uint32]Syscall)
	var es []entry
	add := func(src *table) error {
		for s, nr := range src.nrs {
			if !o.trapped(s) {
				continue
			}
			if prev, ok := seen[nr]; ok {
				if prev != s {
					return fmt.Errorf("filter: %s number %d is both %s and %s", t.abi.Name, nr, prev, s)
				}
				continue
			}
			seen[nr] = s
			target := lblTrap
			if arg, ok := s.SignalArg(); ok && !o.Probes {
				target = sigLabel(arg)
			}
			if _, _, ok := o.ArgFilter(s); ok {
				target = argLabel(s)
			}
			if conds, ok := s.SelfArgs(); ok {
				target = selfLabel(conds)
			}
			if s == Seccomp {
				target = lblListener
			}
			if _, _, ok := s.AddrArg(); ok {
				target = addrLabel(s)
			}
			if arg, ok := s.WriteFlagsArg(); ok {
				target = writeLabel(arg)
			}
			es = append(es, entry{nr: nr, target: target})
		}
		return nil
	}
	for src := t; src != nil; src = src.legacy {
		if err := add(src); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(es, func(x, y entry) int {
		switch {
		case x.nr < y.nr:
			return -1
		case x.nr > y.nr:
			return 1
		}
		return 0
	})
	return es, nil
}

// linearMax is the size at which tree stops splitting and compares one by
// one: a split costs one instruction and saves about half the compares.
const linearMax = 3

// tree emits a binary search over es (sorted by nr) on the accumulator:
// a match jumps to its target, anything else to miss. Every path ends in a
// jump, so code emitted after the tree is reached only through labels.
func (a *assembler) tree(es []entry, miss string) {
	switch {
	case len(es) == 0:
		a.goTo(miss)
	case len(es) <= linearMax:
		for i, e := range es {
			jf := ""
			if i == len(es)-1 {
				jf = miss
			}
			a.jump(unix.BPF_JEQ, e.nr, e.target, jf)
		}
	default:
		mid := len(es) / 2
		upper := a.newLabel()
		a.jump(unix.BPF_JGE, es[mid].nr, upper, "")
		a.tree(es[:mid], miss)
		a.label(upper)
		a.tree(es[mid:], miss)
	}
}
