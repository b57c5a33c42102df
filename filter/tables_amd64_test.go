package filter

import "golang.org/x/sys/unix"

// Expected numbers, written independently of tables_amd64.go: x86_64 from
// golang.org/x/sys/unix, x32 and i386 from the kernel's syscall_64.tbl and
// syscall_32.tbl.
var wantTables = []wantTable{
	withNrs(nativeTable("x86_64", unix.AUDIT_ARCH_X86_64, "amd64"), map[Syscall]uint32{Open: unix.SYS_OPEN, Creat: unix.SYS_CREAT}),
	{
		name: "x32", arch: unix.AUDIT_ARCH_X86_64, x32: true,
		nrs: map[Syscall]uint32{
			Kill: 62, Tkill: 200, Tgkill: 234, RtSigqueueinfo: 524, RtTgsigqueueinfo: 536,
			PidfdSendSignal: 424, Ptrace: 521, ProcessVMWritev: 540, PidfdGetfd: 438,
			Execve: 520, Execveat: 545, Reboot: 169, KexecLoad: 528, KexecFileLoad: 320, Seccomp: 317,
			Fcntl: 72, Ioctl: 514,
			Prlimit64: 302, PerfEventOpen: 298, Setpriority: 141, SchedSetaffinity: 203, SchedSetscheduler: 144,
			SchedSetparam: 142, SchedSetattr: 314, IoprioSet: 251, MigratePages: 256, MovePages: 533,
			ProcessMadvise: 440, Vhangup: 153,
			Connect: 42, Sendto: 44, Open: 2, Openat: 257, Openat2: 437, Creat: 85,
		},
		// The 64-bit-only numbers that pre-5.4 kernels also ran for x32.
		legacy: map[Syscall]uint32{
			RtSigqueueinfo: 129, RtTgsigqueueinfo: 297, Ptrace: 101, ProcessVMWritev: 311,
			Execve: 59, Execveat: 322, KexecLoad: 246, Ioctl: 16, MovePages: 279,
		},
		untrapped: map[string]uint32{"read": 0, "write": 1, "getpid": 39, "readv": 515, "process_vm_readv": 539},
	},
	{
		name: "i386", arch: unix.AUDIT_ARCH_I386, compat: true, xsys: "386",
		nrs: map[Syscall]uint32{
			Kill: 37, Tkill: 238, Tgkill: 270, RtSigqueueinfo: 178, RtTgsigqueueinfo: 335,
			PidfdSendSignal: 424, Ptrace: 26, ProcessVMWritev: 348, PidfdGetfd: 438,
			Execve: 11, Execveat: 358, Reboot: 88, KexecLoad: 283, Seccomp: 354,
			Fcntl: 55, Fcntl64: 221, Ioctl: 54,
			Prlimit64: 340, PerfEventOpen: 336, Setpriority: 97, SchedSetaffinity: 241, SchedSetscheduler: 156,
			SchedSetparam: 154, SchedSetattr: 351, IoprioSet: 289, MigratePages: 294, MovePages: 317,
			ProcessMadvise: 440, Vhangup: 111,
			Connect: 362, Sendto: 369, Socketcall: 102, Open: 5, Openat: 295, Openat2: 437, Creat: 8,
		},
		// 62 and 320 are kill and kexec_file_load on x86_64 but ustat and
		// utimensat here.
		untrapped: map[string]uint32{"read": 3, "write": 4, "getpid": 20, "ustat": 62, "utimensat": 320},
	},
}

// foreignArches are audit arches the amd64 program must trap outright.
var foreignArches = []uint32{unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64 &^ 0x80000000, 0, 0xffffffff}
