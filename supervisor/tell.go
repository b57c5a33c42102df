package supervisor

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Writing a refusal's message to the caller's own standard error
// (package callerio).
//
// The message goes through the caller's descriptor 2 itself: a copy of it
// taken with pidfd_getfd shares the caller's open file description, so it
// reaches whatever descriptor 2 is (a terminal, a pipe, a socket a Node
// harness gave the child, a file the output was redirected to) with the
// caller's offset, so that a file's contents stay in order, and its access
// mode, so that a read-only descriptor gets nothing. Nothing is reopened by
// path with paddock's credentials (a root paddock would otherwise write into
// a file the agent's user could only read).
//
// The description is the caller's, blocking or not, and must stay as the
// caller set it, so it cannot be made non-blocking. Where the kernel can
// write without blocking for this one call (callerio.WriteNow) the message is
// written at once; otherwise the write runs on a goroutine of its own, and
// the teller waits for it at most tellWrite. A write still blocked then (a
// full pipe nobody reads, a stopped terminal) finishes whenever it can, and
// until it has, further messages to that caller are not written but
// counted, and said in the next one that is.

// tellWrite bounds how long the teller waits for one write.
const tellWrite = 50 * time.Millisecond

// maxStuckWrites bounds the writes left blocked at once; past it messages
// are counted instead of written.
const maxStuckWrites = 16

// terminal identifies a terminal device (its st_rdev); 0 is none.
type terminal uint64

// terminalOf is the terminal f is, or 0 when f is nil or not a terminal.
func terminalOf(f *os.File) terminal {
	if f == nil {
		return 0
	}
	return terminalFd(int(f.Fd()))
}

// terminalFd is the terminal descriptor fd is, or 0.
func terminalFd(fd int) terminal {
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return 0
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return 0
	}
	return terminal(st.Rdev)
}
