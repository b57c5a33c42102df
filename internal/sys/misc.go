package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// LandlockABI is landlock_create_ruleset(NULL, 0,
// LANDLOCK_CREATE_RULESET_VERSION): the highest Landlock ABI version this
// kernel has (Linux 5.13+). ENOSYS: no Landlock; EOPNOTSUPP: built in but
// not enabled.
func LandlockABI() (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// ChildSubreaper is prctl(PR_GET_CHILD_SUBREAPER): whether this process is
// a child subreaper.
func ChildSubreaper() (bool, error) {
	var v int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0); err != nil {
		return false, err
	}
	return v != 0, nil
}

// SiginfoPid is si_pid of a siginfo that waitid(2) filled in (or of a
// SIGCHLD): golang.org/x/sys keeps that union opaque. The union starts
// after si_signo, si_errno and si_code, 8-aligned on 64-bit platforms;
// si_pid is its first member.
func SiginfoPid(info *unix.Siginfo) int {
	b := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(info))
	off := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Pointer(&b[off])))
}

// siginfoQueue is the head of a siginfo_t for SI_QUEUE: si_signo, si_errno,
// si_code, the 64-bit pad, then si_pid and si_uid; 128 bytes in all.
type siginfoQueue struct {
	signo, errno, code, _ int32
	pid                   int32
	uid                   uint32
	_                     [104]byte
}

var _ [128 - unsafe.Sizeof(siginfoQueue{})]byte

// newSiginfoQueue is what sigqueue(3) would send: SI_QUEUE from this process.
func newSiginfoQueue(sig int) siginfoQueue {
	return siginfoQueue{signo: int32(sig), code: -1 /* SI_QUEUE */, pid: int32(unix.Getpid()), uid: uint32(unix.Getuid())}
}

// RtSigqueueinfo is rt_sigqueueinfo(tgid, sig, info) with the siginfo
// sigqueue(3) sends (SI_QUEUE, this process's pid and uid). x/sys has no
// wrapper; paddock's end-to-end tests make this call as an agent would.
func RtSigqueueinfo(tgid, sig int) error {
	info := newSiginfoQueue(sig)
	_, _, e := unix.RawSyscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(tgid), uintptr(sig), uintptr(unsafe.Pointer(&info)))
	if e != 0 {
		return e
	}
	return nil
}

// RtTgsigqueueinfo is rt_tgsigqueueinfo(tgid, tid, sig, info) with the
// siginfo of RtSigqueueinfo.
func RtTgsigqueueinfo(tgid, tid, sig int) error {
	info := newSiginfoQueue(sig)
	_, _, e := unix.RawSyscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(tgid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(&info)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// FcntlSetOwnEx is fcntl(fd, F_SETOWN_EX, {typ, pid}): typ is F_OWNER_TID,
// F_OWNER_PID or F_OWNER_PGRP. x/sys has no struct f_owner_ex.
func FcntlSetOwnEx(fd, typ, pid int) error {
	owner := struct{ typ, pid int32 }{int32(typ), int32(pid)}
	_, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&owner)))
	if e != 0 {
		return e
	}
	return nil
}

// IoctlTIOCSTI is ioctl(fd, TIOCSTI, &c): it pushes c into the input queue
// of terminal fd, as if typed.
func IoctlTIOCSTI(fd int, c byte) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	if e != 0 {
		return e
	}
	return nil
}

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on Linux.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// IgnoreSignal sets sig's disposition to SIG_IGN with rt_sigaction, for the
// signals the Go runtime neither handles nor lets os/signal catch (32 and
// 34 on Linux, which belong to the C library): left at their default
// action, one sent from outside would end the process. The setting is
// inherited by children forked afterwards and kept across their exec.
func IgnoreSignal(sig int) error {
	act := kernelSigaction{handler: 1} // SIG_IGN
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// SetSigmask sets the calling thread's signal mask to mask (bit N-1 for
// signal N) with rt_sigprocmask(SIG_SETMASK). The caller must have locked
// its OS thread: the mask belongs to the thread.
func SetSigmask(mask uint64) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// SiginfoSize is the size of siginfo_t under every ABI.
const SiginfoSize = 128

// Siginfo is b, a siginfo_t in this process's layout, as the type the
// signal calls take.
func Siginfo(b *[SiginfoSize]byte) *unix.Siginfo { return (*unix.Siginfo)(unsafe.Pointer(b)) }

// RtTgsigqueueinfoWith is rt_tgsigqueueinfo(tgid, tid, sig, info) with
// the siginfo given (a deputy's, or the caller's own).
func RtTgsigqueueinfoWith(tgid, tid, sig int, info *unix.Siginfo) error {
	_, _, e := unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(tgid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(info)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Tkill is tkill(tid, sig), which x/sys does not wrap.
func Tkill(tid, sig int) error {
	_, _, e := unix.Syscall(unix.SYS_TKILL, uintptr(tid), uintptr(sig), 0)
	if e != 0 {
		return e
	}
	return nil
}

// SetPdeathsig asks the kernel to send sig to this process when the
// thread that forked it ends (prctl PR_SET_PDEATHSIG).
func SetPdeathsig(sig int) error {
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0)
}

// kcmpFile is KCMP_FILE of linux/kcmp.h: compare two file descriptors'
// open files.
const kcmpFile = 0

// SameFile is kcmp(pid1, pid2, KCMP_FILE, fd1, fd2): whether descriptor
// fd1 of process pid1 and fd2 of pid2 are the same open file (not merely
// the same inode). The kernel allows it to a caller that may read both
// processes as ptrace would (PTRACE_MODE_READ_REALCREDS).
func SameFile(pid1, fd1, pid2, fd2 int) (bool, error) {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), kcmpFile, uintptr(fd1), uintptr(fd2), 0)
	if errno != 0 {
		return false, errno
	}
	return r == 0, nil
}

// ThreadName is prctl(PR_GET_NAME): the calling thread's name (its comm,
// at most 15 bytes).
func ThreadName() (string, error) {
	var b [16]byte
	if err := unix.Prctl(unix.PR_GET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(b[:]), nil
}

// SetThreadName is prctl(PR_SET_NAME): the calling thread takes name as
// its comm (cut to 15 bytes by the kernel).
func SetThreadName(name string) error {
	b, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(b)), 0, 0, 0)
}
