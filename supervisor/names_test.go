package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/filter"
	"github.com/paddock-dev/paddock/policy"
)

// TestSameNSForgetsExitedCallers: a caller found in paddock's namespace is
// remembered while it lives; a decision that took the answer from the
// cache for a caller whose pin shows it reaped does not stand (hitsHold),
// and the caller is forgotten, so that a later caller of the same tid (in
// any namespace) is looked at again.
func TestSameNSForgetsExitedCallers(t *testing.T) {
	w, _, sleep := pinWorld(t)
	ask := func(tid int) (cached, held bool) {
		c := w.begin(policy.Request{Tid: tid, Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{uint64(sleep), 0}}, -1, 0)
		defer c.reset()
		defer c.names.close()
		if _, done := c.translate(); done {
			t.Fatalf("kill(%d) of caller %d: done in translate", sleep, tid)
		}
		cached = c.names.pin >= 0
		return cached, c.hitsHold()
	}
	me := os.Getpid()
	if cached, held := ask(me); cached || !held {
		t.Errorf("first call of the test process: cached=%v held=%v; want read, held", cached, held)
	}
	if cached, held := ask(me); !cached || !held {
		t.Errorf("second call of the test process: cached=%v held=%v; want cached, held", cached, held)
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	w.sameNS.add(pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if cached, held := ask(pid); !cached || held {
		t.Errorf("a call under the tid of a reaped caller: cached=%v held=%v; want cached, not held", cached, held)
	}
	if _, ok := w.sameNS.lookup(pid); ok {
		t.Errorf("pid %d is remembered after it was found reaped", pid)
	}
	var none *sameNS
	none.add(me)
	if _, ok := none.lookup(me); ok {
		t.Error("a nil sameNS remembers")
	}
}

// TestTranslateNestedCaller: a call of a process in a PID namespace the
// agent made names its target by its number there; the call reads it
// there (paddock's number of the namespace's sleep), and a number that
// names nothing there is ESRCH, never paddock's process of that number
// (pid 2 here is kthreadd).
func TestTranslateNestedCaller(t *testing.T) {
	w, _, _ := pinWorld(t)
	if err := exec.Command("unshare", "--pid", "--fork", "true").Run(); err != nil {
		t.Skipf("needs PID namespaces (unshare --pid --fork, as root): %v", err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "sh", "-c", "sleep 300 & echo $!; read x")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	local, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	children := func(pid int) []string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		return strings.Fields(string(b))
	}
	sh, _ := strconv.Atoi(children(cmd.Process.Pid)[0])
	sleep, _ := strconv.Atoi(children(sh)[0])
	for _, tc := range []struct {
		name   string
		pid    int
		want   int // the translated argument; 0: answered ESRCH
		errnum unix.Errno
	}{
		{"the namespace's sleep", local, sleep, 0},
		{"a number the namespace lacks", 4000000, 0, unix.ESRCH},
		{"the caller itself as 1", 1, sh, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := w.begin(policy.Request{Tid: sh, Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{uint64(tc.pid), 15}}, -1, 0)
			defer c.reset()
			defer c.names.close()
			d, done := c.translate()
			if done != (tc.want == 0) || d.Errno != tc.errnum {
				t.Fatalf("translate: done=%v %+v; want done=%v errno %v", done, d, tc.want == 0, tc.errnum)
			}
			if !done && (c.req.Pid() != tc.want || c.req.Said[0] != uint64(tc.pid)) {
				t.Errorf("kill(%d) read as kill(%d), said %d; want %d", tc.pid, c.req.Pid(), c.req.Said[0], tc.want)
			}
		})
	}
	// paddock's own namespace: no translation, the caller read (not cached:
	// it is not a caller of this loop's yet), then remembered.
	c := w.begin(policy.Request{Tid: os.Getpid(), Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{uint64(sleep), 15}}, -1, 0)
	defer c.reset()
	defer c.names.close()
	if _, done := c.translate(); done || c.req.Names != nil || c.req.Pid() != sleep || c.names.pin >= 0 {
		t.Errorf("a caller in paddock's namespace: done=%v names=%v pid=%d", done, c.req.Names, c.req.Pid())
	}
	if _, ok := w.sameNS.lookup(os.Getpid()); !ok {
		t.Error("a caller in paddock's namespace is not remembered")
	}
}
