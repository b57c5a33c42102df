package main

import (
	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/int80"
)

// i386 syscall number of kill.
const i386Kill = 37

// int80Kill is kill(pid, sig) through the i386 compat ABI (int $0x80).
func int80Kill(pid, sig int) error {
	r := int32(int80.Syscall(i386Kill, uintptr(uint32(int32(pid))), uintptr(sig), 0))
	if r < 0 {
		return unix.Errno(-r)
	}
	return nil
}
