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
	for _, l := range []struct {
		key  string
		mask *uint64
	}{{"SigCgt:", &caught}, {"SigIgn:", &ignored}} {
		v, ok := field(b, l.key)
		if !ok {
			return 0, 0, fmt.Errorf("no %s line", l.key)
		}
		if *l.mask, err = strconv.ParseUint(v, 16, 64); err != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", l.key, truncate([]byte(v)), numError(err))
		}
	}
	return caught, ignored, nil
}
