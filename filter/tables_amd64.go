package filter

import "golang.org/x/sys/unix"

// Numbers from arch/x86/entry/syscalls/syscall_64.tbl and syscall_32.tbl
// (Linux 6.x), checked against golang.org/x/sys/unix zsysnum_linux_amd64.go
// and zsysnum_linux_386.go.

var x86_64 = &table{
	abi: ABI{Name: "x86_64", Arch: unix.AUDIT_ARCH_X86_64},
	nrs: map[Syscall]uint32{
		Kill:              62,
		Tkill:             200,
		Tgkill:            234,
		RtSigqueueinfo:    129,
		RtTgsigqueueinfo:  297,
		PidfdSendSignal:   424,
		Ptrace:            101,
		ProcessVMWritev:   311,
		PidfdGetfd:        438,
		Execve:            59,
		Execveat:          322,
		Reboot:            169,
		KexecLoad:         246,
		KexecFileLoad:     320,
		Seccomp:           317,
		Fcntl:             72,
		Ioctl:             16,
		Prlimit64:         302,
		PerfEventOpen:     298,
		Setpriority:       141,
		SchedSetaffinity:  203,
		SchedSetscheduler: 144,
		SchedSetparam:     142,
		SchedSetattr:      314,
		IoprioSet:         251,
		MigratePages:      256,
		MovePages:         279,
		ProcessMadvise:    440,
		Vhangup:           153,
	},
}

// x32: "common" entries of syscall_64.tbl keep their x86_64 number, the
// "x32" entries in 512..547 replace the "64"-only ones.
var x32 = &table{
	abi: ABI{Name: "x32", Arch: unix.AUDIT_ARCH_X86_64, X32: true},
	nrs: map[Syscall]uint32{
		Kill:              62,
		Tkill:             200,
		Tgkill:            234,
		RtSigqueueinfo:    524,
		RtTgsigqueueinfo:  536,
		PidfdSendSignal:   424,
		Ptrace:            521,
		ProcessVMWritev:   540,
		PidfdGetfd:        438,
		Execve:            520,
		Execveat:          545,
		Reboot:            169,
		KexecLoad:         528,
		KexecFileLoad:     320,
		Seccomp:           317,
		Fcntl:             72,
		Ioctl:             514,
		Prlimit64:         302,
		PerfEventOpen:     298,
		Setpriority:       141,
		SchedSetaffinity:  203,
		SchedSetscheduler: 144,
		SchedSetparam:     142,
		SchedSetattr:      314,
		IoprioSet:         251,
		MigratePages:      256,
		MovePages:         533,
		ProcessMadvise:    440,
		Vhangup:           153,
	},
	legacy: x86_64,
}

// i386, reached from a 64-bit process with int $0x80 (IA32 emulation). It
// has no kexec_file_load.
var i386 = &table{
	abi: ABI{Name: "i386", Arch: unix.AUDIT_ARCH_I386, Compat: true},
	nrs: map[Syscall]uint32{
		Kill:              37,
		Tkill:             238,
		Tgkill:            270,
		RtSigqueueinfo:    178,
		RtTgsigqueueinfo:  335,
		PidfdSendSignal:   424,
		Ptrace:            26,
		ProcessVMWritev:   348,
		PidfdGetfd:        438,
		Execve:            11,
		Execveat:          358,
		Reboot:            88,
		KexecLoad:         283,
		Seccomp:           354,
		Fcntl:             55,
		Fcntl64:           221,
		Ioctl:             54,
		Prlimit64:         340,
		PerfEventOpen:     336,
		Setpriority:       97,
		SchedSetaffinity:  241,
		SchedSetscheduler: 156,
		SchedSetparam:     154,
		SchedSetattr:      351,
		IoprioSet:         289,
		MigratePages:      294,
		MovePages:         317,
		ProcessMadvise:    440,
		Vhangup:           111,
	},
}

var host = archSpec{native: x86_64, x32: x32, compat: []*table{i386}}
