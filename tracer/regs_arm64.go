package tracer

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// skipSyscall makes the syscall tid is stopped in a no-op returning -errno:
// NT_ARM_SYSTEM_CALL -1 skips it, x0 (r0 for an AArch32 caller) is its
// return value. NT_PRSTATUS has the caller's layout: 34 64-bit words
// natively, 18 32-bit ones for AArch32.
func skipSyscall(tid int, _ uint32, errno unix.Errno) error {
	nr := int32(-1)
	if err := regset(unix.PTRACE_SETREGSET, tid, unix.NT_ARM_SYSTEM_CALL, unsafe.Slice((*byte)(unsafe.Pointer(&nr)), 4)); err != nil {
		return fmt.Errorf("set NT_ARM_SYSTEM_CALL: %w", err)
	}
	var buf [34 * 8]byte
	n, err := regsetLen(tid, buf[:])
	if err != nil {
		return fmt.Errorf("get NT_PRSTATUS: %w", err)
	}
	ret := -int64(errno)
	switch n {
	case 18 * 4:
		binary.LittleEndian.PutUint32(buf[:4], uint32(ret))
	case 34 * 8:
		binary.LittleEndian.PutUint64(buf[:8], uint64(ret))
	default:
		return fmt.Errorf("NT_PRSTATUS of %d bytes: unknown layout", n)
	}
	if err := regset(unix.PTRACE_SETREGSET, tid, unix.NT_PRSTATUS, buf[:n]); err != nil {
		return fmt.Errorf("set NT_PRSTATUS: %w", err)
	}
	return nil
}

// regsetLen reads NT_PRSTATUS into buf and returns how much the kernel wrote.
func regsetLen(tid int, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	if err := ptracePtr(unix.PTRACE_GETREGSET, tid, unix.NT_PRSTATUS, unsafe.Pointer(&iov)); err != nil {
		return 0, err
	}
	return int(iov.Len), nil
}

// regset issues PTRACE_GETREGSET or PTRACE_SETREGSET on buf.
func regset(req, tid int, note uintptr, buf []byte) error {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	return ptracePtr(req, tid, note, unsafe.Pointer(&iov))
}
