package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ConnectRaw connects fd to the socket address addr, as its bytes are
// (a caller's, read from its memory): x/sys/unix's Connect takes only
// addresses it can build, and a caller's may be one it cannot (an
// abstract name with NULs, a length of the caller's choosing).
func ConnectRaw(fd int, addr []byte) error {
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(bytesPtr(addr)), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

// SendtoRaw sends data on fd with flags to the socket address addr, as
// its bytes are (see ConnectRaw), and returns how many bytes went.
func SendtoRaw(fd int, data []byte, flags int, addr []byte) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bytesPtr(data)), uintptr(len(data)), uintptr(flags),
		uintptr(bytesPtr(addr)), uintptr(len(addr)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// bytesPtr is b's first byte's address, nil for an empty b.
func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
