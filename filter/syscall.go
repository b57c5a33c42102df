package filter

import (
	"slices"
	"strconv"
)

// Syscall names a trapped syscall independent of ABI, so the supervisor can
// decide on "kill" without caring whether it arrived as x86_64 nr 62, i386
// nr 37 or arm64 nr 129.
type Syscall int

// The syscalls this package knows. Unknown is the zero value and what Lookup
// returns for anything else.
const (
	Unknown Syscall = iota

	// Signal syscalls: allowed in BPF when the signal number is 0.
	Kill
	Tkill
	Tgkill
	RtSigqueueinfo
	RtTgsigqueueinfo
	PidfdSendSignal

	// Syscalls that act on another process's memory, fds or execution.
	Ptrace
	ProcessVMWritev
	PidfdGetfd

	// Program execution, trapped with Options.Exec.
	Execve
	Execveat

	// Power control, trapped with Options.Power.
	Reboot
	KexecLoad
	KexecFileLoad

	// Filter installation, trapped only for a filter with a listener
	// (SeccompSetModeFilter with SeccompFlagNewListener): under the ptrace backend a listener of the agent's
	// own would answer ahead of paddock, and under the seccomp backend a
	// leftover of the agent's would take paddock's place once paddock's
	// listener has closed (the call then fails with ENOSYS instead).
	Seccomp

	// Signal paths through file descriptors, trapped only for the commands
	// in ArgFilter: F_SETOWN and its kin make the kernel signal an owner
	// later (SIGIO, or any signal with F_SETSIG); TIOCSTI types into a
	// terminal; TIOCSIG signals a pty's foreground group.
	Fcntl
	Fcntl64 // i386 and AArch32 only
	Ioctl

	// Harm without a signal, aimed at a process by its pid (or, for
	// process_madvise, a pidfd; for vhangup, the caller's terminal):
	// allowed in BPF when aimed at the caller itself (SelfArgs).
	Prlimit64         // RLIMIT_CPU or RLIMIT_FSIZE make the kernel kill the target
	PerfEventOpen     // sigtrap=1 makes the kernel send the target SIGTRAP
	Setpriority       // nice of a process, a group, a user
	SchedSetaffinity  // pin the target to one CPU
	SchedSetscheduler // starve it (SCHED_IDLE) or let it starve others
	SchedSetparam
	SchedSetattr
	IoprioSet    // its disk I/O priority, of a process, a group, a user
	MigratePages // its memory, to another NUMA node
	MovePages
	ProcessMadvise // MADV_PAGEOUT/COLD on its memory, by pidfd
	Vhangup        // hangs up the caller's terminal: SIGHUP to its session

	// Deputies and writes into other processes' files, trapped with
	// Options.Wall: a connect or sendto with an address (but one of an
	// IPv4 or IPv6 address's length, see AddrArg), an open for writing
	// (WriteFlagsArg), and i386's socketcall for its connect and sendto.
	Connect
	Sendto
	Socketcall // i386 only
	Open       // not on arm64
	Openat
	Openat2
	Creat // not on arm64

	numSyscalls // keep last
)

var syscallNames = [numSyscalls]string{
	Unknown:          "unknown",
	Kill:             "kill",
	Tkill:            "tkill",
	Tgkill:           "tgkill",
	RtSigqueueinfo:   "rt_sigqueueinfo",
	RtTgsigqueueinfo: "rt_tgsigqueueinfo",
	PidfdSendSignal:  "pidfd_send_signal",
	Ptrace:           "ptrace",
	ProcessVMWritev:  "process_vm_writev",
	PidfdGetfd:       "pidfd_getfd",
	Execve:           "execve",
	Execveat:         "execveat",
	Reboot:           "reboot",
	KexecLoad:        "kexec_load",
	KexecFileLoad:    "kexec_file_load",
	Seccomp:          "seccomp",
	Fcntl:            "fcntl",
	Fcntl64:          "fcntl64",
	Ioctl:            "ioctl",

	Prlimit64:         "prlimit64",
	PerfEventOpen:     "perf_event_open",
	Setpriority:       "setpriority",
	SchedSetaffinity:  "sched_setaffinity",
	SchedSetscheduler: "sched_setscheduler",
	SchedSetparam:     "sched_setparam",
	SchedSetattr:      "sched_setattr",
	IoprioSet:         "ioprio_set",
	MigratePages:      "migrate_pages",
	MovePages:         "move_pages",
	ProcessMadvise:    "process_madvise",
	Vhangup:           "vhangup",
	Connect:           "connect",
	Sendto:            "sendto",
	Socketcall:        "socketcall",
	Open:              "open",
	Openat:            "openat",
	Openat2:           "openat2",
	Creat:             "creat",
}

// Commands of fcntl and ioctl that paddock decides (uapi values, the same
// on every architecture paddock supports).
const (
	FSetown   = 8          // F_SETOWN
	FSetownEx = 15         // F_SETOWN_EX
	TIOCSTI   = 0x5412     // push a character into a terminal's input
	TIOCSIG   = 0x40045436 // _IOW('T', 0x36, int): signal a pty's foreground group
	FIOSETOWN = 0x8901     // the socket owner, like F_SETOWN
	SIOCSPGRP = 0x8902     // the same, by another name
)

// ArgFilter returns the argument index and the values of it for which
// every program traps s (fcntl, fcntl64, ioctl), whatever its Options
// (Options.ArgFilter adds the terminal commands); ok is false for syscalls
// trapped whatever their arguments. The kernel reads the command as an
// unsigned int: only the low 32 bits count.
func (s Syscall) ArgFilter() (arg int, values []uint32, ok bool) {
	switch s {
	case Fcntl, Fcntl64:
		return 1, []uint32{FSetown, FSetownEx}, true
	case Ioctl:
		return 1, []uint32{TIOCSTI, TIOCSIG, FIOSETOWN, SIOCSPGRP}, true
	case Socketcall:
		return 0, []uint32{SocketcallConnect, SocketcallSendto}, true
	}
	return 0, nil, false
}

// ArgFilter is Syscall.ArgFilter for a program built from o: ioctl is
// also trapped for TerminalCommands when o.Terminals is set.
func (o Options) ArgFilter(s Syscall) (arg int, values []uint32, ok bool) {
	arg, values, ok = s.ArgFilter()
	if ok && s == Ioctl && o.Terminals {
		values = append(values, TerminalCommands()...)
	}
	return arg, values, ok
}

// The terminal ioctls that change a terminal for everyone on it, not only
// for the descriptor they are made on (uapi asm-generic/ioctls.h, the same
// numbers on every ABI paddock supports). Each of them, made on the
// user's terminal opened by its path, reaches the user's shell: a line
// discipline that drops everything (TIOCSETD N_NULL), exclusive mode that
// makes every later open fail with EBUSY (TIOCEXCL), output stopped for
// good (TCXONC TCOOFF), settings and window size under the shell's feet.
const (
	TCSETS         = 0x5402     // tcsetattr(TCSANOW)
	TCSETSW        = 0x5403     // tcsetattr(TCSADRAIN)
	TCSETSF        = 0x5404     // tcsetattr(TCSAFLUSH)
	TCSETA         = 0x5406     // the same, struct termio
	TCSETAW        = 0x5407     //
	TCSETAF        = 0x5408     //
	TCXONC         = 0x540a     // tcflow: stop or restart output or input
	TIOCEXCL       = 0x540c     // exclusive mode: later opens fail (EBUSY)
	TIOCNXCL       = 0x540d     // leave exclusive mode
	TIOCSCTTY      = 0x540e     // make it the caller's controlling terminal (1: steal it, CAP_SYS_ADMIN)
	TIOCSWINSZ     = 0x5414     // window size, SIGWINCH to its foreground
	TIOCMBIS       = 0x5416     // modem lines: DTR down hangs a serial line up
	TIOCMBIC       = 0x5417     //
	TIOCMSET       = 0x5418     //
	TIOCSSOFTCAR   = 0x541a     // ignore carrier (CLOCAL)
	TIOCLINUX      = 0x541c     // virtual console: blank, paste, kernel messages
	TIOCCONS       = 0x541d     // redirect the console's output to it (CAP_SYS_ADMIN)
	TIOCSSERIAL    = 0x541f     // serial port settings
	TIOCSETD       = 0x5423     // line discipline (N_NULL drops everything)
	TIOCSBRK       = 0x5427     // hold the line in break
	TIOCCBRK       = 0x5428     //
	TCSETS2        = 0x402c542b // tcsetattr with any speed, struct termios2
	TCSETSW2       = 0x402c542c //
	TCSETSF2       = 0x402c542d //
	TIOCSRS485     = 0x542f     // RS-485 settings of a serial port
	TIOCVHANGUP    = 0x5437     // hang it up (CAP_SYS_ADMIN)
	TIOCSLCKTRMIOS = 0x5457     // lock its settings (CAP_SYS_ADMIN)
)

// TerminalCommands lists the ioctl commands a program built with
// Options.Terminals traps, in a fresh slice. The calls that change a
// terminal for a moment only are not among them: TCFLSH (discard what is
// queued), TCSBRK and TCSBRKP (tcdrain, a timed break), whose harm ends
// with the call.
func TerminalCommands() []uint32 {
	return []uint32{TCSETS, TCSETSW, TCSETSF, TCSETA, TCSETAW, TCSETAF, TCXONC, TIOCEXCL, TIOCNXCL, TIOCSCTTY,
		TIOCSWINSZ, TIOCMBIS, TIOCMBIC, TIOCMSET, TIOCSSOFTCAR, TIOCLINUX, TIOCCONS, TIOCSSERIAL, TIOCSETD,
		TIOCSBRK, TIOCCBRK, TCSETS2, TCSETSW2, TCSETSF2, TIOCSRS485, TIOCVHANGUP, TIOCSLCKTRMIOS}
}

// IsTerminalCommand reports whether cmd is one of TerminalCommands.
func IsTerminalCommand(cmd uint32) bool { return slices.Contains(TerminalCommands(), cmd) }

// String returns the kernel's name for the syscall ("kill", "pidfd_getfd",
// ...), "unknown" for Unknown, and "Syscall(N)" for values outside the list,
// so log lines and journal records use the names people grep for.
func (s Syscall) String() string {
	if s >= 0 && s < numSyscalls {
		return syscallNames[s]
	}
	return "Syscall(" + strconv.Itoa(int(s)) + ")"
}

// SignalArg returns the index of the signal-number argument of a signal
// syscall (kill:1, tkill:1, tgkill:2, rt_sigqueueinfo:1,
// rt_tgsigqueueinfo:2, pidfd_send_signal:1) and ok=false for every other
// syscall. The BPF program uses it to let signal 0 through; the supervisor
// uses it to read the signal it is asked to judge. The kernel reads the
// argument as a C int: only its low 32 bits count.
func (s Syscall) SignalArg() (int, bool) {
	switch s {
	case Kill, Tkill, RtSigqueueinfo, PidfdSendSignal:
		return 1, true
	case Tgkill, RtTgsigqueueinfo:
		return 2, true
	}
	return 0, false
}

// PidArg says which argument of s names its target by number, as the
// caller wrote it (a pid, a negative process group for kill, a thread id
// for tkill, the thread group for tgkill): false where none does, or
// where it depends on another argument (setpriority and ioprio_set name
// theirs in "who", argument 1, as "which" says). Deciding and delivering
// read the target through it, so that it is decoded in one place.
func (s Syscall) PidArg() (int, bool) {
	switch s {
	case Kill, Tkill, Tgkill, RtSigqueueinfo, RtTgsigqueueinfo, ProcessVMWritev, Prlimit64,
		SchedSetaffinity, SchedSetscheduler, SchedSetparam, SchedSetattr, MigratePages, MovePages:
		return 0, true
	case Ptrace, PerfEventOpen, Setpriority, IoprioSet:
		return 1, true
	}
	return 0, false
}

// ThreadArg says which argument of s names a thread of PidArg's thread
// group (tgkill, rt_tgsigqueueinfo).
func (s Syscall) ThreadArg() (int, bool) {
	switch s {
	case Tgkill, RtTgsigqueueinfo:
		return 1, true
	}
	return 0, false
}

// Channels lists the syscalls Build traps for some commands only (see
// ArgFilter; socketcall only with Options.Wall), in a fresh slice.
func Channels() []Syscall { return []Syscall{Fcntl, Fcntl64, Ioctl, Socketcall} }

// Affecting lists the syscalls that harm a process without a signal
// (resource limits, scheduling, I/O priority, memory placement, perf
// events, a terminal hangup), which Build traps unless aimed at the caller
// itself (SelfArgs), in a fresh slice.
func Affecting() []Syscall {
	var out []Syscall
	for s := Syscall(1); s < numSyscalls; s++ {
		if s.Affects() {
			out = append(out, s)
		}
	}
	return out
}

// Affects reports whether s is one of the syscalls that harm a process
// without a signal (Affecting).
func (s Syscall) Affects() bool {
	switch s {
	case Prlimit64, PerfEventOpen, Setpriority, SchedSetaffinity, SchedSetscheduler, SchedSetparam,
		SchedSetattr, IoprioSet, MigratePages, MovePages, ProcessMadvise, Vhangup:
		return true
	}
	return false
}

// Walled reports whether s is one of the syscalls Options.Wall traps.
func (s Syscall) Walled() bool {
	switch s {
	case Connect, Sendto, Socketcall, Open, Openat, Openat2, Creat:
		return true
	}
	return false
}

// Socket address lengths the filter lets through without asking: a
// struct sockaddr_in's and a struct sockaddr_in6's (linux/in.h,
// linux/in6.h). A unix socket address of a path 13 or 14 bytes long, or
// 25 or 26, can have one of these lengths too: that is the price of not
// trapping every TCP connect (docs/limits.md).
const (
	SockaddrIn6Len = 28
	SockaddrInLen  = 16
)

// AddrArg says which arguments of s hold a socket address and its length
// (connect: 1 and 2; sendto: 4 and 5).
func (s Syscall) AddrArg() (addr, length int, ok bool) {
	switch s {
	case Connect:
		return 1, 2, true
	case Sendto:
		return 4, 5, true
	}
	return 0, 0, false
}

// WriteFlagsArg says which argument of s holds the open flags the filter
// compares (open: 1, openat: 2): a call whose access mode is O_RDONLY,
// or that has both O_CREAT and O_EXCL (it can only make a new file),
// runs without asking.
func (s Syscall) WriteFlagsArg() (int, bool) {
	switch s {
	case Open:
		return 1, true
	case Openat:
		return 2, true
	}
	return 0, false
}

// Values the filter compares for the walled calls: the open access-mode
// bits (O_WRONLY|O_RDWR) and O_CREAT|O_EXCL (asm-generic/fcntl.h, the
// same on every ABI paddock supports), and socketcall's calls
// (linux/net.h).
const (
	OAccWrite         = 3
	OCreatExcl        = 0o300
	SocketcallConnect = 3
	SocketcallSendto  = 11
)

// ArgEq is a condition on one argument: its low 32 bits (the kernel's int
// or pid_t) equal Value.
type ArgEq struct {
	Arg   int
	Value uint32
}

// The seccomp(2) operation and flag of a filter with a listener
// (linux/seccomp.h): the only seccomp calls the program traps.
const (
	SeccompSetModeFilter   = 1      // SECCOMP_SET_MODE_FILTER
	SeccompFlagNewListener = 1 << 3 // SECCOMP_FILTER_FLAG_NEW_LISTENER
)

// Values of setpriority's and ioprio_set's "which" (linux/resource.h,
// linux/ioprio.h).
const (
	PrioProcess      = 0 // PRIO_PROCESS
	PrioPgrp         = 1 // PRIO_PGRP
	PrioUser         = 2 // PRIO_USER
	IoprioWhoProcess = 1 // IOPRIO_WHO_PROCESS
	IoprioWhoPgrp    = 2 // IOPRIO_WHO_PGRP
	IoprioWhoUser    = 3 // IOPRIO_WHO_USER
)

// SelfArgs returns the conditions under which a call of s is aimed at the
// calling thread or process alone, so that the BPF program lets it run
// without asking: pid 0 for prlimit64, the sched_* calls, migrate_pages
// and move_pages; pid 0 (argument 1) for perf_event_open; PRIO_PROCESS
// with who 0 for setpriority and IOPRIO_WHO_PROCESS with who 0 for
// ioprio_set (who 0 of a group or a user means the caller's group or
// user, which holds other processes). ok is false for syscalls with no
// such form (process_madvise takes a pidfd, vhangup no target).
func (s Syscall) SelfArgs() (conds []ArgEq, ok bool) {
	switch s {
	case Prlimit64, SchedSetaffinity, SchedSetscheduler, SchedSetparam, SchedSetattr, MigratePages, MovePages:
		return []ArgEq{{0, 0}}, true
	case PerfEventOpen:
		return []ArgEq{{1, 0}}, true
	case Setpriority:
		return []ArgEq{{0, PrioProcess}, {1, 0}}, true
	case IoprioSet:
		return []ArgEq{{0, IoprioWhoProcess}, {1, 0}}, true
	}
	return nil, false
}

// Trapped lists every syscall a program built with o traps (for some
// arguments, or all), in a fresh slice: what a seccomp profile for another
// runtime must send to paddock (`paddock agent profile`).
func Trapped(o Options) []Syscall {
	var out []Syscall
	for s := Syscall(1); s < numSyscalls; s++ {
		if o.trapped(s) {
			out = append(out, s)
		}
	}
	return out
}

// trapped reports whether the program built from o traps s (before the
// signal-0 fast path).
func (o Options) trapped(s Syscall) bool {
	switch s {
	case Kill, Tkill, Tgkill, RtSigqueueinfo, RtTgsigqueueinfo, PidfdSendSignal,
		Ptrace, ProcessVMWritev, PidfdGetfd, Fcntl, Fcntl64, Ioctl:
		return true
	case Execve, Execveat:
		return o.Exec
	case Reboot, KexecLoad, KexecFileLoad:
		return o.Power
	case Seccomp:
		return true
	}
	if s.Walled() {
		return o.Wall
	}
	return s.Affects()
}
