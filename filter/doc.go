// Package filter builds and installs the seccomp classic-BPF program that
// sends paddock's process-control syscalls to a supervisor.
//
// The program traps the signal syscalls (kill, tkill, tgkill,
// rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal), the syscalls
// that reach into another process (ptrace, process_vm_writev, pidfd_getfd)
// and, on request, execve/execveat and the power syscalls (reboot,
// kexec_load, kexec_file_load). Trapped syscalls return Options.Action
// (SECCOMP_RET_USER_NOTIF for the notify supervisor, SECCOMP_RET_TRACE for
// the ptrace backend); everything else is allowed.
//
// Three properties matter more than the syscall list itself:
//
//   - Every ABI the kernel may be entered through is covered, not only the
//     native one: on amd64 the x32 ABI (nr with bit 0x40000000) and the
//     i386 ABI (int $0x80, AUDIT_ARCH_I386); on arm64 the AArch32 ABI
//     (AUDIT_ARCH_ARM). An arch value the program does not know is trapped,
//     never allowed.
//   - A signal syscall whose signal number is 0 is allowed in BPF: signal 0
//     is an existence probe and delivers nothing, and it is by far the most
//     frequent call (shells and supervisors poll with it). Only the low 32
//     bits of the argument are tested, exactly as the kernel reads an int.
//   - A syscall that is not trapped never loads an argument. The kernel
//     (5.11+) then proves at install time that the filter allows it
//     regardless of arguments and skips the filter for it entirely.
//
// Lookup turns the (arch, nr) pair of a seccomp notification back into a
// Syscall and the ABI it came through, so the supervisor decodes arguments
// the way the kernel will read them.
package filter
