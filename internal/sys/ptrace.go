package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ptrace issues ptrace(req, tid, addr, data) for a request whose data
// argument is an integer (PTRACE_SEIZE's options, PTRACE_DETACH's signal,
// PTRACE_LISTEN). It is a raw syscall: ptrace requests are quick and must
// come from the locked tracer thread either way.
func Ptrace(req, tid int, addr, data uintptr) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// ptracePtr issues one request whose data argument points at memory.
func ptracePtr(req, tid int, addr uintptr, data unsafe.Pointer) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, uintptr(data), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// SyscallInfoSeccomp is struct ptrace_syscall_info with the seccomp member
// of its union (linux/ptrace.h): the syscall a tracee is stopped in at a
// PTRACE_EVENT_SECCOMP stop.
type SyscallInfoSeccomp struct {
	Op      uint8 // PTRACE_SYSCALL_INFO_SECCOMP at a seccomp stop
	_       uint8
	_       uint16
	Arch    uint32 // AUDIT_ARCH_* of the entry
	IP      uint64
	SP      uint64
	Nr      uint64
	Args    [6]uint64
	RetData uint32 // SECCOMP_RET_DATA of the filter's answer
	_       uint32
}

// PtraceGetSyscallInfo is PTRACE_GET_SYSCALL_INFO (Linux 5.3+): the syscall
// thread tid is stopped in.
func PtraceGetSyscallInfo(tid int) (SyscallInfoSeccomp, error) {
	var info SyscallInfoSeccomp
	err := ptracePtr(unix.PTRACE_GET_SYSCALL_INFO, tid, unsafe.Sizeof(info), unsafe.Pointer(&info))
	return info, err
}

// PtraceGetRegset is PTRACE_GETREGSET of register set note (an NT_*
// value) into buf; it returns how many bytes the kernel wrote. buf must not
// be empty.
func PtraceGetRegset(tid int, note uintptr, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	if err := ptracePtr(unix.PTRACE_GETREGSET, tid, note, unsafe.Pointer(&iov)); err != nil {
		return 0, err
	}
	return int(iov.Len), nil
}

// PtraceSetRegset is PTRACE_SETREGSET of register set note from buf, which
// must not be empty.
func PtraceSetRegset(tid int, note uintptr, buf []byte) error {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	return ptracePtr(unix.PTRACE_SETREGSET, tid, note, unsafe.Pointer(&iov))
}
