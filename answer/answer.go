// Package answer holds what a front end sends back to the kernel for one
// trapped call, whichever way the call reached paddock (a seccomp
// notification, a ptrace stop, a container's listener in fleet mode): let
// the call run, fail it with an errno, or report that paddock carried it
// out itself. It is its own type so that no front end speaks another's.
package answer

import "golang.org/x/sys/unix"

// Answer is the reply to one trapped call.
type Answer struct {
	// Errno fails the call with that error; 0 lets it run (or, with Done,
	// reports success).
	Errno unix.Errno
	// Done says paddock carried the call out itself (a signal delivered
	// through its own pin, a connect or an open made on the caller's
	// behalf): the call returns Errno's result (or Val, or the new
	// descriptor) without running.
	Done bool
	// Val is the call's return value when Done without an error (the bytes
	// a sendto carried out on the caller's behalf sent).
	Val int64
	// Fd, when HasFd, is a descriptor of paddock's that the call returns:
	// the kernel installs a copy in the caller (with O_CLOEXEC when
	// Cloexec) as the call's result; the front end closes paddock's after
	// answering.
	Fd      int
	HasFd   bool
	Cloexec bool
}

// Continue lets the call run as the caller made it.
func Continue() Answer { return Answer{} }

// Refuse fails the call with errno, EPERM when errno is 0.
func Refuse(errno unix.Errno) Answer {
	if errno == 0 {
		errno = unix.EPERM
	}
	return Answer{Errno: errno}
}

// Completed reports a call paddock carried out itself, with errno as its
// result (0: success).
func Completed(errno unix.Errno) Answer { return Answer{Errno: errno, Done: true} }

// Value reports a call paddock carried out itself that returns v.
func Value(v int64) Answer { return Answer{Done: true, Val: v} }

// Descriptor reports an open paddock carried out itself: the call returns
// a copy of fd, installed in the caller (close-on-exec when cloexec).
func Descriptor(fd int, cloexec bool) Answer {
	return Answer{Done: true, Fd: fd, HasFd: true, Cloexec: cloexec}
}
