// Package proctest tells a test whether a process it started survived what
// was aimed at it. kill(pid, 0) cannot tell, nor can a signal 0 through a
// pidfd: both succeed on a child that was killed and is not yet reaped, and
// a process sent a fatal signal runs on for a moment before it exits. The
// package exists so that the tests that check a process outside the
// agent's reach survived (the end-to-end suite's, the fleet server's, the
// tracer's) share one copy.
package proctest

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// pfExiting is the PF_EXITING bit of /proc/PID/stat's flags: the process
// has begun to exit.
const pfExiting = 0x4

// Alive reports whether pid is a live process that nothing has doomed: it
// exists, is not a zombie, has not begun to exit, and has no signal pending
// that would end it. A fatal signal shows as pending from the moment it was
// sent (the kernel marks every thread with SIGKILL at once) until the
// process exits, so a check made just after a kill that got through does
// not pass in that window. A stopped process is alive. pid must be the
// test's own process, unreaped (a reaped one's pid may name another); any
// error but the process being gone fails the test.
func Alive(tb testing.TB, pid int) bool {
	tb.Helper()
	st, err := procfs.Default().Stat(pid)
	if errors.Is(err, procfs.ErrNotFound) {
		return false
	}
	if err != nil {
		tb.Fatalf("liveness of pid %d: %v", pid, err)
	}
	if st.State == 'Z' || st.State == 'X' || st.Flags&pfExiting != 0 {
		return false
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return false
	}
	if err != nil {
		tb.Fatalf("liveness of pid %d: %v", pid, err)
	}
	ending, err := doomed(status)
	if err != nil {
		tb.Fatalf("liveness of pid %d: %v", pid, err)
	}
	return !ending
}

// doomed reports whether a /proc/PID/status text shows a signal pending
// (SigPnd, for the thread; ShdPnd, for the process) that the process
// neither catches nor ignores and whose default action ends it: every
// signal but SIGCHLD, SIGCONT, SIGURG and SIGWINCH (ignored by default) and
// SIGSTOP, SIGTSTP, SIGTTIN and SIGTTOU (which stop it).
func doomed(status []byte) (bool, error) {
	masks := map[string]uint64{}
	for _, key := range []string{"SigPnd", "ShdPnd", "SigIgn", "SigCgt"} {
		v, err := procfs.SignalMask(status, key)
		if err != nil {
			return false, err
		}
		masks[key] = v
	}
	var harmless uint64
	for _, sig := range []unix.Signal{unix.SIGCHLD, unix.SIGCONT, unix.SIGURG, unix.SIGWINCH, unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		harmless |= 1 << (sig - 1)
	}
	pending := masks["SigPnd"] | masks["ShdPnd"]
	return pending&^masks["SigIgn"]&^masks["SigCgt"]&^harmless != 0, nil
}
