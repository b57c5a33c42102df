package supervisor

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/handoff"
)

// The agent is forked from the launching thread (launchDirect) and, until
// its execve, holds a copy of every descriptor in that thread's table:
// close-on-exec closes them only at the exec. With the seccomp listener
// among them, a supervisor killed while the agent is between its fork and
// its exec left the agent waiting for ever on a listener it held itself:
// Go's child, finding its parent gone once it has set its parent-death
// signal, signals itself with kill(2), which the filter traps, and nothing
// answers (measured: killed with SIGKILL the moment the session's paddock
// link appears, one paddock in fourteen left its agent's process so, holding
// paddock's stdout). So the launching thread takes a descriptor table of
// its own before it makes the listener, and hands the listener to the
// process's table through a socket pair made before, closing its own copy:
// the agent is forked without it, and once the supervisor is gone the
// listener closes and the agent's trapped calls fail with ENOSYS, as
// everywhere else (docs/limits.md, "If the supervisor dies").

// onOwnThread runs f on a goroutine locked to an OS thread that is not the
// process's main thread, and never unlocked, so that the thread ends with
// f and whatever f did to it (a descriptor table, a mount namespace, a
// filter, a Landlock domain of its own) ends with it. The Go runtime never
// ends the main thread: it parks it, with all that, for the rest of the
// process; and /proc/self is the main thread's (its fd, its mounts), which
// paddock reads (procfs.FdPath goes through /proc/thread-self for that reason). A
// goroutine that finds itself on the main thread holds it while another
// takes f, which therefore runs elsewhere, then gives it back untouched.
func onOwnThread(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// listenerBridge carries the listener from the launching thread's own
// descriptor table to the process's. Where the thread cannot have a table
// of its own (unshare refused, as under Docker's default seccomp profile
// without CAP_SYS_ADMIN), the listener stays in the shared table, as it
// was before.
type listenerBridge struct {
	pair [2]int // the socket pair, in both tables; -1 when none could be made
	own  bool   // the launching thread has a table of its own (set on it)
	// released: the launching thread's table is closed (set on it).
	released bool
}

// newListenerBridge makes the socket pair, in the process's table.
func newListenerBridge() *listenerBridge {
	b := &listenerBridge{pair: [2]int{-1, -1}}
	if pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0); err == nil {
		b.pair = pair
	}
	return b
}

// detach gives the calling thread, locked, a descriptor table of its own
// (a copy of the process's), before it makes the listener.
func (b *listenerBridge) detach() {
	if b.pair[0] < 0 {
		return
	}
	b.own = unix.Unshare(unix.CLONE_FILES) == nil
}

// send hands the listener fd, made on the detached thread, over to the
// process's table and closes this thread's copy of it and of the pair. It
// returns the descriptor the session is to use: -1 once handed over (the
// session receives it), else fd itself (shared table).
func (b *listenerBridge) send(fd int) (int, error) {
	if !b.own {
		return fd, nil
	}
	err := handoff.Send(b.pair[1], handoff.Msg{Kind: handoff.Listener, Fd: fd})
	unix.Close(fd)
	unix.Close(b.pair[0])
	unix.Close(b.pair[1])
	if err != nil {
		return -1, fmt.Errorf("supervisor: hand the listener to the session: %w", err)
	}
	return -1, nil
}

// release closes the descriptors of the launching thread's own table,
// once the agent is forked (or the launch has failed): the thread needs
// none of them any more, but lives on until the agent exits (its end would
// kill the agent: PR_SET_PDEATHSIG), and its copies would keep open what
// the session closes meanwhile (the pty's slave, whose last close the
// relay waits for, and which once stayed open for ever, the thread being
// the main thread: see onOwnThread). It keeps the Go runtime's network
// poller (runtimeFile): the runtime wakes the poller from whichever thread
// it is on, this one included, and a wake-up that finds no descriptor
// ends the whole process ("netpollBreak write failed"). Called again, it
// does nothing.
func (b *listenerBridge) release() {
	if !b.own || b.released {
		return
	}
	b.released = true
	d, err := os.Open("/proc/thread-self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/thread-self/fd/" + n); err == nil && runtimeFile(target) {
			continue
		}
		unix.Close(fd)
	}
}

// runtimeFile reports whether a descriptor whose /proc link reads target
// may be the Go runtime's own: its network poller's epoll instance or the
// eventfd that wakes it. Neither holds a file the session could be waiting
// to see closed.
func runtimeFile(target string) bool {
	return target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]"
}

// receive returns the listener in the process's table: the one send handed
// over, or fd when it was not (see send), and closes the pair there.
func (b *listenerBridge) receive(fd int) (int, error) {
	defer b.close()
	if !b.own {
		return fd, nil
	}
	m, err := handoff.Recv(b.pair[0])
	if err != nil {
		return -1, fmt.Errorf("supervisor: receive the listener: %w", err)
	}
	return m.Fd, nil
}

// close closes the pair in the process's table.
func (b *listenerBridge) close() {
	for i, fd := range b.pair {
		if fd >= 0 {
			unix.Close(fd)
			b.pair[i] = -1
		}
	}
}
