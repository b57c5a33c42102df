package procfs

import "strconv"

// FdPath is a path that names what descriptor fd of the calling thread
// refers to, for opening, binding or connecting through the descriptor
// rather than by a name that may have changed.
//
// It goes through /proc/thread-self, never /proc/self: /proc/self/fd is
// the descriptor table of the process's main thread, and a thread can have
// a table of its own (paddock's launching thread unshares its table, and
// the Go runtime parks, rather than ends, a main thread whose locked
// goroutine returned, with whatever table it had). A goroutine that is not
// locked to its thread runs on a thread sharing the process's table, which
// is where paddock's descriptors are.
func FdPath(fd int) string { return "/proc/thread-self/fd/" + strconv.Itoa(fd) }
