package int80

// Syscall makes i386 syscall nr with arguments in ebx, ecx, edx and returns
// the raw rax the kernel left (a negative errno on failure).
func Syscall(nr, a1, a2, a3 uintptr) uintptr {
	return Syscall6(nr, a1, a2, a3, 0, 0, 0)
}

// Syscall6 makes i386 syscall nr with arguments in ebx, ecx, edx, esi, edi,
// ebp and returns the raw rax the kernel left (a negative errno on failure).
// The full 64-bit registers are loaded, so callers can observe what the
// kernel makes of their upper halves.
func Syscall6(nr, a1, a2, a3, a4, a5, a6 uintptr) uintptr
