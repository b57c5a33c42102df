package terminal

import (
	"os"

	"golang.org/x/sys/unix"
)

// Device identifies a terminal device by its st_rdev; 0 is none. Two
// descriptors on the same terminal, however each was opened, are the same
// Device: paddock compares a refused caller's stderr with the terminal its
// log goes to, so that the user does not read a refusal twice there.
type Device uint64

// DeviceOf is the terminal f is, or 0 when f is nil or not a terminal.
func DeviceOf(f *os.File) Device {
	if f == nil {
		return 0
	}
	return DeviceOfFd(int(f.Fd()))
}

// DeviceOfFd is the terminal descriptor fd is, or 0.
func DeviceOfFd(fd int) Device {
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return 0
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return 0
	}
	return Device(st.Rdev)
}

// DeviceBehind is the terminal descriptor fd reaches, as the kernel names
// it (TIOCGDEV): unlike DeviceOfFd, /dev/tty reaches the opener's
// controlling terminal and a pty's master its slave. 0 when fd is not a
// terminal (or one that was hung up).
func DeviceBehind(fd int) Device {
	dev, err := unix.IoctlGetUint32(fd, unix.TIOCGDEV)
	if err != nil {
		return 0
	}
	return Device(dev)
}
