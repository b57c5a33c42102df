package filter

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/int80"
	"golang.org/x/sys/unix"
)

// i386Probe returns an int $0x80 call; the kernel leaves -errno in rax.
func i386Probe(nr uintptr, args ...uintptr) func() int64 {
	var a [6]uintptr
	copy(a[:], args)
	return func() int64 {
		// Compat syscalls return a 32-bit value; read eax as the i386
		// caller would, whatever the kernel leaves in rax's upper half.
		return int64(int32(int80.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])))
	}
}

// archProbes adds the x32 and i386 probes on amd64. x32 calls are plain
// syscalls with bit 0x40000000 in nr; the filter sees them whether or not
// the kernel was built with CONFIG_X86_X32_ABI (without it they then fail
// with ENOSYS).
func archProbes(e probeEnv) []probe {
	tgt, pid, tid := uintptr(e.target), uintptr(e.pid), uintptr(e.tid)
	pidfd := uintptr(e.pidfd)
	havePidfd := e.pidfd >= 0
	const x = x32Bit
	ps := []probe{
		{"x32", "getpid", Unknown, false, false, sysProbe(x | unix.SYS_GETPID)},
		{"x32", "kill(target, SIGCONT)", Kill, false, false, sysProbe(x|62, tgt, sigcont)},
		{"x32", "kill(target, 0)", Kill, true, false, sysProbe(x|62, tgt, 0)},
		{"x32", "tgkill(0, 0, SIGCONT)", Tgkill, false, false, sysProbe(x|234, 0, 0, sigcont)},
		{"x32", "rt_sigqueueinfo(target, SIGCONT, NULL) [524]", RtSigqueueinfo, false, false, sysProbe(x|524, tgt, sigcont, 0)},
		{"x32", "rt_sigqueueinfo(target, SIGCONT, NULL) [legacy 129]", RtSigqueueinfo, false, false, sysProbe(x|129, tgt, sigcont, 0)},
		{"x32", "ptrace(PTRACE_PEEKDATA, target) [521]", Ptrace, false, false, sysProbe(x|521, unix.PTRACE_PEEKDATA, tgt, 0, 0)},
		{"x32", "execve(NULL) [520]", Execve, false, false, sysProbe(x|520, 0, 0, 0)},
		{"x32", "reboot(bad magic)", Reboot, false, false, sysProbe(x|169, 0, 0, 0, 0)},
		{"x32", "kexec_load(bad flags) [528]", KexecLoad, false, false, sysProbe(x|528, 0, 0, 0, 0x8000)},
		// Not x32: other high bits make a number the kernel runs nothing for.
		{"x86_64", "nr 0x8000003e (kill with bit 31)", Unknown, false, false, sysProbe(0x80000000|62, tgt, sigcont)},
		{"x86_64", "nr 0xc000003e (kill with bits 31 and 30)", Unknown, false, false, sysProbe(0xc0000000|62, tgt, sigcont)},
		{"x86_64", "ptrace nr 521 without the x32 bit", Unknown, false, false, sysProbe(521, unix.PTRACE_PEEKDATA, tgt, 0, 0)},
	}
	if !e.int80 {
		return ps
	}
	return append(ps, []probe{
		{"i386", "getpid", Unknown, false, true, i386Probe(20)},
		{"i386", "kill(target, SIGCONT)", Kill, false, true, i386Probe(37, tgt, sigcont)},
		{"i386", "kill(target, 0)", Kill, true, true, i386Probe(37, tgt, 0)},
		{"i386", "kill(target, 0xdeadbeef<<32): ecx's upper half is ignored", Kill, true, true, i386Probe(37, tgt, 0xdeadbeef<<32)},
		{"i386", "kill(0xcafe<<32|target, 0xdeadbeef<<32|SIGCONT)", Kill, false, true, i386Probe(37, 0xcafe<<32|tgt, 0xdeadbeef<<32|sigcont)},
		{"i386", "tkill(tid, 0)", Tkill, true, true, i386Probe(238, tid, 0)},
		{"i386", "tkill(0, SIGCONT)", Tkill, false, false, i386Probe(238, 0, sigcont)},
		{"i386", "tgkill(pid, tid, 0)", Tgkill, true, true, i386Probe(270, pid, tid, 0)},
		{"i386", "tgkill(0, 0, SIGCONT)", Tgkill, false, false, i386Probe(270, 0, 0, sigcont)},
		{"i386", "rt_sigqueueinfo(target, SIGCONT, NULL)", RtSigqueueinfo, false, false, i386Probe(178, tgt, sigcont, 0)},
		{"i386", "rt_sigqueueinfo(target, 0, NULL)", RtSigqueueinfo, true, false, i386Probe(178, tgt, 0, 0)},
		{"i386", "rt_tgsigqueueinfo(pid, tid, SIGCONT, NULL)", RtTgsigqueueinfo, false, false, i386Probe(335, pid, tid, sigcont, 0)},
		{"i386", "pidfd_send_signal(pidfd, SIGCONT)", PidfdSendSignal, false, havePidfd, i386Probe(424, pidfd, sigcont, 0, 0)},
		{"i386", "pidfd_send_signal(pidfd, 0)", PidfdSendSignal, true, havePidfd, i386Probe(424, pidfd, 0, 0, 0)},
		{"i386", "ptrace(PTRACE_PEEKDATA, target)", Ptrace, false, false, i386Probe(26, unix.PTRACE_PEEKDATA, tgt, 0, 0)},
		{"i386", "process_vm_writev(target, bad flags)", ProcessVMWritev, false, false, i386Probe(348, tgt, 0, 0, 0, 0, 1)},
		{"i386", "pidfd_getfd(pidfd, 0, bad flags)", PidfdGetfd, false, false, i386Probe(438, pidfd, 0, 1)},
		{"i386", "execve(NULL)", Execve, false, false, i386Probe(11, 0, 0, 0)},
		{"i386", "execveat(AT_FDCWD, NULL)", Execveat, false, false, i386Probe(358, atFdcwd, 0, 0, 0, 0)},
		{"i386", "reboot(bad magic)", Reboot, false, false, i386Probe(88, 0, 0, 0, 0)},
		{"i386", "kexec_load(bad flags)", KexecLoad, false, false, i386Probe(283, 0, 0, 0, 0x8000)},
		// 320 is kexec_file_load on x86_64 but utimensat on i386.
		{"i386", "utimensat(-1, NULL) [nr 320]", Unknown, false, false, i386Probe(320, ^uintptr(0), 0, 0, 0)},
	}...)
}

// childInt80 reports what an i386 getpid through int $0x80 returns.
func childInt80() int {
	fmt.Printf("%d %d\n", int32(int80.Syscall(20, 0, 0, 0)), os.Getpid())
	return 0
}

// int80Available runs an int $0x80 getpid in a child (where a kernel
// without IA32 emulation may kill it) and reports whether it worked.
func int80Available(t *testing.T) (bool, string) {
	t.Helper()
	out, err := runChildRaw("int80")
	if err != nil {
		// Keep the reason short: the Go crash report is long.
		msg := err.Error()
		if i := strings.Index(msg, "[signal "); i >= 0 {
			msg = msg[i:]
		}
		msg, _, _ = strings.Cut(msg, "\n")
		return false, "int $0x80 getpid killed the child: " + msg + " (kernel without IA32 emulation, or booted with ia32_emulation=0)"
	}
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != f[1] {
		r, _ := strconv.ParseInt(f[0], 10, 64)
		return false, fmt.Sprintf("int $0x80 getpid returned %s, want pid %s", errnoString(r), f[1])
	}
	return true, ""
}
