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
// remembered while it lives, and forgotten once it has exited, so that a
// later caller of the same tid (in any namespace) is looked at again.
func TestSameNSForgetsExitedCallers(t *testing.T) {
	s := newSameNS()
	defer s.flush()
	s.add(os.Getpid())
	if !s.has(os.Getpid()) {
		t.Fatal("the test process itself is not remembered")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	s.add(pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if s.has(pid) {
		t.Errorf("pid %d is remembered after it was reaped", pid)
	}
	if _, ok := s.fds[pid]; ok {
		t.Errorf("pid %d's pin was not dropped", pid)
	}
	var none *sameNS
	none.add(os.Getpid())
	if none.has(os.Getpid()) {
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
	// paddock's own namespace: no translation, and the caller remembered.
	c := w.begin(policy.Request{Tid: os.Getpid(), Syscall: filter.Kill, ABI: filter.ABI{Name: "x86_64"}, Args: [6]uint64{uint64(sleep), 15}}, -1, 0)
	defer c.reset()
	defer c.names.close()
	if _, done := c.translate(); done || c.req.Names != nil || c.req.Pid() != sleep || !w.sameNS.has(os.Getpid()) {
		t.Errorf("a caller in paddock's namespace: done=%v names=%v pid=%d", done, c.req.Names, c.req.Pid())
	}
}
