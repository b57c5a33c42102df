package filter

import "golang.org/x/sys/unix"

// Expected numbers, written independently of tables_arm64.go: aarch64 from
// golang.org/x/sys/unix, arm from arch/arm64/tools/syscall_32.tbl.
var wantTables = []wantTable{
	nativeTable("aarch64", unix.AUDIT_ARCH_AARCH64, "arm64"),
	{
		name: "arm", arch: unix.AUDIT_ARCH_ARM, compat: true, xsys: "arm",
		nrs: map[Syscall]uint32{
			Kill: 37, Tkill: 238, Tgkill: 268, RtSigqueueinfo: 178, RtTgsigqueueinfo: 363,
			PidfdSendSignal: 424, Ptrace: 26, ProcessVMWritev: 377, PidfdGetfd: 438,
			Execve: 11, Execveat: 387, Reboot: 88, KexecLoad: 347, KexecFileLoad: 401, Seccomp: 383,
			Fcntl: 55, Fcntl64: 221, Ioctl: 54,
			Prlimit64: 369, PerfEventOpen: 364, Setpriority: 97, SchedSetaffinity: 241, SchedSetscheduler: 156,
			SchedSetparam: 154, SchedSetattr: 380, IoprioSet: 314, MigratePages: 400, MovePages: 344,
			ProcessMadvise: 440, Vhangup: 111,
			Connect: 283, Sendto: 290, Open: 5, Openat: 322, Openat2: 437, Creat: 8,
		},
		// 129 and 131 are kill and tgkill on aarch64 but delete_module and
		// quotactl here.
		untrapped: map[string]uint32{"read": 3, "write": 4, "getpid": 20, "delete_module": 129, "quotactl": 131},
	},
}

// foreignArches are audit arches the arm64 program must trap outright.
var foreignArches = []uint32{unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_AARCH64 &^ 0x80000000, 0, 0xffffffff}
