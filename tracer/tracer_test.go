package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/answer"
	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/features/featuretest"
	"github.com/paddock-dev/paddock/internal/proctest"
	"github.com/paddock-dev/paddock/internal/reexec"
)

// The kernel test: the test binary re-executes itself as a child (traceeChild)
// that reports its locked thread's id, waits until the test has seized that
// thread, installs paddock's filter with SECCOMP_RET_TRACE on it, and makes
// signal syscalls at a `sleep` the test started. The test traces it with a
// Tracer whose Decider refuses the sleep, answers a tgkill of it as done
// without running it, and allows the child itself.

// traceeChild is the re-executed child's job: traceeChild TARGET.
const traceeChild = "__tracer_test_tracee"

func TestMain(m *testing.M) {
	reexec.Run(reexec.Child{Name: traceeChild, Main: childMain})
	os.Exit(m.Run())
}

// childMain runs in the traced child; it prints one line per probe.
func childMain(args []string) int {
	runtime.LockOSThread()
	fmt.Printf("tid %d\n", unix.Gettid())
	var b [1]byte
	if _, err := os.Stdin.Read(b[:]); err != nil {
		fmt.Printf("no go-ahead: %v\n", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Printf("prctl: %v\n", err)
		return 1
	}
	prog, err := filter.Build(filter.Options{Action: unix.SECCOMP_RET_TRACE})
	if err == nil {
		_, err = filter.Install(prog, 0)
	}
	if err != nil {
		fmt.Printf("install: %v\n", err)
		return 1
	}
	target, _ := strconv.Atoi(args[0])
	show := func(name string, err error) {
		var errno unix.Errno
		switch {
		case err == nil:
			fmt.Printf("%s ok\n", name)
		case errors.As(err, &errno):
			fmt.Printf("%s %s\n", name, unix.ErrnoName(errno))
		default:
			fmt.Printf("%s %v\n", name, err)
		}
	}
	show("kill-foreign", unix.Kill(target, unix.SIGTERM))
	show("tgkill-foreign", unix.Tgkill(target, target, unix.SIGKILL))
	show("kill-self", unix.Kill(os.Getpid(), unix.SIGCONT))
	show("kill-foreign-probe", unix.Kill(target, 0))
	return 0
}

func TestTraceDecidesTrappedSyscalls(t *testing.T) {
	featuretest.Require(t, features.IDRetTrace, features.IDPtrace)
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	target := sleep.Process.Pid

	// All ptrace requests from this one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	self, argv := reexec.Argv(traceeChild, strconv.Itoa(target))
	pid, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{inR.Fd(), outW.Fd(), 2},
	})
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatal("the child said nothing")
	}
	var tid int
	if _, err := fmt.Sscanf(lines.Text(), "tid %d", &tid); err != nil {
		t.Fatalf("child said %q", lines.Text())
	}

	var calls []string
	tr := New(func(caller int, c Call) (answer.Answer, bool) {
		sc, abi, _ := filter.Lookup(c.Arch, c.Nr)
		calls = append(calls, fmt.Sprintf("%s %s %d %d", abi.Name, sc, int32(c.Args[0]), caller))
		switch {
		case sc == filter.Tgkill:
			// Done: the call returns 0 without running (the foreign
			// sleep must survive its SIGKILL).
			return answer.Completed(0), false
		case int(int32(c.Args[0])) == target:
			return answer.Refuse(unix.EPERM), false
		}
		return answer.Continue(), false
	}, func(tid int, what string, err error) { t.Errorf("tracer: %d %s: %v", tid, what, err) })
	if err := Seize(tid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		t.Skipf("needs ptrace of a child: %v", err)
	}
	if _, err := inW.Write([]byte{'G'}); err != nil {
		t.Fatal(err)
	}
	// Trace until the child has exited.
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("wait4: %v", err)
		}
		tr.Handle(got, ws)
		if got == pid && (ws.Exited() || ws.Signaled()) {
			if ws.ExitStatus() != 0 {
				t.Errorf("child exited with %v", ws)
			}
			break
		}
	}
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	want := []string{"kill-foreign EPERM", "tgkill-foreign ok", "kill-self ok", "kill-foreign-probe ok"}
	if strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("child said:\n%s\nwant:\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
	if !proctest.Alive(t, sleep.Process.Pid) {
		t.Errorf("the foreign sleep was killed")
	}
	// Three trapped calls reached the Decider (signal 0 stays in BPF), from
	// the traced thread, through the native ABI.
	if len(calls) != 3 || !strings.HasPrefix(calls[0], fmt.Sprintf("x86_64 kill %d %d", target, tid)) && runtime.GOARCH == "amd64" {
		t.Errorf("decider saw %q", calls)
	}
}

// TestDetachLetsGoOfUnseenChild: a child whose first stop the tracer has
// not collected yet when it lets go (the agent root exited just as a
// leftover started a thread or a process) is let go of too. Were it left
// traced, the tracer's exit would kill it (PTRACE_O_EXITKILL). A shell is
// traced until its fork event, Detach follows at once, and neither the shell
// nor its child may be traced afterwards.
func TestDetachLetsGoOfUnseenChild(t *testing.T) {
	featuretest.Require(t, features.IDPtrace)
	// All ptrace requests, and the shell's fork, from this one thread: the
	// shell is this thread's child, so a wait finds its stops before its
	// child's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	sh := exec.Command("sh", "-c", `read go; sleep 300 & echo $!; read done`)
	sh.Stdin, sh.Stdout = inR, outW
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	pid := sh.Process.Pid
	t.Cleanup(func() {
		// The shell and its sleep, which this test started: their group.
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = sh.Wait()
	})
	tr := New(func(int, Call) (answer.Answer, bool) { return answer.Continue(), false },
		func(tid int, what string, err error) { t.Errorf("tracer: %d %s: %v", tid, what, err) })
	if err := Seize(pid); err != nil {
		t.Skipf("needs ptrace of a child: %v", err)
	}
	if _, err := inW.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	// The shell's stops only, until it starts its child (a fork, or a
	// vfork or clone where a shell spawns so).
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || !ws.Stopped() {
			t.Fatalf("the shell before its fork: %v %v", ws, err)
		}
		tr.Handle(pid, ws)
		if ev := int(ws>>16) & 0xff; ev == unix.PTRACE_EVENT_FORK || ev == unix.PTRACE_EVENT_VFORK || ev == unix.PTRACE_EVENT_CLONE {
			break
		}
	}
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatal("the shell did not say its child's pid")
	}
	child, err := strconv.Atoi(lines.Text())
	if err != nil {
		t.Fatalf("the shell said %q", lines.Text())
	}
	if _, ok := tr.tracees[child]; !ok {
		t.Errorf("after the fork event the tracer does not know the child %d: %v", child, tr.tracees)
	}
	tr.Detach()
	for _, p := range []int{pid, child} {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
		if err != nil {
			t.Fatalf("process %d after Detach: %v", p, err)
		}
		if !strings.Contains(string(status), "\nTracerPid:\t0\n") {
			t.Errorf("process %d is still traced after Detach:\n%s", p, status)
		}
	}
}
