// Command agenthelper makes one process-control syscall the way an agent's
// program would, for paddock's end-to-end tests, and prints "ok" or
// "err NAME" (exit status 0 or 1). It exists because shells cannot reach
// tgkill, rt_sigqueueinfo, pidfd_send_signal, ptrace or an i386 int 0x80.
//
// Usage: agenthelper VERB ARG...
//
//	kill PID SIG | tkill TID SIG | tgkill PID TID SIG | sigqueue PID SIG |
//	tgsigqueue PID TID SIG | pidfd PID SIG | ptrace-attach PID |
//	vmwrite PID | pidfd-getfd PID FD | int80-kill PID SIG | reboot-invalid |
//	sleep SECONDS
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agenthelper VERB ARG...")
		os.Exit(2)
	}
	err := run(os.Args[1], ints(os.Args[2:]))
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			fmt.Printf("err %s\n", unix.ErrnoName(errno))
		} else {
			fmt.Printf("err %v\n", err)
		}
		os.Exit(1)
	}
	fmt.Println("ok")
}

func ints(args []string) []int {
	out := make([]int, len(args))
	for i, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil {
			fmt.Fprintf(os.Stderr, "agenthelper: %q is not a number\n", a)
			os.Exit(2)
		}
		out[i] = n
	}
	return out
}

func errnoOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func run(verb string, a []int) error {
	switch verb {
	case "kill":
		return unix.Kill(a[0], unix.Signal(a[1]))
	case "tkill":
		_, _, e := unix.RawSyscall(unix.SYS_TKILL, uintptr(a[0]), uintptr(a[1]), 0)
		return errnoOf(e)
	case "tgkill":
		return unix.Tgkill(a[0], a[1], unix.Signal(a[2]))
	case "sigqueue", "tgsigqueue":
		// siginfo_t for SI_QUEUE: signo, errno, code, then pid and uid.
		var info struct {
			signo, errno, code, _ int32
			pid                   int32
			uid                   uint32
			_                     [104]byte
		}
		info.signo = int32(a[len(a)-1])
		info.code = -1 // SI_QUEUE
		info.pid, info.uid = int32(os.Getpid()), uint32(os.Getuid())
		if verb == "sigqueue" {
			_, _, e := unix.RawSyscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(a[0]), uintptr(a[1]), uintptr(unsafe.Pointer(&info)))
			return errnoOf(e)
		}
		_, _, e := unix.RawSyscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(a[0]), uintptr(a[1]), uintptr(a[2]), uintptr(unsafe.Pointer(&info)), 0, 0)
		return errnoOf(e)
	case "pidfd":
		fd, err := unix.PidfdOpen(a[0], 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		return unix.PidfdSendSignal(fd, unix.Signal(a[1]), nil, 0)
	case "ptrace-attach":
		if err := unix.PtraceAttach(a[0]); err != nil {
			return err
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(a[0], &ws, unix.WALL, nil)
		return unix.PtraceDetach(a[0])
	case "vmwrite":
		// No iovecs: nothing is written, but the call is still trapped and decided.
		_, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_WRITEV, uintptr(a[0]), 0, 0, 0, 0, 0)
		return errnoOf(e)
	case "pidfd-getfd":
		fd, err := unix.PidfdOpen(a[0], 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		_, err = unix.PidfdGetfd(fd, a[1], 0)
		return err
	case "int80-kill":
		return int80Kill(a[0], a[1])
	case "reboot-invalid":
		// reboot(2) with magic numbers the kernel rejects (EINVAL): harmless
		// if paddock let it through, EPERM when paddock refuses it.
		_, _, e := unix.RawSyscall6(unix.SYS_REBOOT, 0x1234, 0x5678, unix.LINUX_REBOOT_CMD_POWER_OFF, 0, 0, 0)
		return errnoOf(e)
	case "sleep":
		time.Sleep(time.Duration(a[0]) * time.Second)
		return nil
	}
	return fmt.Errorf("unknown verb %q", verb)
}
