package filter

import "golang.org/x/sys/unix"

// Numbers from include/uapi/asm-generic/unistd.h and
// arch/arm64/tools/syscall_32.tbl (the AArch32 EABI table, the same numbers
// as arch/arm/tools/syscall.tbl), checked against golang.org/x/sys/unix
// zsysnum_linux_arm64.go and zsysnum_linux_arm.go.

var aarch64 = &table{
	abi: ABI{Name: "aarch64", Arch: unix.AUDIT_ARCH_AARCH64},
	nrs: map[Syscall]uint32{
		Kill:              129,
		Tkill:             130,
		Tgkill:            131,
		RtSigqueueinfo:    138,
		RtTgsigqueueinfo:  240,
		PidfdSendSignal:   424,
		Ptrace:            117,
		ProcessVMWritev:   271,
		PidfdGetfd:        438,
		Execve:            221,
		Execveat:          281,
		Reboot:            142,
		KexecLoad:         104,
		KexecFileLoad:     294,
		Seccomp:           277,
		Fcntl:             25,
		Ioctl:             29,
		Prlimit64:         261,
		PerfEventOpen:     241,
		Setpriority:       140,
		SchedSetaffinity:  122,
		SchedSetscheduler: 119,
		SchedSetparam:     118,
		SchedSetattr:      274,
		IoprioSet:         30,
		MigratePages:      238,
		MovePages:         239,
		ProcessMadvise:    440,
		Vhangup:           58,
		Connect:           203,
		Sendto:            206,
		Openat:            56,
		Openat2:           437,
	},
}

// arm is the AArch32 compat ABI (EABI numbers; arm64 has no OABI).
var arm = &table{
	abi: ABI{Name: "arm", Arch: unix.AUDIT_ARCH_ARM, Compat: true},
	nrs: map[Syscall]uint32{
		Kill:              37,
		Tkill:             238,
		Tgkill:            268,
		RtSigqueueinfo:    178,
		RtTgsigqueueinfo:  363,
		PidfdSendSignal:   424,
		Ptrace:            26,
		ProcessVMWritev:   377,
		PidfdGetfd:        438,
		Execve:            11,
		Execveat:          387,
		Reboot:            88,
		KexecLoad:         347,
		KexecFileLoad:     401,
		Seccomp:           383,
		Fcntl:             55,
		Fcntl64:           221,
		Ioctl:             54,
		Prlimit64:         369,
		PerfEventOpen:     364,
		Setpriority:       97,
		SchedSetaffinity:  241,
		SchedSetscheduler: 156,
		SchedSetparam:     154,
		SchedSetattr:      380,
		IoprioSet:         314,
		MigratePages:      400,
		MovePages:         344,
		ProcessMadvise:    440,
		Vhangup:           111,
		Connect:           283,
		Sendto:            290,
		Open:              5,
		Openat:            322,
		Openat2:           437,
		Creat:             8,
	},
}

var host = archSpec{native: aarch64, compat: []*table{arm}}
