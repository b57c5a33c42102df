package filter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// wantTable is one ABI's expected numbers, written down independently of
// the package's tables (see tables_<GOARCH>_test.go).
type wantTable struct {
	name      string
	arch      uint32
	x32       bool
	compat    bool
	xsys      string // GOARCH of golang.org/x/sys/unix's zsysnum file, "" if none
	nrs       map[Syscall]uint32
	legacy    map[Syscall]uint32 // extra numbers that also mean the syscall
	untrapped map[string]uint32  // syscalls the program must allow
}

// nativeTable is the expected table of the native ABI, whose numbers
// golang.org/x/sys/unix has for every architecture paddock builds for.
func nativeTable(name string, arch uint32, xsys string) wantTable {
	return wantTable{
		name: name, arch: arch, xsys: xsys,
		nrs: map[Syscall]uint32{
			Kill: unix.SYS_KILL, Tkill: unix.SYS_TKILL, Tgkill: unix.SYS_TGKILL,
			RtSigqueueinfo: unix.SYS_RT_SIGQUEUEINFO, RtTgsigqueueinfo: unix.SYS_RT_TGSIGQUEUEINFO,
			PidfdSendSignal: unix.SYS_PIDFD_SEND_SIGNAL, Ptrace: unix.SYS_PTRACE,
			ProcessVMWritev: unix.SYS_PROCESS_VM_WRITEV, PidfdGetfd: unix.SYS_PIDFD_GETFD,
			Execve: unix.SYS_EXECVE, Execveat: unix.SYS_EXECVEAT, Reboot: unix.SYS_REBOOT,
			KexecLoad: unix.SYS_KEXEC_LOAD, KexecFileLoad: unix.SYS_KEXEC_FILE_LOAD, Seccomp: unix.SYS_SECCOMP,
			Fcntl: unix.SYS_FCNTL, Ioctl: unix.SYS_IOCTL,
			Prlimit64: unix.SYS_PRLIMIT64, PerfEventOpen: unix.SYS_PERF_EVENT_OPEN, Setpriority: unix.SYS_SETPRIORITY,
			SchedSetaffinity: unix.SYS_SCHED_SETAFFINITY, SchedSetscheduler: unix.SYS_SCHED_SETSCHEDULER,
			SchedSetparam: unix.SYS_SCHED_SETPARAM, SchedSetattr: unix.SYS_SCHED_SETATTR, IoprioSet: unix.SYS_IOPRIO_SET,
			MigratePages: unix.SYS_MIGRATE_PAGES, MovePages: unix.SYS_MOVE_PAGES, ProcessMadvise: unix.SYS_PROCESS_MADVISE,
			Vhangup: unix.SYS_VHANGUP, Connect: unix.SYS_CONNECT, Sendto: unix.SYS_SENDTO,
			Openat: unix.SYS_OPENAT, Openat2: unix.SYS_OPENAT2,
		},
		untrapped: map[string]uint32{"read": unix.SYS_READ, "write": unix.SYS_WRITE, "getpid": unix.SYS_GETPID, "futex": unix.SYS_FUTEX},
	}
}

// nr returns the seccomp_data.nr the kernel reports for number n.
func (w wantTable) nr(n uint32) int32 {
	if w.x32 {
		n |= x32Bit
	}
	return int32(n)
}

const testAction = unix.SECCOMP_RET_USER_NOTIF

var (
	optsAll  = Options{Action: testAction, Exec: true, Power: true, Terminals: true}
	optsBase = Options{Action: testAction}
	allOpts  = []Options{
		optsBase,
		{Action: testAction, Exec: true},
		{Action: testAction, Power: true},
		{Action: testAction, Terminals: true},
		optsAll,
		{Action: unix.SECCOMP_RET_TRACE | 7, Exec: true, Power: true, Terminals: true},
		{Action: unix.SECCOMP_RET_TRACE, Exec: true, Power: true},
		{Action: testAction, Exec: true, Power: true, Probes: true, Terminals: true},
		{Action: unix.SECCOMP_RET_TRACE, Probes: true},
		{Action: testAction, Wall: true},
		{Action: testAction, Exec: true, Power: true, Terminals: true, Wall: true},
	}
)

func mustBuild(t *testing.T, o Options) []unix.SockFilter {
	t.Helper()
	prog, err := Build(o)
	if err != nil {
		t.Fatalf("Build(%+v): %v", o, err)
	}
	return prog
}

func run(t *testing.T, prog []unix.SockFilter, d seccompData) result {
	t.Helper()
	r, err := interpret(prog, d, false)
	if err != nil {
		t.Fatalf("interpret(arch %#x nr %#x args %x): %v", d.Arch, uint32(d.Nr), d.Args, err)
	}
	return r
}

func verdict(ret uint32, o Options) string {
	switch ret {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case o.Action:
		return "TRAP"
	}
	return fmt.Sprintf("%#x", ret)
}

// TestProgram runs the program on synthetic seccomp_data for every (ABI,
// syscall) pair and the edge cases around them.
func TestProgram(t *testing.T) {
	type tc struct {
		name string
		d    seccompData
		want string // "ALLOW" or "TRAP"
	}
	for _, o := range allOpts {
		prog := mustBuild(t, o)
		var cases []tc
		add := func(name string, d seccompData, trap bool) {
			want := "ALLOW"
			if trap {
				want = "TRAP"
			}
			cases = append(cases, tc{name, d, want})
		}
		garbage := [6]uint64{0xdeadbeefcafef00d, 0xffffffffffffffff, 0x1234, 0xffffffff00000000, 7, 9}
		for _, w := range wantTables {
			check := func(s Syscall, n uint32, how string) {
				d := func(args [6]uint64) seccompData { return seccompData{Nr: w.nr(n), Arch: w.arch, Args: args} }
				name := fmt.Sprintf("%s/%s%s", w.name, s, how)
				if i, ok := s.SignalArg(); ok {
					for _, sig := range []uint64{0, 1 << 32, 0xffffffff00000000} {
						args := garbage
						args[i] = sig
						// Signal 0 (its low 32 bits) is a probe: allowed in
						// BPF unless Probes asks for it.
						add(fmt.Sprintf("%s/sig=%#x", name, sig), d(args), o.Probes && o.trapped(s))
					}
					for _, sig := range []uint64{9, 18, 1<<32 | 9, 0xffffffff, 1 << 31} {
						args := [6]uint64{}
						args[i] = sig
						add(fmt.Sprintf("%s/sig=%#x", name, sig), d(args), o.trapped(s))
					}
					// The other argument positions must not matter: a zero
					// pid or tid with a real signal is still trapped.
					args := garbage
					args[i] = 15
					args[3-i] = 0
					add(name+"/other-arg-zero", d(args), o.trapped(s))
					return
				}
				if i, values, ok := o.ArgFilter(s); ok {
					for _, v := range values {
						for _, hi := range []uint64{0, 0xffffffff00000000} {
							args := garbage
							args[i] = hi | uint64(v)
							add(fmt.Sprintf("%s/cmd=%#x", name, args[i]), d(args), o.trapped(s))
						}
					}
					// Every other command runs: F_GETFL, F_SETFL, TCGETS, FIONREAD,
					// the terminal getters, TCFLSH and TCSBRK, the neighbours
					// of the trapped values; and without o.Terminals the
					// terminal commands.
					others := []uint64{0, 3, 4, 7, 9, 14, 16, 0x5401, 0x5405, 0x5409, 0x540b, 0x541b, 0x5411, 0x5413, 0x5424,
						0x5425, 0x8903, 0x80045432, 0x80045440, 0x80045436, 0x40045435, 0x402c542a, 0x402c542e, 0x5458}
					if s == Ioctl && !o.Terminals {
						for _, v := range TerminalCommands() {
							others = append(others, uint64(v))
						}
					}
					for _, v := range others {
						if slices.Contains(values, uint32(v)) {
							continue
						}
						args := garbage
						args[i] = v
						add(fmt.Sprintf("%s/cmd=%#x", name, v), d(args), false)
					}
					return
				}
				if addr, length, ok := s.AddrArg(); ok {
					// An IPv4 or IPv6 address's length runs (its low 32
					// bits); so does sendto without an address; every other
					// length is trapped under o.Wall.
					for _, c := range []struct {
						addr, length uint64
						trap         bool
					}{
						{0x7ffd0000, 16, false}, {0x7ffd0000, 28, false}, {0x7ffd0000, 1<<32 | 16, false},
						{0x7ffd0000, 110, true}, {0x7ffd0000, 17, true}, {0x7ffd0000, 24, true}, {0x7ffd0000, 0, true},
						{0, 110, s == Connect}, {1 << 32, 110, true}, {0x7fff00000000, 3, true},
					} {
						args := garbage
						args[addr], args[length] = c.addr, c.length
						add(fmt.Sprintf("%s/addr=%#x,len=%#x", name, c.addr, c.length), d(args), c.trap && o.trapped(s))
					}
					return
				}
				if i, ok := s.WriteFlagsArg(); ok {
					// O_RDONLY runs, whatever the other flags and the high
					// bits; O_WRONLY and O_RDWR are trapped under o.Wall
					// unless with both O_CREAT and O_EXCL.
					for _, c := range []struct {
						flags uint64
						trap  bool
					}{
						{0, false}, {unix.O_CLOEXEC | unix.O_CREAT | unix.O_DIRECTORY | unix.O_PATH, false}, {0xffffffff00000000, false},
						{unix.O_WRONLY, true}, {unix.O_RDWR, true}, {3, true}, {unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC, true}, {1<<32 | 2, true},
						{unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL, false}, {unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC, false},
						{unix.O_WRONLY | unix.O_EXCL, true}, {unix.O_RDWR | unix.O_CREAT, true}, {1<<32 | unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL, false},
					} {
						args := garbage
						args[i] = c.flags
						add(fmt.Sprintf("%s/flags=%#x", name, c.flags), d(args), c.trap && o.trapped(s))
					}
					return
				}
				if s == Seccomp {
					// Trapped only for a filter with a listener, whatever
					// the high bits and the other flags.
					for _, c := range []struct {
						op, flags uint64
						trap      bool
					}{
						{1, 8, true}, {1, 8 | 1, true}, {0xffffffff00000001, 0xffffffff00000008, true}, {1, 0x7fffffff, true},
						{1, 0, false}, {1, 1, false}, {1, 0xfffffff7, false}, {0, 8, false}, {2, 8, false}, {3, 8, false},
					} {
						args := garbage
						args[0], args[1] = c.op, c.flags
						add(fmt.Sprintf("%s/op=%#x,flags=%#x", name, c.op, c.flags), d(args), c.trap)
					}
					return
				}
				if conds, ok := s.SelfArgs(); ok {
					// Aimed at the caller: allowed, whatever the high bits
					// and the other arguments; any condition broken: trapped.
					self := garbage
					for _, c := range conds {
						self[c.Arg] = 0xffffffff00000000 | uint64(c.Value)
					}
					add(name+"/self", d(self), false)
					for _, c := range conds {
						for _, v := range []uint32{c.Value + 1, c.Value - 1, 0xffffffff} {
							other := self
							other[c.Arg] = uint64(v)
							add(fmt.Sprintf("%s/arg%d=%#x", name, c.Arg, v), d(other), o.trapped(s))
						}
					}
					add(name+"/args=garbage", d(garbage), o.trapped(s))
					return
				}
				add(name+"/args=0", d([6]uint64{}), o.trapped(s))
				add(name+"/args=garbage", d(garbage), o.trapped(s))
			}
			for s, n := range w.nrs {
				check(s, n, "")
			}
			for s, n := range w.legacy {
				check(s, n, "(legacy)")
			}
			for name, n := range w.untrapped {
				add(w.name+"/"+name, seccompData{Nr: w.nr(n), Arch: w.arch}, false)
			}
		}
		// Every syscall of this arch's tables must be covered (i386's
		// socketcall is in no arm64 table).
		for s := Syscall(1); s < numSyscalls; s++ {
			inHost := false
			for _, tb := range append([]*table{host.native, host.x32}, host.compat...) {
				for src := tb; src != nil; src = src.legacy {
					_, ok := src.nrs[s]
					inHost = inHost || ok
				}
			}
			found := !inHost
			for _, w := range wantTables {
				_, ok := w.nrs[s]
				found = found || ok
			}
			if !found {
				t.Errorf("no expected number for %s in any ABI", s)
			}
		}
		// Unknown arches are trapped, whatever the nr and args.
		for _, arch := range foreignArches {
			for _, nr := range []int32{0, 1, 39, 62, 129, -1} {
				add(fmt.Sprintf("arch=%#x/nr=%d", arch, nr), seccompData{Nr: nr, Arch: arch}, true)
			}
		}
		// Numbers with high bits set that the kernel dispatches to nothing.
		native := wantTables[0]
		kill := native.nrs[Kill]
		for _, nr := range []uint32{0x80000000 | kill, 0x10000 | kill, 0xffffffff, 0x7fffffff, 0x80000000, 0xc0000000 | kill} {
			add(fmt.Sprintf("%s/nr=%#x", native.name, nr), seccompData{Nr: int32(nr), Arch: native.arch, Args: [6]uint64{1, 9, 9}}, false)
		}
		for _, w := range wantTables[1:] {
			if w.x32 {
				continue
			}
			add(fmt.Sprintf("%s/nr=%#x", w.name, x32Bit|w.nrs[Kill]), seccompData{Nr: int32(x32Bit | w.nrs[Kill]), Arch: w.arch, Args: [6]uint64{1, 9, 9}}, false)
		}

		name := fmt.Sprintf("action=%#x,exec=%v,power=%v,probes=%v,terminals=%v", o.Action, o.Exec, o.Power, o.Probes, o.Terminals)
		t.Run(name, func(t *testing.T) {
			slices.SortFunc(cases, func(a, b tc) int { return strings.Compare(a.name, b.name) })
			for _, c := range cases {
				if got := verdict(run(t, prog, c.d).Ret, o); got != c.want {
					t.Errorf("%s: got %s, want %s", c.name, got, c.want)
				}
			}
		})
	}
}

// TestProgramMatchesLookup checks, for every ABI and every number in a wide
// range, that the program traps exactly what Lookup identifies as a syscall
// the options trap (signal 0 excepted, unless Probes), so the supervisor never receives a
// notification it cannot name and no named syscall slips through.
func TestProgramMatchesLookup(t *testing.T) {
	for _, o := range allOpts {
		prog := mustBuild(t, o)
		for _, w := range wantTables {
			for n := uint32(0); n < 1200; n++ {
				nr := w.nr(n)
				s, abi, ok := Lookup(w.arch, nr)
				if abi.Name != w.name {
					t.Fatalf("Lookup(%#x, %#x) ABI = %q, want %q", w.arch, nr, abi.Name, w.name)
				}
				for _, sig := range []uint64{0, 10} {
					d := seccompData{Nr: nr, Arch: w.arch, Args: [6]uint64{sig, sig, sig, sig, sig, sig}}
					want := ok && o.trapped(s)
					if _, isSig := s.SignalArg(); isSig && sig == 0 && !o.Probes {
						want = false
					}
					if _, _, isArg := s.ArgFilter(); isArg {
						want = false // commands 0 and 10 are not trapped
					}
					if s == Seccomp {
						want = false // op 0 and 10 install no listener
					}
					if _, isOpen := s.WriteFlagsArg(); isOpen && sig == 0 {
						want = false // O_RDONLY
					}
					if s == Sendto && sig == 0 {
						want = false // no address
					}
					if conds, isSelf := s.SelfArgs(); isSelf && sig == 0 {
						// All arguments 0: aimed at the caller when every
						// condition asks for 0 (not ioprio_set's who=1).
						self := true
						for _, c := range conds {
							self = self && c.Value == 0
						}
						want = ok && o.trapped(s) && !self
					}
					r := run(t, prog, d)
					if got := r.Ret == o.Action; got != want || (!got && r.Ret != unix.SECCOMP_RET_ALLOW) {
						t.Errorf("%+v: %s nr %d (%s, ok=%v) sig %d: got %s, want trap=%v", o, w.name, n, s, ok, sig, verdict(r.Ret, o), want)
					}
				}
			}
		}
	}
}

// TestProgramCacheable checks that no untrapped syscall of a cacheable ABI
// (the native and compat tables; x32 numbers are above the kernel's bitmap)
// loads anything but nr and arch on its way to ALLOW. The kernel (5.11+)
// then marks all of them "always allow" at install time and never runs the
// filter for them.
func TestProgramCacheable(t *testing.T) {
	for _, o := range []Options{optsBase, optsAll} {
		prog := mustBuild(t, o)
		for _, w := range wantTables {
			if w.x32 {
				continue
			}
			for n := uint32(0); n < 1200; n++ {
				s, _, ok := Lookup(w.arch, int32(n))
				if ok && o.trapped(s) {
					continue
				}
				r, err := interpret(prog, seccompData{Nr: int32(n), Arch: w.arch}, true)
				if err != nil || r.Ret != unix.SECCOMP_RET_ALLOW {
					t.Errorf("%s nr %d: not constant-allow: ret %#x, err %v", w.name, n, r.Ret, err)
				}
			}
		}
	}
}

// TestProgramFastPath bounds the work for an untrapped native syscall, the
// path nearly every syscall takes (when the kernel's cache does not skip
// the filter anyway), and logs the program's shape.
func TestProgramFastPath(t *testing.T) {
	const maxSteps = 12
	prog := mustBuild(t, optsAll)
	t.Logf("program: %d instructions\n%s", len(prog), disasm(prog))
	// About 60 instructions for the signal and channel syscalls, as many
	// for the others aimed by target, and their self tails; about 40 for
	// the search through ioctl's commands (Options.Terminals).
	if len(prog) > 240 {
		t.Errorf("program has %d instructions; expected a small one", len(prog))
	}
	for _, w := range wantTables {
		worst, total, count := 0, 0, 0
		for n := uint32(0); n < 500; n++ {
			if s, _, ok := Lookup(w.arch, w.nr(n)); ok && optsAll.trapped(s) {
				continue
			}
			r := run(t, prog, seccompData{Nr: w.nr(n), Arch: w.arch})
			worst = max(worst, r.Steps)
			total += r.Steps
			count++
			if r.LoadsArg {
				t.Errorf("%s nr %d: untrapped syscall loads an argument", w.name, n)
			}
		}
		t.Logf("%s: untrapped syscalls take %.1f instructions on average, %d at most", w.name, float64(total)/float64(count), worst)
		if w.name == wantTables[0].name && worst > maxSteps {
			t.Errorf("%s: untrapped syscall takes %d instructions, want at most %d", w.name, worst, maxSteps)
		}
	}
}

// TestProgramExecPower checks that Exec and Power switch exactly their
// syscalls on, in every ABI.
func TestProgramExecPower(t *testing.T) {
	groups := map[string][]Syscall{
		"exec":  {Execve, Execveat},
		"power": {Reboot, KexecLoad, KexecFileLoad},
	}
	for _, o := range allOpts {
		prog := mustBuild(t, o)
		for group, list := range groups {
			on := map[string]bool{"exec": o.Exec, "power": o.Power}[group]
			for _, s := range list {
				for _, w := range wantTables {
					n, ok := w.nrs[s]
					if !ok {
						continue
					}
					got := run(t, prog, seccompData{Nr: w.nr(n), Arch: w.arch}).Ret == o.Action
					if got != on {
						t.Errorf("%+v: %s %s trapped=%v, want %v", o, w.name, s, got, on)
					}
				}
			}
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	a := mustBuild(t, optsAll)
	for range 20 {
		if b := mustBuild(t, optsAll); !slices.Equal(a, b) {
			t.Fatal("Build returned two different programs for the same options")
		}
	}
}

func TestBuildAction(t *testing.T) {
	for _, c := range []struct {
		action uint32
		ok     bool
	}{
		{unix.SECCOMP_RET_USER_NOTIF, true},
		{unix.SECCOMP_RET_TRACE, true},
		{unix.SECCOMP_RET_TRACE | 0x1234, true},
		{unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), true},
		{unix.SECCOMP_RET_KILL_PROCESS, true},
		{0, false}, // SECCOMP_RET_KILL_THREAD: a forgotten field
		{unix.SECCOMP_RET_ALLOW, false},
		{unix.SECCOMP_RET_LOG, false},
		{unix.SECCOMP_RET_LOG | 5, false},
	} {
		prog, err := Build(Options{Action: c.action})
		if (err == nil) != c.ok {
			t.Errorf("Build(Action %#x): err = %v, want ok=%v", c.action, err, c.ok)
			continue
		}
		if err != nil {
			continue
		}
		// The action is what trapped syscalls get, verbatim.
		w := wantTables[0]
		if got := run(t, prog, seccompData{Nr: w.nr(w.nrs[Ptrace]), Arch: w.arch}).Ret; got != c.action {
			t.Errorf("Action %#x: ptrace returned %#x", c.action, got)
		}
	}
}

// withNrs is w with the numbers of more syscalls (those one native ABI has
// and another lacks: open and creat are not on arm64).
func withNrs(w wantTable, nrs map[Syscall]uint32) wantTable {
	for s, n := range nrs {
		w.nrs[s] = n
	}
	return w
}
