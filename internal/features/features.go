// Package features probes what this kernel and this process give paddock:
// the seccomp actions, user notification and its flags, whether a listener
// can be installed here at all, pidfds, the child subreaper, Landlock,
// cgroup v2, IA32 emulation, ptrace, and the seccomp state of this process;
// and from those, which backend `paddock run --backend auto` picks and why.
// `paddock doctor` prints its Report; docs/doctor.md explains each item.
//
// Whether a listener can be installed is only known by installing one, and a
// seccomp filter cannot be removed: a throwaway child (this binary executed
// again with ProbeArg, see ProbeChild) installs it and reports back.
// Everything else is read from /proc and /sys or tried with a harmless call
// (signal 0 to itself, a descriptor it already holds).
package features

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/procfs"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/seccomp"
	"github.com/paddock-dev/paddock/internal/sys"
)

// ProbeArg is argv[1] of the re-executed binary that runs the listener
// probe (see ProbeChild).
const ProbeArg = "__paddock_probe"

// envProbeChild marks the probe child's environment. A binary that does not
// serve ProbeChild runs its ordinary main in the child instead; if that
// main probes again, Probe sees the mark and stops there instead of
// starting children without end (a test binary would run its tests).
const envProbeChild = "PADDOCK_PROBE_CHILD"

// probeTimeout bounds the probe child: it does three syscalls and prints.
const probeTimeout = 5 * time.Second

// Status says what an Item found.
type Status string

// The statuses of an Item.
const (
	OK            Status = "ok"      // present, or nothing in the way
	Missing       Status = "missing" // absent or in the way; Item.Note says what it costs
	Unknown       Status = "unknown" // could not be found out; Item.Note says why
	NotApplicable Status = "n/a"     // does not apply to this architecture
)

// The IDs of the items of a Report, in the order Probe lists them.
const (
	IDKernel           = "kernel"             // uname release and machine
	IDSeccompActions   = "seccomp_actions"    // /proc/sys/kernel/seccomp/actions_avail
	IDUserNotif        = "user_notif"         // SECCOMP_RET_USER_NOTIF
	IDRetTrace         = "ret_trace"          // SECCOMP_RET_TRACE
	IDNotifContinue    = "notif_continue"     // SECCOMP_USER_NOTIF_FLAG_CONTINUE, by kernel version
	IDListener         = "listener"           // a listener could be installed (probe child)
	IDWaitKillableRecv = "wait_killable_recv" // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (probe child)
	IDSyncWakeUp       = "sync_wake_up"       // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (probe child)
	IDPidfdOpen        = "pidfd_open"         // pidfd_open(self)
	IDPidfdSendSignal  = "pidfd_send_signal"  // pidfd_send_signal(self, 0)
	IDPidfdGetfd       = "pidfd_getfd"        // pidfd_getfd(self, its own pidfd)
	IDChildSubreaper   = "child_subreaper"    // prctl(PR_GET_CHILD_SUBREAPER)
	IDLandlock         = "landlock"           // landlock_create_ruleset(NULL, 0, VERSION)
	IDCgroup2          = "cgroup2"            // /sys/fs/cgroup/cgroup.controllers
	IDIA32Emulation    = "ia32_emulation"     // CONFIG_IA32_EMULATION (amd64 only)
	IDPtrace           = "ptrace"             // Yama ptrace_scope
	IDUnderSeccomp     = "under_seccomp"      // Seccomp, Seccomp_filters of this thread
	IDUnderListener    = "under_listener"     // the probe's EBUSY
	// IDBPFLSM (bpflsm.go) comes last.
)

// Item is one probed feature.
type Item struct {
	ID     string `json:"id"`     // stable key, one of the ID constants
	Name   string `json:"name"`   // what it is, for people
	Status Status `json:"status"` // ok, missing, unknown or n/a
	Value  string `json:"value"`  // what was found
	// Note says what is missing and what that costs the user, or why the
	// item is unknown; on an ok item, a caveat (often empty).
	Note string `json:"note,omitempty"`
}

// Backend is the backend `paddock run --backend auto` would pick.
type Backend struct {
	Name   string `json:"name"`   // "seccomp", "ptrace" or "none"
	Reason string `json:"reason"` // why, in one line
}

// ListenerProbe is what the probe child found (see ProbeChild). Errno
// fields hold the kernel's names ("EBUSY"); a nil flag was not tried.
type ListenerProbe struct {
	// Error is set when the probe could not be run or did not answer; then
	// nothing else here is known.
	Error                 string `json:"error,omitempty"`
	Listener              bool   `json:"listener"`
	ListenerErrno         string `json:"listener_errno,omitempty"`
	ListenerError         string `json:"listener_error,omitempty"`
	WaitKillableRecv      *bool  `json:"wait_killable_recv"`
	WaitKillableRecvErrno string `json:"wait_killable_recv_errno,omitempty"`
	SyncWakeUp            *bool  `json:"sync_wake_up"`
	SyncWakeUpErrno       string `json:"sync_wake_up_errno,omitempty"`
}

// Report is what Probe found: the kernel, one Item per feature, the raw
// listener probe, and the backend auto would pick.
type Report struct {
	Kernel  string        `json:"kernel"`  // uname release ("" if uname failed)
	Machine string        `json:"machine"` // uname machine
	Arch    string        `json:"arch"`    // GOARCH of this binary
	Items   []Item        `json:"items"`
	Probe   ListenerProbe `json:"listener_probe"`
	Backend Backend       `json:"backend"`
}

// Item returns the item with id, and whether the report has one.
func (r Report) Item(id string) (Item, bool) {
	for _, it := range r.Items {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

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
	case IDListener, IDWaitKillableRecv, IDSyncWakeUp, IDUnderListener:
		return true
	}
	return false
}

// Version is a Linux kernel version, major.minor.
type Version struct{ Major, Minor int }

// String is "major.minor".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is min or newer.
func (v Version) AtLeast(min Version) bool { return atLeast(v.Major, v.Minor, min.Major, min.Minor) }

// KernelVersion is the running kernel's version, from uname.
func KernelVersion() (Version, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Version{}, fmt.Errorf("uname: %w", err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	major, minor, ok := kernelVersion(release)
	if !ok {
		return Version{}, fmt.Errorf("uname release %q has no version number", release)
	}
	return Version{major, minor}, nil
}

// Since is the Linux version from which every kernel that paddock supports
// (one with CONFIG_SECCOMP_FILTER) has feature id, and false for the
// features that also depend on configuration or on this process's
// environment (a listener above, Yama, cgroup mounts, IA32 emulation).
// Tests use it to fail rather than skip where a feature must be there.
func Since(id string) (Version, bool) {
	switch id {
	case IDSeccompActions, IDRetTrace:
		return Version{4, 14}, true // actions_avail
	case IDUserNotif:
		return Version{5, 0}, true
	case IDPidfdSendSignal:
		return Version{5, 1}, true
	case IDPidfdOpen:
		return Version{5, 3}, true
	case IDNotifContinue:
		return Version{continueMajor, continueMinor}, true
	case IDPidfdGetfd:
		return Version{5, 6}, true
	case IDLandlock:
		return Version{5, 13}, true // and CONFIG_SECURITY_LANDLOCK, lsm=landlock
	case IDWaitKillableRecv:
		return Version{5, 19}, true
	case IDSyncWakeUp:
		return Version{6, 6}, true
	case IDChildSubreaper:
		return Version{3, 4}, true
	}
	return Version{}, false
}

// Unavailable is why a Report lacks a feature (see Report.Need).
type Unavailable struct {
	Item Item
	// Kernel is the running kernel's version; Since the version from
	// which the feature is always there (zero when it has none).
	Kernel, Since Version
	// MustHave is set when the kernel is at least Since, the item is
	// Missing, and nothing in the environment (EPERM, EACCES: a filter or
	// LSM above) explains it: the kernel should have the feature, so
	// something is broken.
	MustHave bool
}

// Error says what is missing and why.
func (u *Unavailable) Error() string {
	msg := fmt.Sprintf("%s is %s (%s)", u.Item.Name, u.Item.Status, u.Item.Value)
	if u.Item.Note != "" {
		msg += ": " + u.Item.Note
	}
	if u.MustHave {
		msg += fmt.Sprintf("; but Linux %v has it since %v", u.Kernel, u.Since)
	}
	return msg
}

// Need returns nil when the report has feature id, else an *Unavailable
// saying why not and whether the kernel is new enough that it must be
// there. An id the report does not list is an error too.
func (r Report) Need(id string) error {
	it, ok := r.Item(id)
	if !ok {
		return fmt.Errorf("features: no item %q", id)
	}
	if it.Status == OK {
		return nil
	}
	u := &Unavailable{Item: it}
	major, minor, verOK := kernelVersion(r.Kernel)
	u.Kernel = Version{major, minor}
	since, has := Since(id)
	if has {
		u.Since = since
	}
	refused := strings.Contains(it.Value, "EPERM") || strings.Contains(it.Value, "EACCES")
	u.MustHave = has && verOK && it.Status == Missing && !refused && u.Kernel.AtLeast(since)
	return u
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
	if child {
		f.probe = runProbe(self)
		f.bpfLSM = gatherBPFLSM()
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

// ia32 is what was found out about IA32 emulation.
type ia32 struct {
	state string // "on", "off", or "" when unknown
	from  string // where it was read, or why it is unknown
}

// readIA32 reads CONFIG_IA32_EMULATION from /proc/config.gz or
// /boot/config-RELEASE, and the ia32_emulation= boot parameter (Linux 6.7+)
// that overrides CONFIG_IA32_EMULATION_DEFAULT_DISABLED.
func readIA32(release string) ia32 {
	var cfg config
	var from string
	var errs []string
	paths := []string{configGzPath}
	if release != "" {
		paths = append(paths, "/boot/config-"+release)
	}
	for _, p := range paths {
		c, err := readConfig(p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		cfg, from = c, p
		break
	}
	if from == "" {
		return ia32{from: strings.Join(errs, "; ")}
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	return ia32State(cfg, from, string(cmdline))
}

// config is what parseConfig reads from a kernel config.
type config struct {
	ia32            bool // CONFIG_IA32_EMULATION=y
	defaultDisabled bool // CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y
}

// readConfig reads a kernel config, gzip-compressed when path ends in .gz.
func readConfig(path string) (config, error) {
	f, err := os.Open(path)
	if err != nil {
		return config{}, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return config{}, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	cfg, err := parseConfig(r)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig reads the lines of a kernel .config that matter here.
func parseConfig(r io.Reader) (config, error) {
	var c config
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case "CONFIG_IA32_EMULATION=y":
			c.ia32 = true
		case "CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y":
			c.defaultDisabled = true
		}
	}
	if err := sc.Err(); err != nil {
		return config{}, fmt.Errorf("read kernel config: %w", err)
	}
	return c, nil
}

// ia32State combines the config read from `from` with the boot command
// line: ia32_emulation=BOOL overrides the built-in default.
func ia32State(c config, from, cmdline string) ia32 {
	if !c.ia32 {
		return ia32{state: "off", from: "CONFIG_IA32_EMULATION not set in " + from}
	}
	on, why := !c.defaultDisabled, "CONFIG_IA32_EMULATION=y in "+from
	if c.defaultDisabled {
		why += ", CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y"
	}
	for _, w := range strings.Fields(cmdline) {
		if w == "--" {
			break // the rest is init's
		}
		if v, ok := strings.CutPrefix(w, "ia32_emulation="); ok {
			if b, ok := kernelBool(v); ok {
				on, why = b, why+", boot parameter "+w
			}
		}
	}
	if on {
		return ia32{state: "on", from: why}
	}
	return ia32{state: "off", from: why}
}

// kernelBool parses a boolean the way the kernel's kstrtobool does.
func kernelBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "y", "yes", "on", "true":
		return true, true
	case "0", "n", "no", "off", "false":
		return false, true
	}
	return false, false
}

// kernelVersion parses the major and minor number of a uname release
// ("6.18.44-fc-v1098" is 6, 18).
func kernelVersion(release string) (major, minor int, ok bool) {
	a, rest, found := strings.Cut(release, ".")
	if !found {
		return 0, 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(rest)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// atLeast reports whether version major.minor is at least wantMajor.wantMinor.
func atLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || major == wantMajor && minor >= wantMinor
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

// ProbeChild is the listener probe as a job of package reexec. Every binary
// whose path is given to Probe must serve it: reexec.Run(features.ProbeChild(),
// ...) first thing in main (or TestMain).
//
// The child sets no_new_privs, installs on its locked thread a
// one-instruction filter that allows everything with
// SECCOMP_FILTER_FLAG_NEW_LISTENER|SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
// (without WAIT_KILLABLE_RECV if the kernel answers EINVAL), asks for
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener, prints a
// ListenerProbe as one JSON object on stdout and exits 0. The filter traps
// nothing, so nothing in the child ever waits on the listener.
func ProbeChild() reexec.Child {
	return reexec.Child{Name: ProbeArg, Main: probeMain}
}

// probeMain is the probe child's main.
func probeMain([]string) int {
	if err := json.NewEncoder(os.Stdout).Encode(probeListener()); err != nil {
		fmt.Fprintf(os.Stderr, "paddock: listener probe: write the result: %v\n", err)
		return 1
	}
	return 0
}

// probeListener installs a listener on the calling thread, which it locks
// for good: the filter cannot be removed, so the thread must not go back to
// the Go scheduler's pool. Only the probe child may call it.
func probeListener() ListenerProbe {
	runtime.LockOSThread()
	var p ListenerProbe
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		p.ListenerErrno, p.ListenerError = errnoName(err), fmt.Sprintf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
		return p
	}
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	// Before 5.19 WAIT_KILLABLE_RECV is unknown; without it the kernel may
	// still take the listener (or reject it too: no user notification).
	fd, unkillable, err := filter.InstallListener(prog, filter.Install)
	killable, killableErrno := unkillable == nil, ""
	if unkillable != nil {
		killableErrno = errnoName(unkillable)
	}
	if err != nil {
		p.ListenerErrno, p.ListenerError = errnoName(err), err.Error()
		return p
	}
	defer unix.Close(fd)
	p.Listener = true
	p.WaitKillableRecv, p.WaitKillableRecvErrno = &killable, killableErrno
	sync := true
	if err := seccomp.SetSyncWakeUp(fd); err != nil {
		sync, p.SyncWakeUpErrno = false, errValue(err)
	}
	p.SyncWakeUp = &sync
	return p
}

// runProbe executes self with ProbeArg from the calling thread and reads
// its answer. Every way it can fail is an Error, never a success.
func runProbe(self string) ListenerProbe {
	if os.Getenv(envProbeChild) != "" {
		return ListenerProbe{Error: fmt.Sprintf("this process is itself a probe child that did not run the probe (%s=%s is set): its binary does not serve features.ProbeChild (reexec.Run first thing in main)", envProbeChild, os.Getenv(envProbeChild))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := reexec.CommandContext(ctx, ProbeArg)
	if self != "" {
		cmd.Path, cmd.Args[0] = self, self
	}
	path := cmd.Path
	cmd.Env = append(os.Environ(), envProbeChild+"=1")
	var stdout, stderr capped
	stdout.max, stderr.max = 64<<10, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that a child gone wrong is killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s did not answer within %v and was killed", path, probeTimeout)}
	case err != nil:
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s: %v%s", path, ProbeArg, err, tail(stderr.b.String()))}
	}
	var p ListenerProbe
	dec := json.NewDecoder(bytes.NewReader(stdout.b.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s printed no result (%v); does the binary serve features.ProbeChild (reexec.Run first thing in main)?", path, ProbeArg, err)}
	}
	if p.Error != "" || !p.Listener && p.ListenerErrno == "" && p.ListenerError == "" {
		return ListenerProbe{Error: fmt.Sprintf("the probe child %s %s printed an incomplete result: %s", path, ProbeArg, strings.TrimSpace(stdout.b.String()))}
	}
	return p
}

// tail quotes the last line of a child's stderr for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return " (stderr: " + s + ")"
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	b   bytes.Buffer
	max int
}

// Write implements io.Writer; it never fails, so the child never blocks.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Kernel versions that brought what paddock uses.
const (
	minMajor, minMinor           = 5, 9 // README's requirement: pidfds, CONTINUE, Seccomp_filters
	continueMajor, continueMinor = 5, 5 // SECCOMP_USER_NOTIF_FLAG_CONTINUE

	continueLinux  = "Linux 5.5+"  // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	syncWakeLinux  = "Linux 6.6+"  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
	killableLinux  = "Linux 5.19+" // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	userNotifLinux = "Linux 5.0+"  // SECCOMP_RET_USER_NOTIF
)

// build turns facts into a Report: one Item each, and the backend.
func build(f facts) Report {
	r := Report{Kernel: f.release, Machine: f.machine, Arch: f.arch, Probe: f.probe}
	major, minor, verOK := kernelVersion(f.release)
	add := func(id, name string, st Status, value, note string) {
		r.Items = append(r.Items, Item{ID: id, Name: name, Status: st, Value: value, Note: note})
	}

	switch {
	case f.unameErr != nil:
		add(IDKernel, "kernel", Unknown, "unknown", f.unameErr.Error())
	case !verOK:
		add(IDKernel, "kernel", Unknown, f.release+" ("+f.machine+")", "cannot read a version number from the release; version-based items are unknown")
	case !atLeast(major, minor, minMajor, minMinor):
		add(IDKernel, "kernel", Missing, f.release+" ("+f.machine+")", fmt.Sprintf("paddock needs Linux %d.%d+ (README, Requirements): expect the items below to be missing, and paddock run to refuse to start or enforce less", minMajor, minMinor))
	default:
		add(IDKernel, "kernel", OK, f.release+" ("+f.machine+")", "")
	}

	has := func(action string) bool {
		for _, a := range f.actions {
			if a == action {
				return true
			}
		}
		return false
	}
	actionsKnown := f.actionsErr == nil
	switch {
	case errors.Is(f.actionsErr, os.ErrNotExist):
		add(IDSeccompActions, "seccomp actions", Missing, "no "+actionsPath,
			"this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER) or is older than 4.14: paddock cannot enforce anything here")
	case f.actionsErr != nil:
		add(IDSeccompActions, "seccomp actions", Unknown, "unreadable", f.actionsErr.Error())
	default:
		add(IDSeccompActions, "seccomp actions", OK, strings.Join(f.actions, " "), "")
	}

	switch {
	case !actionsKnown:
		add(IDUserNotif, "user notification", Unknown, "unknown", "cannot tell without "+actionsPath)
	case has("user_notif"):
		add(IDUserNotif, "user notification", OK, "user_notif", "")
	default:
		add(IDUserNotif, "user notification", Missing, "no user_notif",
			"no SECCOMP_RET_USER_NOTIF ("+userNotifLinux+"): the seccomp backend (the default) cannot run; auto falls back to ptrace, which stops the agent at each trapped syscall and traces every process it starts")
	}
	switch {
	case !actionsKnown:
		add(IDRetTrace, "SECCOMP_RET_TRACE", Unknown, "unknown", "cannot tell without "+actionsPath)
	case has("trace"):
		add(IDRetTrace, "SECCOMP_RET_TRACE", OK, "trace", "")
	default:
		add(IDRetTrace, "SECCOMP_RET_TRACE", Missing, "no trace",
			"the ptrace backend cannot run: where no seccomp listener can be installed, paddock cannot enforce")
	}

	switch {
	case !verOK:
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", Unknown, "unknown", "decided by kernel version ("+continueLinux+"), which could not be read")
	case atLeast(major, minor, continueMajor, continueMinor):
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", OK, fmt.Sprintf("yes (kernel %d.%d is %d.%d+; by version, not probed)", major, minor, continueMajor, continueMinor), "")
	default:
		add(IDNotifContinue, "NOTIF_FLAG_CONTINUE", Missing, fmt.Sprintf("no (kernel %d.%d is older than %d.%d; by version, not probed)", major, minor, continueMajor, continueMinor),
			"no SECCOMP_USER_NOTIF_FLAG_CONTINUE ("+continueLinux+"): the seccomp backend cannot let an allowed call run, so it cannot be used here")
	}

	p := f.probe
	switch {
	case p.Error != "":
		add(IDListener, "listener install", Unknown, "probe failed", "the listener probe failed, so whether a listener can be installed here is not known: "+p.Error)
	case p.Listener:
		add(IDListener, "listener install", OK, "yes (a throwaway child installed one)", "")
	default:
		add(IDListener, "listener install", Missing, listenerValue(p), listenerWhy(p)+": the seccomp backend cannot run here")
	}
	notTried := func(what string) (string, string) {
		if p.Error != "" {
			return "unknown", "the listener probe failed, so " + what + " was not tried"
		}
		return "not tried", "no listener could be installed, so " + what + " was not tried"
	}
	// flagItem is one listener flag the probe child tried (nil: not tried).
	flagItem := func(id, name string, ok *bool, errno, cost string) {
		switch {
		case ok == nil:
			v, n := notTried("the flag")
			add(id, name, Unknown, v, n)
		case *ok:
			add(id, name, OK, "yes", "")
		default:
			add(id, name, Missing, orNo(errno), cost)
		}
	}
	flagItem(IDWaitKillableRecv, "WAIT_KILLABLE_RECV", p.WaitKillableRecv, p.WaitKillableRecvErrno,
		"no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV ("+killableLinux+"): a signal to a process waiting for a decision (a Go agent's runtime preempts itself with SIGURG every few ms) interrupts and restarts the trapped syscall, and each restart is one more decision")
	flagItem(IDSyncWakeUp, "SYNC_WAKE_UP", p.SyncWakeUp, p.SyncWakeUpErrno,
		"no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP ("+syncWakeLinux+"): each decision costs an extra scheduler wake-up, ~30 us (a hot kill: 39.6 us instead of 5.4 us)")

	callItem := func(id string, err error, linux, cost string) {
		switch {
		case errors.Is(err, errNotTried):
			add(id, id, Unknown, "not tried", "needs a pidfd, and pidfd_open failed")
		case err == nil:
			add(id, id, OK, "yes", "")
		default:
			note := "no " + id + " (" + linux + "): " + cost
			if !errors.Is(err, unix.ENOSYS) {
				note = err.Error() + ": the kernel has it but refused (a seccomp filter or LSM above this process?); " + cost
			}
			add(id, id, Missing, errValue(err), note)
		}
	}
	callItem(IDPidfdOpen, f.pidfdOpen, "Linux 5.3+", "paddock run cannot start: it pins the agent and each target with a pidfd against PID reuse")
	callItem(IDPidfdSendSignal, f.pidfdSendSignal, "Linux 5.1+", "paddock forwards signals, runs paddock kill and re-checks pinned targets through pidfds; those fail")
	callItem(IDPidfdGetfd, f.pidfdGetfd, "Linux 5.6+", "nothing lost: paddock does not call it (the listener travels by SCM_RIGHTS)")

	if f.subreaper != nil {
		add(IDChildSubreaper, "child subreaper", Missing, errValue(f.subreaper),
			f.subreaper.Error()+": paddock run cannot start: the supervisor becomes a child subreaper so that daemons the agent double-forks stay in its ownership tree")
	} else {
		add(IDChildSubreaper, "child subreaper", OK, "yes", "")
	}

	const notUsed = "the agent runs without the kernel's wall behind the supervisor (a Landlock domain that keeps ptrace-class access, /proc/PID/mem included, and signals inside the agent's processes); the seccomp traps hold alone without "
	switch {
	case f.landlockErr == nil && f.landlockABI < 6:
		add(IDLandlock, "Landlock", Missing, fmt.Sprintf("ABI %d", f.landlockABI),
			"paddock's wall needs Landlock ABI 6 (Linux 6.12+: scopes, so that the agent's domain restricts no file access and mount(2) keeps working); "+notUsed+"Landlock")
	case f.landlockErr == nil:
		add(IDLandlock, "Landlock", OK, fmt.Sprintf("ABI %d", f.landlockABI),
			"paddock run starts the agent in a Landlock domain of its own: the kernel refuses it ptrace-class access (/proc/PID/mem, process_vm_*, ptrace, pidfd_getfd) and signals to anything it did not start, adopted processes getting theirs from the supervisor (--keep-caps: not); --strict-wall can also refuse it writes to /proc/PID and cgroup files")
	case errors.Is(f.landlockErr, unix.EOPNOTSUPP):
		add(IDLandlock, "Landlock", Missing, "EOPNOTSUPP", "Landlock is built in but not enabled (add landlock to the lsm= boot parameter); "+notUsed+"Landlock")
	case errors.Is(f.landlockErr, unix.ENOSYS):
		add(IDLandlock, "Landlock", Missing, "ENOSYS", "no Landlock (Linux 5.13+, CONFIG_SECURITY_LANDLOCK); "+notUsed+"Landlock")
	default:
		add(IDLandlock, "Landlock", Missing, errValue(f.landlockErr), f.landlockErr.Error()+"; "+notUsed+"Landlock")
	}

	switch {
	case f.cgroup2Err == nil:
		add(IDCgroup2, "cgroup v2", OK, "yes ("+cgroup2Path+")", "")
	case errors.Is(f.cgroup2Err, os.ErrNotExist):
		add(IDCgroup2, "cgroup v2", Missing, "no "+cgroup2Path, "/sys/fs/cgroup is not a cgroup v2 hierarchy (v1, hybrid, or not mounted); "+notUsed+"cgroups yet")
	default:
		add(IDCgroup2, "cgroup v2", Unknown, "unknown", f.cgroup2Err.Error())
	}

	switch {
	case f.arch != "amd64":
		add(IDIA32Emulation, "IA32 emulation", NotApplicable, "not applicable on "+f.arch, "an amd64 kernel option")
	case f.ia32.state == "on":
		add(IDIA32Emulation, "IA32 emulation", OK, "on ("+f.ia32.from+")", "i386 int 0x80 syscalls reach this kernel; paddock's filter traps that ABI too")
	case f.ia32.state == "off":
		add(IDIA32Emulation, "IA32 emulation", OK, "off ("+f.ia32.from+")", "")
	default:
		add(IDIA32Emulation, "IA32 emulation", Unknown, "unknown", "no readable kernel config ("+f.ia32.from+"); nothing depends on it: paddock's filter traps the i386 ABI either way")
	}

	ptraceOK, ptraceWhy := ptraceUsable(f)
	switch {
	case f.ptraceScopeErr != nil:
		add(IDPtrace, "ptrace", Unknown, "unknown", f.ptraceScopeErr.Error())
	case ptraceOK && f.ptraceScope < 0:
		add(IDPtrace, "ptrace", OK, "no Yama (ptrace_scope absent)", "")
	case ptraceOK:
		add(IDPtrace, "ptrace", OK, fmt.Sprintf("Yama ptrace_scope %d", f.ptraceScope), ptraceWhy)
	default:
		add(IDPtrace, "ptrace", Missing, fmt.Sprintf("Yama ptrace_scope %d", f.ptraceScope), ptraceWhy+": the ptrace backend cannot run")
	}

	switch {
	case f.seccompErr != nil:
		add(IDUnderSeccomp, "seccomp filters above", Unknown, "unknown", f.seccompErr.Error())
	case f.seccompMode == 0:
		add(IDUnderSeccomp, "seccomp filters above", OK, "none", "")
	case f.seccompMode == 1:
		add(IDUnderSeccomp, "seccomp filters above", Missing, "strict mode (Seccomp: 1)", "this thread is in seccomp strict mode: nothing can be installed")
	default:
		add(IDUnderSeccomp, "seccomp filters above", OK, fmt.Sprintf("%d (Seccomp: %d)", f.seccompFilters, f.seccompMode),
			"what those filters refuse is refused before paddock is asked; paddock's filter stacks on them and can only make things stricter")
	}

	switch {
	case p.Error != "":
		add(IDUnderListener, "no other listener", Unknown, "unknown", "the listener probe failed, so this is not known")
	case p.Listener:
		add(IDUnderListener, "no other listener", OK, "none above this process", "")
	case p.ListenerErrno == "EBUSY":
		add(IDUnderListener, "no other listener", Missing, "another listener supervises this process (EBUSY)",
			"paddock run under paddock run, or a sandbox that supervises with user notification: a filter chain takes one listener, so only the ptrace backend can run here")
	default:
		add(IDUnderListener, "no other listener", Unknown, "unknown", "the listener probe failed with "+listenerValue(p)+", not EBUSY, so this is not known")
	}

	r.Backend = pickBackend(f, actionsKnown && has("trace"), ptraceOK, ptraceWhy)
	r.Items = append(r.Items, bpfLSMItem(f.bpfLSM, r.Backend.Name))
	return r
}

// orNo is an item's value for a flag the kernel refused.
func orNo(errno string) string {
	if errno == "" {
		return "no"
	}
	return "no (" + errno + ")"
}

// listenerValue is what the listener item shows of a failed install.
func listenerValue(p ListenerProbe) string {
	if p.ListenerErrno != "" {
		return "no (" + p.ListenerErrno + ")"
	}
	return "no"
}

// listenerWhy says in words why no listener could be installed.
func listenerWhy(p ListenerProbe) string {
	switch p.ListenerErrno {
	case "EBUSY":
		return "another seccomp listener already supervises this process (EBUSY; a filter chain takes only one)"
	case "EINVAL":
		return "this kernel has no seccomp user notification (EINVAL; " + userNotifLinux + ")"
	case "EACCES":
		return "no_new_privs could not be set and there is no CAP_SYS_ADMIN (EACCES)"
	case "EPERM", "ENOSYS":
		return "seccomp(2) itself is refused here (" + p.ListenerErrno + "; a filter above this process, or a kernel without CONFIG_SECCOMP_FILTER)"
	}
	return "installing one failed: " + p.ListenerError
}

// ptraceUsable says whether the supervisor may trace its own child here, and
// a caveat or the reason it may not.
func ptraceUsable(f facts) (bool, string) {
	switch {
	case f.ptraceScopeErr != nil:
		return false, "cannot read " + yamaPath + ": " + f.ptraceScopeErr.Error()
	case f.ptraceScope >= 3:
		return false, "ptrace is disabled entirely (Yama ptrace_scope 3; only a reboot lowers it)"
	case f.ptraceScope == 2 && !f.capSysPtrace:
		return false, "Yama ptrace_scope 2 lets only CAP_SYS_PTRACE trace, and this process lacks it"
	case f.ptraceScope == 2:
		return true, "admin-only (ptrace_scope 2); this process has CAP_SYS_PTRACE"
	}
	return true, ""
}

// FallsBackToPtrace reports whether a failed listener install (the error
// of filter.Install or filter.InstallListener) means that no listener can
// be had here, which `paddock run --backend auto` answers with the ptrace
// backend: EBUSY (another listener already supervises this process; a
// filter chain takes one) or EINVAL (no user notification). Any other
// failure is an error of its own, and ptrace would meet it too. This is
// the rule both the supervisor's auto choice and pickBackend apply.
func FallsBackToPtrace(err error) bool {
	return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EINVAL)
}

// fallsBackErrno is FallsBackToPtrace for the errno name a ListenerProbe
// holds.
func fallsBackErrno(name string) bool {
	return name == unix.ErrnoName(unix.EBUSY) || name == unix.ErrnoName(unix.EINVAL)
}

// pickBackend is `paddock run --backend auto`'s choice: seccomp where the
// probe installed a listener, else ptrace where the listener failed in a
// way auto falls back from (FallsBackToPtrace; or the probe could not tell)
// and SECCOMP_RET_TRACE and ptrace are there, else none.
func pickBackend(f facts, retTrace, ptraceOK bool, ptraceWhy string) Backend {
	p := f.probe
	if p.Error == "" && p.Listener {
		why := "a seccomp listener can be installed here (probed in a throwaway child)"
		if p.SyncWakeUp != nil && !*p.SyncWakeUp {
			why += "; without SYNC_WAKE_UP each decision costs ~30 us more"
		}
		return Backend{Name: "seccomp", Reason: why}
	}
	if p.Error == "" && !fallsBackErrno(p.ListenerErrno) {
		return Backend{Name: "none", Reason: "paddock cannot enforce here: no seccomp listener: " + listenerWhy(p) +
			"; --backend auto falls back to ptrace only for EBUSY or EINVAL, and the ptrace backend installs a seccomp filter too"}
	}
	why := "the listener probe failed (" + p.Error + ")"
	if p.Error == "" {
		why = "no seccomp listener: " + listenerWhy(p)
	}
	if retTrace && ptraceOK {
		return Backend{Name: "ptrace", Reason: why + "; SECCOMP_RET_TRACE and ptrace are available"}
	}
	var not []string
	if !retTrace {
		if f.actionsErr != nil {
			not = append(not, "SECCOMP_RET_TRACE is unknown ("+actionsPath+" unreadable)")
		} else {
			not = append(not, "no SECCOMP_RET_TRACE in "+actionsPath)
		}
	}
	if !ptraceOK {
		not = append(not, ptraceWhy)
	}
	return Backend{Name: "none", Reason: "paddock cannot enforce here: " + why + "; and " + strings.Join(not, "; ")}
}
