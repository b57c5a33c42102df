package filter

import "strconv"

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

	// Filter installation, trapped with Options.Seccomp: under the ptrace
	// backend a listener of the agent's own would answer ahead of paddock.
	Seccomp

	// Signal paths through file descriptors, trapped only for the commands
	// in ArgFilter: F_SETOWN and its kin make the kernel signal an owner
	// later (SIGIO, or any signal with F_SETSIG); TIOCSTI types into a
	// terminal; TIOCSIG signals a pty's foreground group.
	Fcntl
	Fcntl64 // i386 and AArch32 only
	Ioctl

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

// ArgFilter returns the argument index and the values of it for which the
// program traps s (fcntl, fcntl64, ioctl); ok is false for syscalls
// trapped whatever their arguments. The kernel reads the command as an
// unsigned int: only the low 32 bits count.
func (s Syscall) ArgFilter() (arg int, values []uint32, ok bool) {
	switch s {
	case Fcntl, Fcntl64:
		return 1, []uint32{FSetown, FSetownEx}, true
	case Ioctl:
		return 1, []uint32{TIOCSTI, TIOCSIG, FIOSETOWN, SIOCSPGRP}, true
	}
	return 0, nil, false
}

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

// Signals lists the signal syscalls, which Build always traps (signal 0
// excepted), in a fresh slice: changing it changes nothing else.
func Signals() []Syscall {
	return []Syscall{Kill, Tkill, Tgkill, RtSigqueueinfo, RtTgsigqueueinfo, PidfdSendSignal}
}

// Targets lists the syscalls that act on another process without a signal
// (ptrace, process_vm_writev, pidfd_getfd), which Build always traps, in a
// fresh slice.
func Targets() []Syscall { return []Syscall{Ptrace, ProcessVMWritev, PidfdGetfd} }

// Channels lists the syscalls Build traps for some commands only (see
// ArgFilter), in a fresh slice.
func Channels() []Syscall { return []Syscall{Fcntl, Fcntl64, Ioctl} }

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
		return o.Seccomp
	}
	return false
}
