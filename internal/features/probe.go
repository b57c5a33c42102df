package features

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/llaudit"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/sys"
)

// Probe finds out what this kernel and this process give paddock. self is
// the binary to execute for the listener probe ("" = /proc/self/exe); it must
// serve ProbeChild (see package reexec). Probe never fails as a whole: what
// it cannot find out is an Unknown item saying why, and a failed listener
// probe is reported as failed, never as success.
func Probe(self string) Report {
	// The seccomp state is per thread, and the probe child inherits the
	// filters of the thread that forks it: read one and fork from the same.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return build(gather(self, true))
}

// errNotProbed is the listener probe's Error in a ProbeLocal report.
const errNotProbed = "not probed: ProbeLocal runs no probe child"

// ProbeLocal is Probe without the listener probe child, for callers that
// cannot re-execute their binary (tests whose TestMain does not serve
// ProbeChild): the items that need the child (IDListener,
// IDWaitKillableRecv, IDSyncWakeUp, IDUnderListener) are Unknown, and the
// backend is a guess from the rest.
func ProbeLocal() Report {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return build(gather("", false))
}

// NeedsChild reports whether item id is only known from the listener
// probe child (see ProbeLocal).
func NeedsChild(id string) bool {
	switch id {
	case IDListener, IDWaitKillableRecv, IDSyncWakeUp, IDUnderListener, IDWallSeen:
		return true
	}
	return false
}

// facts is everything Probe reads; build turns it into a Report.
type facts struct {
	arch             string
	release, machine string
	unameErr         error
	actions          []string
	actionsErr       error
	probe            ListenerProbe
	pidfdOpen        error
	pidfdSendSignal  error // errNotTried when pidfd_open failed
	pidfdGetfd       error // errNotTried when pidfd_open failed
	subreaper        error
	landlockABI      int
	landlockErr      error
	wallSeen         error // llaudit.Probe's answer; errWallNotProbed without the probe child
	cgroup2Err       error // nil: cgroup.controllers exists
	ia32             ia32
	ptraceScope      int // Yama's ptrace_scope, -1 without Yama
	ptraceScopeErr   error
	capSysPtrace     bool
	seccompMode      int
	seccompFilters   int
	seccompErr       error
	bpfLSM           bpfLSM // tried only with the probe child (doctor)
}

// errWallNotProbed is the wall_seen item's answer in a ProbeLocal report.
var errWallNotProbed = errors.New("not probed: ProbeLocal makes no Landlock denial to look for")

// wallProbeWait bounds the wait for the probe's own denial's record, which
// comes within milliseconds where it comes at all.
const wallProbeWait = time.Second

// errNotTried marks a call that needed something that failed before it.
var errNotTried = errors.New("not tried")

const (
	actionsPath  = "/proc/sys/kernel/seccomp/actions_avail"
	yamaPath     = "/proc/sys/kernel/yama/ptrace_scope"
	cgroup2Path  = "/sys/fs/cgroup/cgroup.controllers"
	configGzPath = "/proc/config.gz"
)

// gather reads and tries everything, on the calling (locked) thread; the
// listener probe child only when child is set.
func gather(self string, child bool) facts {
	f := facts{arch: runtime.GOARCH, ptraceScope: -1}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		f.unameErr = fmt.Errorf("uname: %w", err)
	} else {
		f.release, f.machine = unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Machine[:])
	}
	if b, err := os.ReadFile(actionsPath); err != nil {
		f.actionsErr = err
	} else {
		f.actions = strings.Fields(string(b))
	}
	tid := unix.Gettid()
	f.seccompMode, f.seccompFilters, f.seccompErr = procfs.FS{Root: "/proc/self/task"}.Seccomp(tid)
	f.probe = ListenerProbe{Error: errNotProbed}
	f.wallSeen = errWallNotProbed
	if child {
		f.probe = runProbe(self)
		f.bpfLSM = gatherBPFLSM()
		f.wallSeen = llaudit.Probe(wallProbeWait)
	}
	f.pidfdOpen, f.pidfdSendSignal, f.pidfdGetfd = tryPidfds()
	if _, err := sys.ChildSubreaper(); err != nil {
		f.subreaper = fmt.Errorf("prctl(PR_GET_CHILD_SUBREAPER): %w", err)
	}
	if abi, err := sys.LandlockABI(); err != nil {
		f.landlockErr = fmt.Errorf("landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): %w", err)
	} else {
		f.landlockABI = abi
	}
	if _, err := os.Stat(cgroup2Path); err != nil {
		f.cgroup2Err = err
	}
	if f.arch == "amd64" {
		f.ia32 = readIA32(f.release)
	}
	f.ptraceScope, f.ptraceScopeErr = readPtraceScope(yamaPath)
	f.capSysPtrace = hasCap(unix.CAP_SYS_PTRACE)
	return f
}

// tryPidfds calls pidfd_open on this process, pidfd_send_signal(0) to it
// through that pidfd, and pidfd_getfd of the pidfd itself (a descriptor that
// is certainly open, unlike 0, which a daemon may have closed).
func tryPidfds() (open, send, getfd error) {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open(self): %w", err), errNotTried, errNotTried
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		send = fmt.Errorf("pidfd_send_signal(self, 0): %w", err)
	}
	dup, err := unix.PidfdGetfd(fd, fd, 0)
	if err != nil {
		getfd = fmt.Errorf("pidfd_getfd(self, %d): %w", fd, err)
	} else {
		unix.Close(dup)
	}
	return nil, send, getfd
}

// readPtraceScope reads Yama's ptrace_scope: -1 and no error without Yama.
func readPtraceScope(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1, fmt.Errorf("%s: %q is not a number", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// hasCap reports whether this process has capability c in its effective set
// (the CapEff line of /proc/self/status); false when it cannot tell.
func hasCap(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	mask, ok := capEff(b)
	return ok && mask&(1<<uint(c)) != 0
}

// capEff parses the CapEff line of a /proc/PID/status.
func capEff(status []byte) (uint64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// errnoName returns the kernel's name of the errno err wraps ("EBUSY"), or
// "" when it wraps none.
func errnoName(err error) string {
	var e unix.Errno
	if !errors.As(err, &e) {
		return ""
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// errValue is what an Item shows of a failed call: the errno's name, or the
// whole error when it wraps none.
func errValue(err error) string {
	if n := errnoName(err); n != "" {
		return n
	}
	return err.Error()
}
