package tracer

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sys"
)

// skipSyscall makes the syscall tid is stopped in a no-op returning -errno:
// NT_ARM_SYSTEM_CALL -1 skips it, x0 (r0 for an AArch32 caller) is its
// return value. NT_PRSTATUS has the caller's layout: 34 64-bit words
// natively, 18 32-bit ones for AArch32.
func skipSyscall(tid int, _ uint32, errno unix.Errno) error {
	var nr [4]byte
	binary.LittleEndian.PutUint32(nr[:], ^uint32(0)) // -1
	if err := sys.PtraceSetRegset(tid, unix.NT_ARM_SYSTEM_CALL, nr[:]); err != nil {
		return fmt.Errorf("set NT_ARM_SYSTEM_CALL: %w", err)
	}
	var buf [34 * 8]byte
	n, err := sys.PtraceGetRegset(tid, unix.NT_PRSTATUS, buf[:])
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
	if err := sys.PtraceSetRegset(tid, unix.NT_PRSTATUS, buf[:n]); err != nil {
		return fmt.Errorf("set NT_PRSTATUS: %w", err)
	}
	return nil
}
