package filter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/internal/seccomp"
)

// Kernel tests: the test binary re-executes itself as a child (job
// kernelChild, see package reexec), which locks its OS thread, runs a list of probe syscalls
// unfiltered, installs the program on that thread, and runs them again.
// The parent compares the two runs: a trapped probe must now fail with the
// filter's errno (or be answered by the child's own listener), everything
// else must behave exactly as before. Probes only signal the `sleep` the
// parent started (or the child itself) and otherwise use arguments the
// kernel rejects before acting (invalid magic, flags, NULL pointers), so
// they do no harm even if the filter fails.

const (
	kernelChild = "__filter_test_child"        // the child's job: kernelChild MODE, see childMain
	envTarget   = "PADDOCK_FILTER_TEST_TARGET" // pid the probes may signal
	envInt80    = "PADDOCK_FILTER_TEST_INT80"  // "1" when int $0x80 works

	// notifyErrno is what the child's own listener answers, so a refusal by
	// the notify path is told apart from any errno the kernel produces.
	notifyErrno = unix.ENOTUNIQ
)

func TestMain(m *testing.M) {
	reexec.Run(reexec.Child{Name: kernelChild, Main: func(args []string) int { return childMain(args[0]) }})
	os.Exit(m.Run())
}

// probe is one syscall the child makes before and after installing.
type probe struct {
	abi     string  // the ABI the call goes through
	name    string  // what it does, for messages
	sc      Syscall // what the program should see; Unknown if never trapped
	sig0    bool    // the signal argument's low 32 bits are 0
	succeed bool    // without the filter the call succeeds
	call    func() int64
}

// trapped reports whether the program built from o refuses the probe.
func (p probe) trapped(o Options) bool {
	return p.sc != Unknown && o.trapped(p.sc) && !p.sig0
}

type probeEnv struct {
	pid, tid int
	target   int // the process kill probes signal
	pidfd    int // a pidfd for target, or -1
	int80    bool
}

// sysProbe returns a call of the native syscall nr.
func sysProbe(nr uintptr, args ...uintptr) func() int64 {
	var a [6]uintptr
	copy(a[:], args)
	return func() int64 {
		r, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		if errno != 0 {
			return -int64(errno)
		}
		return int64(r)
	}
}

const (
	sigcont   = uintptr(unix.SIGCONT)
	hi32      = uintptr(1) << 32
	atFdcwd   = ^uintptr(99) // AT_FDCWD, -100
	badFlag32 = uintptr(0x80000000)
)

// nativeProbes are the native-ABI probes; archProbes adds the others.
func nativeProbes(e probeEnv) []probe {
	abi := host.native.abi.Name
	tgt, pid, tid := uintptr(e.target), uintptr(e.pid), uintptr(e.tid)
	pidfd := uintptr(e.pidfd)
	havePidfd := e.pidfd >= 0
	return []probe{
		{abi, "getpid", Unknown, false, true, sysProbe(unix.SYS_GETPID)},
		{abi, "kill(target, SIGCONT)", Kill, false, true, sysProbe(unix.SYS_KILL, tgt, sigcont)},
		{abi, "kill(target, 0)", Kill, true, true, sysProbe(unix.SYS_KILL, tgt, 0)},
		{abi, "kill(target, 1<<32): the kernel reads sig as int", Kill, true, true, sysProbe(unix.SYS_KILL, tgt, hi32)},
		{abi, "kill(target, 1<<32|SIGCONT)", Kill, false, true, sysProbe(unix.SYS_KILL, tgt, hi32|sigcont)},
		{abi, "kill(1<<32|target, 0): the kernel reads pid as int", Kill, true, true, sysProbe(unix.SYS_KILL, hi32|tgt, 0)},
		{abi, "tkill(tid, 0)", Tkill, true, true, sysProbe(unix.SYS_TKILL, tid, 0)},
		{abi, "tkill(0, SIGCONT)", Tkill, false, false, sysProbe(unix.SYS_TKILL, 0, sigcont)},
		{abi, "tgkill(pid, tid, 0)", Tgkill, true, true, sysProbe(unix.SYS_TGKILL, pid, tid, 0)},
		{abi, "tgkill(0, 0, SIGCONT)", Tgkill, false, false, sysProbe(unix.SYS_TGKILL, 0, 0, sigcont)},
		{abi, "rt_sigqueueinfo(target, SIGCONT, NULL)", RtSigqueueinfo, false, false, sysProbe(unix.SYS_RT_SIGQUEUEINFO, tgt, sigcont, 0)},
		{abi, "rt_sigqueueinfo(target, 0, NULL)", RtSigqueueinfo, true, false, sysProbe(unix.SYS_RT_SIGQUEUEINFO, tgt, 0, 0)},
		{abi, "rt_tgsigqueueinfo(pid, tid, SIGCONT, NULL)", RtTgsigqueueinfo, false, false, sysProbe(unix.SYS_RT_TGSIGQUEUEINFO, pid, tid, sigcont, 0)},
		{abi, "rt_tgsigqueueinfo(pid, tid, 0, NULL)", RtTgsigqueueinfo, true, false, sysProbe(unix.SYS_RT_TGSIGQUEUEINFO, pid, tid, 0, 0)},
		{abi, "pidfd_send_signal(pidfd, SIGCONT)", PidfdSendSignal, false, havePidfd, sysProbe(unix.SYS_PIDFD_SEND_SIGNAL, pidfd, sigcont, 0, 0)},
		{abi, "pidfd_send_signal(pidfd, 0)", PidfdSendSignal, true, havePidfd, sysProbe(unix.SYS_PIDFD_SEND_SIGNAL, pidfd, 0, 0, 0)},
		{abi, "ptrace(PTRACE_PEEKDATA, target)", Ptrace, false, false, sysProbe(unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, tgt, 0, 0)},
		{abi, "process_vm_writev(target, bad flags)", ProcessVMWritev, false, false, sysProbe(unix.SYS_PROCESS_VM_WRITEV, tgt, 0, 0, 0, 0, 1)},
		{abi, "pidfd_getfd(pidfd, 0, bad flags)", PidfdGetfd, false, false, sysProbe(unix.SYS_PIDFD_GETFD, pidfd, 0, 1)},
		{abi, "execve(NULL)", Execve, false, false, sysProbe(unix.SYS_EXECVE, 0, 0, 0)},
		{abi, "execveat(AT_FDCWD, NULL)", Execveat, false, false, sysProbe(unix.SYS_EXECVEAT, atFdcwd, 0, 0, 0, 0)},
		{abi, "reboot(bad magic)", Reboot, false, false, sysProbe(unix.SYS_REBOOT, 0, 0, 0, 0)},
		{abi, "kexec_load(bad flags)", KexecLoad, false, false, sysProbe(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0x8000)},
		{abi, "kexec_file_load(bad flags)", KexecFileLoad, false, false, sysProbe(unix.SYS_KEXEC_FILE_LOAD, ^uintptr(0), ^uintptr(0), 0, 0, badFlag32)},
	}
}

// Child modes.
const (
	modeErrno    = "errno"     // Action ERRNO(EPERM), Exec and Power on
	modeErrnoMin = "errno-min" // Action ERRNO(EPERM), Exec and Power off
	modeNotify   = "notify"    // Action USER_NOTIF with the child's own listener
)

func modeOptions(mode string) (Options, uint) {
	switch mode {
	case modeErrnoMin:
		return Options{Action: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}, 0
	case modeNotify:
		return Options{Action: unix.SECCOMP_RET_USER_NOTIF, Exec: true, Power: true}, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	return Options{Action: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), Exec: true, Power: true}, 0
}

// refusal is the result a trapped probe gets in mode.
func refusal(mode string) int64 {
	if mode == modeNotify {
		return -int64(notifyErrno)
	}
	return -int64(unix.EPERM)
}

// childMain runs in the re-executed test binary. Everything the filtered
// thread needs is prepared before the filter goes on; afterwards it only
// makes the probe calls, and output is written once at the end.
func childMain(mode string) int {
	runtime.LockOSThread()
	if mode == "int80" {
		return childInt80()
	}
	e := probeEnv{pid: os.Getpid(), tid: unix.Gettid(), int80: os.Getenv(envInt80) == "1"}
	e.target, _ = strconv.Atoi(os.Getenv(envTarget))
	if e.target <= 0 {
		e.target = e.pid
	}
	e.pidfd = -1
	if fd, err := unix.PidfdOpen(e.target, 0); err == nil {
		e.pidfd = fd
	}
	ps := append(nativeProbes(e), archProbes(e)...)
	before := make([]int64, len(ps))
	after := make([]int64, len(ps))
	for i, p := range ps {
		before[i] = p.call()
	}

	o, flags := modeOptions(mode)
	prog, err := Build(o)
	if err != nil {
		fmt.Printf("fail\tBuild: %v\n", err)
		return 1
	}
	var rec recorder
	fds := make(chan int, 1)
	if flags&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 {
		go rec.serve(fds)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Printf("skip\tprctl(PR_SET_NO_NEW_PRIVS): %v\n", err)
		return 0
	}
	fd, err := Install(prog, flags)
	if err != nil {
		fmt.Printf("skip\t%v\n", err)
		return 0
	}
	fds <- fd
	for i, p := range ps {
		rec.current.Store(int32(i))
		after[i] = p.call()
	}

	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "self\t%d\t%d\t%d\n", e.pid, e.tid, fd)
	for i, p := range ps {
		fmt.Fprintf(w, "probe\t%d\t%s\t%s\t%s\t%v\t%v\t%d\t%d\n", i, p.abi, p.name, p.sc, p.trapped(o), p.succeed, before[i], after[i])
	}
	rec.mu.Lock()
	for _, n := range rec.notifs {
		fmt.Fprintf(w, "notif\t%d\t%#x\t%d\t%d", n.probe, n.Data.Arch, n.Data.Nr, n.Pid)
		for _, a := range n.Data.Args {
			fmt.Fprintf(w, "\t%#x", a)
		}
		fmt.Fprintln(w)
	}
	if rec.err != nil {
		fmt.Fprintf(w, "fail\tlistener: %v\n", rec.err)
	}
	rec.mu.Unlock()
	w.Flush()
	return 0
}

type notifRecord struct {
	probe int32
	seccomp.Notif
}

// recorder is the child's own supervisor: it records each notification
// with the probe running at the time and answers notifyErrno.
type recorder struct {
	current atomic.Int32
	mu      sync.Mutex
	notifs  []notifRecord
	err     error
}

func (r *recorder) serve(fds <-chan int) {
	fd := <-fds
	for {
		var n seccomp.Notif
		if err := seccomp.Recv(fd, &n); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.notifs = append(r.notifs, notifRecord{r.current.Load(), n})
		r.mu.Unlock()
		// An answer to an interrupted caller is dropped by Send; it retries.
		_ = seccomp.Send(fd, n.ID, notifyErrno)
	}
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// childOutput is the parsed output of one child.
type childOutput struct {
	pid, tid int
	probes   []probeResult
	notifs   map[int][]notifRecord
}

type probeResult struct {
	abi, name, sc string
	trap, succeed bool
	before, after int64
}

// runChildRaw re-executes the test binary in mode and returns its stdout.
func runChildRaw(mode string, env ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := reexec.CommandContext(ctx, kernelChild, mode)
	cmd.Env = append(os.Environ(),
		// Keep the filtered thread's runtime quiet: no GC, no async
		// preemption signals, and spare Ps for the listener goroutine.
		"GOGC=off", "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=4")
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("child %s: %w\nstdout:\n%s\nstderr:\n%s", mode, err, out, stderr.String())
	}
	return string(out), nil
}

// runChild is runChildRaw for the probe modes: it fails the test when the
// child fails and skips it when the child reports that the kernel lacks
// something.
func runChild(t *testing.T, mode string, env ...string) string {
	t.Helper()
	out, err := runChildRaw(mode, env...)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		switch f[0] {
		case "skip":
			t.Skipf("needs seccomp filters with these flags: %s", f[1])
		case "fail":
			t.Fatalf("child %s: %s", mode, f[1])
		}
	}
	return out
}

func parseChild(t *testing.T, out string) childOutput {
	t.Helper()
	c := childOutput{notifs: map[int][]notifRecord{}}
	atoi := func(s string) int64 {
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			t.Fatalf("bad number %q in child output", s)
		}
		return n
	}
	atou := func(s string) uint64 {
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("bad number %q in child output", s)
		}
		return n
	}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		switch f[0] {
		case "self":
			c.pid, c.tid = int(atoi(f[1])), int(atoi(f[2]))
		case "probe":
			c.probes = append(c.probes, probeResult{
				abi: f[2], name: f[3], sc: f[4], trap: f[5] == "true", succeed: f[6] == "true",
				before: atoi(f[7]), after: atoi(f[8]),
			})
		case "notif":
			var n notifRecord
			n.probe = int32(atoi(f[1]))
			n.Data.Arch = uint32(atou(f[2]))
			n.Data.Nr = int32(atoi(f[3]))
			n.Pid = uint32(atou(f[4]))
			for i := range n.Data.Args {
				n.Data.Args[i] = atou(f[5+i])
			}
			c.notifs[int(n.probe)] = append(c.notifs[int(n.probe)], n)
		}
	}
	if len(c.probes) == 0 {
		t.Fatalf("child printed no probes:\n%s", out)
	}
	return c
}

func errnoString(r int64) string {
	if r < 0 && r > -4096 {
		return fmt.Sprintf("%d (%v)", r, unix.Errno(-r))
	}
	return strconv.FormatInt(r, 10)
}

// startTarget starts the process the kill probes may signal (with SIGCONT,
// which does nothing to a running sleep) and returns its pid, or 0 to let
// the child signal itself when there is no sleep binary.
func startTarget(t *testing.T) int {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Logf("no sleep binary (%v); the child signals itself", err)
		return 0
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

func kernelTest(t *testing.T, mode string) {
	target := startTarget(t)
	int80, why := int80Available(t)
	env := []string{envTarget + "=" + strconv.Itoa(target)}
	if int80 {
		env = append(env, envInt80+"=1")
	}
	c := parseChild(t, runChild(t, mode, env...))
	refused := refusal(mode)

	byABI := map[string][]int{}
	for i, p := range c.probes {
		byABI[p.abi] = append(byABI[p.abi], i)
	}
	for _, w := range wantTables {
		idx := byABI[w.name]
		t.Run(w.name, func(t *testing.T) {
			if len(idx) == 0 {
				if w.compat && !int80 {
					t.Skipf("needs a way into the %s ABI from this process: %s", w.name, why)
				}
				t.Skipf("no probes for %s on %s", w.name, runtime.GOARCH)
			}
			for _, i := range idx {
				p := c.probes[i]
				t.Logf("%-55s without filter %-22s with filter %s", p.name, errnoString(p.before), errnoString(p.after))
				if p.succeed && p.before < 0 {
					t.Errorf("%s: without the filter got %s, want success", p.name, errnoString(p.before))
				}
				if p.trap {
					if p.after != refused {
						t.Errorf("%s: with the filter got %s, want %s", p.name, errnoString(p.after), errnoString(refused))
					} else if p.before == refused {
						t.Logf("%s: inconclusive, the kernel refuses it with %s even without the filter", p.name, errnoString(refused))
					}
				} else if p.after != p.before {
					t.Errorf("%s: with the filter got %s, without %s; want the same", p.name, errnoString(p.after), errnoString(p.before))
				}
				if mode != modeNotify {
					continue
				}
				ns := c.notifs[i]
				if !p.trap {
					for _, n := range ns {
						t.Errorf("%s: unexpected notification arch %#x nr %#x", p.name, n.Data.Arch, uint32(n.Data.Nr))
					}
					continue
				}
				if len(ns) != 1 {
					t.Errorf("%s: %d notifications, want 1", p.name, len(ns))
					continue
				}
				n := ns[0]
				s, abi, ok := Lookup(n.Data.Arch, n.Data.Nr)
				if !ok || s.String() != p.sc || abi.Name != p.abi {
					t.Errorf("%s: notification arch %#x nr %#x decodes to %s/%s (ok=%v), want %s/%s", p.name, n.Data.Arch, uint32(n.Data.Nr), abi.Name, s, ok, p.abi, p.sc)
				}
				if int(n.Pid) != c.tid {
					t.Errorf("%s: notification pid %d, want the calling thread %d", p.name, n.Pid, c.tid)
				}
				t.Logf("%s: arch %#x nr %#x args %#x", p.name, n.Data.Arch, uint32(n.Data.Nr), n.Data.Args)
			}
		})
	}
	for i := range c.notifs {
		if i < 0 || i >= len(c.probes) {
			t.Errorf("notification outside any probe: %+v", c.notifs[i])
		}
	}
}

// TestKernelErrno installs the program with Action ERRNO(EPERM), Exec and
// Power on, and checks every probe against the real kernel.
func TestKernelErrno(t *testing.T) { kernelTest(t, modeErrno) }

// TestKernelErrnoMinimal is TestKernelErrno with Exec and Power off: exec
// and power probes must then behave exactly as without a filter.
func TestKernelErrnoMinimal(t *testing.T) { kernelTest(t, modeErrnoMin) }

// TestKernelNotify installs the program with SECCOMP_RET_USER_NOTIF and
// NEW_LISTENER; the child's own listener goroutine (on an unfiltered
// thread) answers, and the parent decodes each notification with Lookup.
func TestKernelNotify(t *testing.T) { kernelTest(t, modeNotify) }

func TestInstallRejects(t *testing.T) {
	prog := mustBuild(t, optsBase)
	if _, err := Install(nil, 0); err == nil {
		t.Error("Install(nil) succeeded")
	}
	// Refused before any syscall: this process must stay unfiltered.
	if _, err := Install(prog, unix.SECCOMP_FILTER_FLAG_TSYNC); err == nil || !strings.Contains(err.Error(), "TSYNC") {
		t.Errorf("Install with TSYNC: err = %v, want a refusal", err)
	}
	if _, err := Install(make([]unix.SockFilter, unix.BPF_MAXINSNS+1), 0); err == nil {
		t.Error("Install of an oversized program succeeded")
	}
}
