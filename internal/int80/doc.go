// Package int80 makes i386 syscalls from a 64-bit amd64 process with
// `int $0x80`, for tests that must prove the seccomp program also covers
// the IA-32 ABI (AUDIT_ARCH_I386, i386 syscall numbers). It is a separate
// package because the go tool compiles every .s file into its package's
// non-test build, so test-only assembly cannot live in package filter.
//
// The kernel returns -errno in eax. Pointers passed this way are truncated
// to 32 bits by the kernel; pass only 0 or integers.
package int80
