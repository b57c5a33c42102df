package main

import "golang.org/x/sys/unix"

// int80 enters the kernel through the i386 compat ABI (int $0x80).
func int80(nr, a1, a2, a3 uintptr) uintptr

// i386 syscall number of kill.
const i386Kill = 37

func int80Kill(pid, sig int) error {
	r := int32(int80(i386Kill, uintptr(uint32(int32(pid))), uintptr(sig), 0))
	if r < 0 {
		return unix.Errno(-r)
	}
	return nil
}
