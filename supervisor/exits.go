package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// exitWatch tells a loop which of the pins it keeps between notifications
// (the pin cache's and sameNS's) belong to processes or threads that have
// exited, through one epoll instance they are all registered in: a pidfd
// polls readable once its process (a thread's pidfd: its thread) has
// exited, and the exit itself puts it on the instance's ready list, before
// the process can be reaped and its pid reused. One epoll_wait that finds
// the list empty vouches for every pin at once without touching any of
// them: a decision's cached pins, its caller's included, cost that one
// call together (cheaper than one pidfd_send_signal(0) of one pin;
// docs/perf.md). A pin leaves the instance when it is reported, or closed. One belongs to one loop; it is
// not safe for concurrent use.
type exitWatch struct {
	ep     int
	events [16]unix.EpollEvent
}

// newExitWatch makes an empty watch.
func newExitWatch() (*exitWatch, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &exitWatch{ep: ep}, nil
}

// watch registers pidfd under key (the cache's own name for the pin); false
// when it could not be, and the pin must then not be kept.
func (x *exitWatch) watch(pidfd int, key int32) bool {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pidfd), Pad: key}
	return unix.EpollCtl(x.ep, unix.EPOLL_CTL_ADD, pidfd, &ev) == nil
}

// ready returns watched pins whose process has exited, at most
// len(x.events) of them, each taken off the watch: the caller drops them
// (and asks again while the batch was full). An error leaves every pin
// suspect.
func (x *exitWatch) ready() ([]unix.EpollEvent, error) {
	n, err := unix.EpollWait(x.ep, x.events[:], 0)
	for errors.Is(err, unix.EINTR) {
		n, err = unix.EpollWait(x.ep, x.events[:], 0)
	}
	if err != nil {
		return nil, fmt.Errorf("epoll_wait: %w", err)
	}
	for _, ev := range x.events[:n] {
		_ = unix.EpollCtl(x.ep, unix.EPOLL_CTL_DEL, int(ev.Fd), nil)
	}
	return x.events[:n], nil
}

// close releases the instance.
func (x *exitWatch) close() {
	if x != nil {
		unix.Close(x.ep)
	}
}
