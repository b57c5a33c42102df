package procfs

import (
	"fmt"
	"strconv"
)

// Dispositions reads which signals process pid catches and which it
// ignores, from the SigCgt and SigIgn lines of /proc/PID/status (bit N-1
// for signal N). A process that no longer exists yields an error wrapping
// ErrNotFound.
func (fs FS) Dispositions(pid int) (caught, ignored uint64, err error) {
	if pid <= 0 {
		return 0, 0, fmt.Errorf("status of pid %d: %w", pid, ErrNotFound)
	}
	var buf [4096]byte
	n, err := readSmall(fs.path(pid, "status"), buf[:])
	if err != nil {
		return 0, 0, err
	}
	caught, ignored, err = ParseDispositions(buf[:n])
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", fs.path(pid, "status"), err)
	}
	return caught, ignored, nil
}

// ParseDispositions extracts the SigCgt and SigIgn masks from the contents
// of /proc/PID/status.
func ParseDispositions(b []byte) (caught, ignored uint64, err error) {
	if caught, err = SignalMask(b, "SigCgt"); err != nil {
		return 0, 0, err
	}
	if ignored, err = SignalMask(b, "SigIgn"); err != nil {
		return 0, 0, err
	}
	return caught, ignored, nil
}

// SignalMask reads the signal mask (bit N-1 for signal N) on the line
// "KEY:" of /proc/PID/status contents: SigPnd, ShdPnd, SigBlk, SigIgn or
// SigCgt.
func SignalMask(b []byte, key string) (uint64, error) {
	v, ok := field(b, key+":")
	if !ok {
		return 0, fmt.Errorf("no %s line", key)
	}
	m, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: %w", key, truncate([]byte(v)), numError(err))
	}
	return m, nil
}
