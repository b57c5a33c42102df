package tracer

import "golang.org/x/sys/unix"

// skipSyscall makes the syscall tid is stopped in a no-op returning -errno:
// orig_rax -1 skips it, rax is its return value. The 64-bit register view
// serves the i386 and x32 entries too (a 64-bit tracer always sees it).
func skipSyscall(tid int, _ uint32, errno unix.Errno) error {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return err
	}
	regs.Orig_rax = ^uint64(0)
	regs.Rax = uint64(-int64(errno))
	return unix.PtraceSetRegs(tid, &regs)
}
