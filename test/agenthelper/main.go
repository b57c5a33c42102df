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
//	sleep SECONDS | setown PID SIG | setown-ex PID SIG | fiosetown PID SIG |
//	tiocsti FD | tiocsig-own-pty SIG | vhangup | open-mem PID
//
// open-mem opens /proc/PID/mem for reading and writing, which the kernel
// guards with a ptrace access check (and paddock's Landlock wall refuses
// for a process outside the session).
//
// And: agenthelper termctl WHICH harm|same makes the terminal ioctls that
// change a terminal for everyone on it, printing "WHICH NAME ok" or "WHICH
// NAME err ERRNO" for each, on the terminal WHICH names: a PID, that
// process's terminal opened by its path (from the tty_nr of its stat line:
// an agent's shell finds the user's terminal from paddock's, $PPID), shown
// as "user"; tty, /dev/tty; pty, a pty it opens itself. "harm" stops the
// output (TCXONC TCOOFF), sets exclusive mode and the line discipline
// N_NULL, the attack that leaves a terminal dead; "same" sets back what
// each reads (harmless).
//
// And: agenthelper shadow-kill PID SIG tries to step around paddock with a
// listener of its own: a filter that sends kill to a listener this process
// answers with CONTINUE from another thread, then kill(PID, SIG).
// agenthelper shadow-kill-orphaned ROOT PID SIG does the same once process
// ROOT (the agent root) has gone, as a leftover of the agent's.
//
// And: agenthelper dbus-call system|session DEST PATH INTERFACE.MEMBER
// [SIGNATURE ARG...] makes a D-Bus method call in its own code, without
// running a command (internal/dbustest's client), and prints "reply" and
// the reply's values, or "err NAME: MESSAGE" for an error reply.
//
// And: agenthelper listen-exec PROG ARG... installs a seccomp filter that
// allows everything but holds a user-notification listener, then execs
// PROG: what a sandbox that supervises with its own listener looks like to
// paddock (a second listener in the chain fails with EBUSY).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/internal/sys"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agenthelper VERB ARG...")
		os.Exit(2)
	}
	if os.Args[1] == "shadow-kill" || os.Args[1] == "shadow-kill-orphaned" {
		args := ints(os.Args[2:])
		if os.Args[1] == "shadow-kill-orphaned" && len(args) > 0 {
			// A leftover: wait until the agent root (the first
			// argument) has gone, and a second more for the supervisor
			// to exit after it. Signal 0 is never trapped.
			for unix.Kill(args[0], 0) == nil {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(time.Second)
			args = args[1:]
		}
		err := shadowKill(args)
		if err != nil {
			fmt.Printf("err %v\n", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		return
	}
	if os.Args[1] == "termctl" && len(os.Args) == 4 {
		if err := termctl(os.Args[2], os.Args[3] == "harm"); err != nil {
			fmt.Printf("err %v\n", err)
			os.Exit(1)
		}
		return
	}
	if os.Args[1] == "dbus-call" {
		if err := dbusCall(os.Args[2:]); err != nil {
			fmt.Printf("err %v\n", err)
			os.Exit(1)
		}
		return
	}
	if os.Args[1] == "listen-exec" {
		err := listenExec(os.Args[2:])
		fmt.Fprintf(os.Stderr, "agenthelper listen-exec: %v\n", err)
		os.Exit(126)
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
	case "sigqueue":
		return sys.RtSigqueueinfo(a[0], a[1])
	case "tgsigqueue":
		return sys.RtTgsigqueueinfo(a[0], a[1], a[2])
	case "pidfd":
		fd, err := unix.PidfdOpen(a[0], 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		return unix.PidfdSendSignal(fd, unix.Signal(a[1]), nil, 0)
	case "pidfd-badfd":
		// pidfd_send_signal(SIGTERM) on a descriptor that is no pidfd: a
		// pipe's (a[0] == 0) or a closed number (a[0] == 1).
		fd := 1000
		if a[0] == 0 {
			var p [2]int
			if err := unix.Pipe(p[:]); err != nil {
				return err
			}
			fd = p[0]
		}
		_, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(unix.SIGTERM), 0, 0, 0, 0)
		return errnoOf(e)
	case "traceme":
		// PTRACE_TRACEME: offer this process to its parent as a tracee.
		_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0, 0, 0, 0)
		return errnoOf(e)
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
	case "setown", "setown-ex", "fiosetown":
		return setOwner(verb, a[0], a[1])
	case "tiocsti":
		return sys.IoctlTIOCSTI(a[0], 'x')
	case "vhangup":
		// Hangs up this process's controlling terminal (CAP_SYS_TTY_CONFIG).
		_, _, e := unix.Syscall(unix.SYS_VHANGUP, 0, 0, 0)
		return errnoOf(e)
	case "tiocsig-own-pty":
		return tiocsigOwnPty(unix.Signal(a[0]))
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
	case "open-mem":
		fd, err := unix.Open("/proc/"+strconv.Itoa(a[0])+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	}
	return fmt.Errorf("unknown verb %q", verb)
}

// listenExec installs an allow-all filter with a listener on this thread
// and execs args from it, keeping the listener open across the exec.
func listenExec(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: listen-exec PROG ARG...")
	}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	fd, err := sys.SeccompSetModeFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		return fmt.Errorf("seccomp(NEW_LISTENER): %w", err)
	}
	// The kernel forgets a listener whose last fd closes, and the fd is
	// close-on-exec: keep it open in PROG, as a sandbox's supervisor would.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("keep the listener open across exec: %w", err)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	return unix.Exec(path, args, os.Environ())
}

// shadowKill installs, on this thread, a filter sending kill(2) to a
// listener that another thread answers "continue", then sends the signal.
// Only a kernel or paddock refusal of the listener stops it.
func shadowKill(a []int) error {
	if len(a) != 2 {
		return errors.New("usage: shadow-kill PID SIG")
	}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_KILL, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fd, err := sys.SeccompSetModeFilter(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		return fmt.Errorf("seccomp(NEW_LISTENER): %s", unix.ErrnoName(err.(unix.Errno))) // sys returns the bare errno
	}
	go func() {
		// Another OS thread, without the filter: answer every notification
		// "continue".
		runtime.LockOSThread()
		for {
			var n seccomp.Notif
			if err := seccomp.Recv(fd, &n); err != nil {
				if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
					continue
				}
				return
			}
			_ = seccomp.Send(fd, n.ID, 0)
		}
	}()
	_, _, e := unix.RawSyscall(unix.SYS_KILL, uintptr(a[0]), uintptr(a[1]), 0)
	if e != 0 {
		return fmt.Errorf("kill: %s", unix.ErrnoName(e))
	}
	return nil
}

// setOwner makes PID the owner of a pipe's read end (F_SETOWN, F_SETOWN_EX
// or FIOSETOWN; a negative PID is a process group), asks for SIG instead of
// SIGIO, and writes to the pipe: the kernel then signals the owner.
func setOwner(how string, pid, sig int) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	var err error
	switch how {
	case "setown":
		_, err = unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, pid)
	case "setown-ex":
		err = sys.FcntlSetOwnEx(p[0], 1 /* F_OWNER_PID */, pid)
	case "fiosetown":
		err = unix.IoctlSetPointerInt(p[0], 0x8901 /* FIOSETOWN */, pid)
	}
	if err != nil {
		return err
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, sig); err != nil {
		return fmt.Errorf("F_SETSIG: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("F_SETFL O_ASYNC: %w", err)
	}
	_, err = unix.Write(p[1], []byte{'x'})
	return err
}

// openPty opens a new pty's master (left open, as its holder) and returns
// it with the slave's path.
func openPty() (master int, name string, err error) {
	master, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return -1, "", fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	if err != nil {
		return -1, "", fmt.Errorf("ptsname: %w", err)
	}
	return master, "/dev/pts/" + strconv.Itoa(n), nil
}

// tiocsigOwnPty opens a pty, starts `sleep 300` as the session leader with
// the pty as its terminal, and signals the pty's foreground group with
// TIOCSIG on the master; it reports how the sleep ended.
func tiocsigOwnPty(sig unix.Signal) error {
	master, name, err := openPty()
	if err != nil {
		return err
	}
	slave, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	cmd := exec.Command("sleep", "300")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		return err
	}
	slave.Close()
	// The child is the foreground group once it has its terminal.
	for i := 0; i < 500; i++ {
		if pg, err := unix.IoctlGetInt(master, unix.TIOCGPGRP); err == nil && pg == cmd.Process.Pid {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCSIG, uintptr(sig))
	if e != 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return e
	}
	err = cmd.Wait()
	fmt.Printf("child: %v\n", err)
	return nil
}

// termctl opens the terminal which names (see the package comment) and
// makes each terminal ioctl on it, printing how each went.
func termctl(which string, harm bool) error {
	var fd int
	switch which {
	case "tty", "pty":
	default:
		// The terminal of process WHICH, as an agent finds paddock's:
		// from its tty_nr.
		b, err := os.ReadFile("/proc/" + which + "/stat")
		if err != nil {
			return err
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 5 {
			return fmt.Errorf("short stat line %q", b)
		}
		dev, err := strconv.ParseUint(f[4], 10, 32) // tty_nr, field 7
		if err != nil || dev == 0 {
			return fmt.Errorf("no terminal in %q (%v)", f[4], err)
		}
		major, minor := unix.Major(dev), unix.Minor(dev)
		if major < 136 || major > 143 {
			return fmt.Errorf("terminal %d:%d is not a pty", major, minor)
		}
		path := "/dev/pts/" + strconv.Itoa(int((major-136)*256+minor))
		fmt.Printf("path %s\n", path)
		if fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOCTTY, 0); err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		which = "user"
	}
	switch which {
	case "tty":
		var err error
		if fd, err = unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY, 0); err != nil {
			return fmt.Errorf("open /dev/tty: %w", err)
		}
	case "pty":
		_, name, err := openPty()
		if err != nil {
			return err
		}
		if fd, err = unix.Open(name, unix.O_RDWR|unix.O_NOCTTY, 0); err != nil {
			return err
		}
	}
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("TCGETS: %w", err)
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return fmt.Errorf("TIOCGWINSZ: %w", err)
	}
	ldisc, err := unix.IoctlGetInt(fd, unix.TIOCGETD)
	if err != nil {
		return fmt.Errorf("TIOCGETD: %w", err)
	}
	flow, excl := unix.TCOON, unix.TIOCNXCL
	if harm {
		flow, excl, ldisc = unix.TCOOFF, unix.TIOCEXCL, 27 // N_NULL
	}
	report := func(name string, err error) {
		if err == nil {
			fmt.Printf("%s %s ok\n", which, name)
			return
		}
		var errno unix.Errno
		if errors.As(err, &errno) {
			fmt.Printf("%s %s err %s\n", which, name, unix.ErrnoName(errno))
			return
		}
		fmt.Printf("%s %s err %v\n", which, name, err)
	}
	report("TCSETS", unix.IoctlSetTermios(fd, unix.TCSETS, tio))
	report("TIOCSWINSZ", unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws))
	report("TCXONC", unix.IoctlSetInt(fd, unix.TCXONC, flow))
	name := "TIOCNXCL"
	if harm {
		name = "TIOCEXCL"
	}
	report(name, unix.IoctlSetInt(fd, uint(excl), 0))
	report("TIOCSETD", unix.IoctlSetPointerInt(fd, unix.TIOCSETD, ldisc))
	return nil
}
