// Package sys is the one place in paddock that uses package unsafe or issues
// raw syscalls: the kernel ABIs golang.org/x/sys does not wrap (seccomp
// filter install and user-notification ioctls, PTRACE_GET_SYSCALL_INFO and
// register sets, landlock_create_ruleset, si_pid of a waitid result, the bpf(2) program load
// and link that doctor's BPF LSM probe makes).
//
// Each function is small and typed, takes and returns Go values, and
// returns the bare unix.Errno on failure so that callers can both test it
// with errors.Is and wrap it with what they were doing. Nothing here
// decides anything; the packages above (filter, tracer, internal/seccomp,
// internal/features, supervisor) give these calls their meaning. Keeping
// the unsafe code in one package keeps it reviewable in one sitting, the
// way cilium/ebpf keeps its in internal/sys and internal/unix.
package sys
