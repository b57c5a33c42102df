package supervisor

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/sched"
)

// realTimePermitted reports whether this process may put a thread under
// SCHED_FIFO (CAP_SYS_NICE, or an RLIMIT_RTPRIO of 1), trying it on a
// thread of its own that ends with the try.
func realTimePermitted(t *testing.T) bool {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends here
		r := sched.NewRealTime(sched.Budget{Share: 0.5, Window: time.Second}, sched.Setting{})
		err := r.Take()
		if err == nil {
			err = r.Stop()
		}
		res <- err
	}()
	err := <-res
	if err != nil && !errors.Is(err, unix.EPERM) {
		t.Fatalf("try real time: %v", err)
	}
	return err == nil
}

// fifoThreads counts this process's threads under SCHED_FIFO.
func fifoThreads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("list threads: %v", err)
	}
	n := 0
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_FIFO {
			n++
		}
	}
	return n
}

// TestNotifyLoopRealTime: with Config.RealTime, the notify loop answers
// from one thread under SCHED_FIFO where that is permitted (none where it
// is not), and the agent and what it starts keep the normal class.
func TestNotifyLoopRealTime(t *testing.T) {
	permitted := realTimePermitted(t)
	s, in, out := startScript(t, 10*time.Second, `/bin/true && echo ran; sh -c 'echo $$; read x || :'`, Config{
		TrapExec: true,
		RealTime: sched.Budget{Share: 0.5, Window: time.Second},
	})
	// Both lines come after trapped execs (/bin/true's, sh's), answered by
	// the loop.
	line, err := out.ReadString('\n')
	if err != nil || line != "ran\n" {
		t.Fatalf("agent said %q, %v; want ran", line, err)
	}
	line, err = out.ReadString('\n')
	if err != nil {
		t.Fatalf("read the agent's child's pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("agent's child's pid %q: %v", line, err)
	}
	want := 0
	if permitted {
		want = 1
	}
	if n := fifoThreads(t); n != want {
		t.Errorf("%d threads of this process under SCHED_FIFO during the session, want %d (real time permitted: %v)", n, want, permitted)
	}
	for _, pid := range []int{s.Pid(), child} {
		a, err := unix.SchedGetAttr(pid, 0)
		if err != nil {
			t.Fatalf("sched_getattr(%d): %v", pid, err)
		}
		if a.Policy != unix.SCHED_NORMAL {
			t.Errorf("agent process %d has policy %d, want SCHED_NORMAL", pid, a.Policy)
		}
	}
	in.Close() // the child's read ends, and the agent with it
	if code := s.Wait(); code != 0 {
		t.Errorf("agent exited %d, want 0", code)
	}
}
