//go:build !amd64 && !arm64

package tracer

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// skipSyscall is not written for this GOARCH; refusals then kill the caller
// (package filter has no tables for it either, so paddock does not start).
func skipSyscall(int, uint32, unix.Errno) error {
	return fmt.Errorf("no ptrace register layout for GOARCH=%s", runtime.GOARCH)
}
