// Package signame names Linux signals and reads their names: the one table
// every part of paddock that shows or parses a signal uses (the decision
// messages, the journal, paddock kill), so that they never disagree.
//
// The classic signals come from golang.org/x/sys/unix, which holds the
// numbers of the architecture paddock is built for; real-time signals are
// named SIGRTMIN+N from 34 (the first one glibc leaves to programs), as
// kill -l and strace name them.
package signame

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	rtMin = 34 // SIGRTMIN as programs see it (glibc keeps 32 and 33)
	rtMax = 64 // SIGRTMAX
)

// Name returns the signal's name: "SIGTERM" for 15, "SIGRTMIN+3" for 37.
// ok=false: sig is no signal (0, negative, past SIGRTMAX, or a number the
// architecture leaves unused).
func Name(sig int) (name string, ok bool) {
	if sig <= 0 || sig > rtMax {
		return "", false
	}
	if sig >= rtMin {
		return "SIGRTMIN+" + strconv.Itoa(sig-rtMin), true
	}
	name = unix.SignalName(syscall.Signal(sig))
	return name, name != ""
}

// Number reads a signal the way kill(1) takes it: a number from 0 (the
// null signal, which only checks that the target exists) to 64, or a name
// with or without SIG, in any case ("TERM", "SIGTERM", "sigterm",
// "RTMIN+3", "SIGRTMAX").
func Number(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= rtMax
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n, ok := realtime(name, "SIGRTMIN", "+", rtMin, 1); ok {
		return n, true
	}
	if n, ok := realtime(name, "SIGRTMAX", "-", rtMax, -1); ok {
		return n, true
	}
	if n := unix.SignalNum(name); n != 0 {
		return int(n), true
	}
	return 0, false
}

// realtime reads SIGRTMIN, SIGRTMIN+N, SIGRTMAX and SIGRTMAX-N: the
// signal base+dir*N, when that is a real-time signal.
func realtime(name, prefix, sign string, base, dir int) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if rest == "" {
		return base, true
	}
	n, ok := strings.CutPrefix(rest, sign)
	if !ok || n == "" || n[0] < '0' || n[0] > '9' {
		return 0, false
	}
	v, err := strconv.Atoi(n)
	if err != nil || v > rtMax-rtMin {
		return 0, false
	}
	return base + dir*v, true
}
