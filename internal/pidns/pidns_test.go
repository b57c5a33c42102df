package pidns

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/procfs"
)

// nested starts sh as the first process of a PID namespace of its own
// (unshare, with a user namespace where the test is not root) running
// script, and returns its host pid and the lines the script printed
// before "ready". The namespace dies with its first process at cleanup.
func nested(t *testing.T, script string) (int, []string) {
	t.Helper()
	args := []string{"--pid", "--fork", "--kill-child", "sh", "-c", script + "; echo ready; read x"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	cmd := exec.Command("unshare", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("needs unshare(1): %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		lines = append(lines, sc.Text())
	}
	if sc.Err() != nil || len(lines) == 0 {
		t.Skipf("needs a PID namespace of its own (unshare --pid): %v", sc.Err())
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
	if err != nil {
		t.Skipf("needs /proc/PID/task/TID/children: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("unshare's children: %q", b)
	}
	sh, _ := strconv.Atoi(f[0])
	return sh, lines
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// hostOf finds the host pid of the only process in sh's namespace (other
// than sh) whose NSpid ends in local.
func hostOf(t *testing.T, fs procfs.FS, ns uint64, local int) int {
	t.Helper()
	pids, err := fs.Pids()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if ino, err := fs.Namespace(p, "pid"); err != nil || ino != ns {
			continue
		}
		cr, err := fs.Creds(p)
		if err == nil && cr.NSpid[len(cr.NSpid)-1] == local {
			return p
		}
	}
	t.Fatalf("no process %d in namespace %d", local, ns)
	return 0
}

func TestTranslate(t *testing.T) {
	fs := procfs.Default()
	// sleep 1: a process of the namespace; a job whose leader (a sh)
	// exits, leaving its sleep in a group without a leader.
	f := t.TempDir() + "/job"
	sh, lines := nested(t, "sleep 1000 & echo $!; setsid sh -c 'sleep 1000 & echo $!' >"+f+" & l=$!; wait $l; cat "+f+"; echo $l")
	if len(lines) != 3 {
		t.Fatalf("the namespace printed %q", lines)
	}
	n, err := Of(fs, sh)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	sleep, orphan, leader := atoi(t, lines[0]), atoi(t, lines[1]), atoi(t, lines[2])
	hSleep, hOrphan := hostOf(t, fs, n.Ino, sleep), hostOf(t, fs, n.Ino, orphan)
	hPgrp, err := unix.Getpgid(hOrphan)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		id, want int
	}{
		{"the namespace's first process", 1, sh},
		{"a process", sleep, hSleep},
		{"a group whose leader exited", leader, hPgrp},
		{"nothing", 4000000, 0},
		{"nothing, and paddock's own pid there", os.Getpid(), 0},
		{"zero", 0, 0},
		{"negative", -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := n.Host(c.id)
			if err != nil || got != c.want {
				t.Errorf("Host(%d) = %d, %v; want %d", c.id, got, err, c.want)
			}
			if c.want > 0 && c.id != leader {
				// The kernel's fallback: /proc alone, as before Linux 6.11.
				got, err := n.scan(c.id, everything)
				if err != nil || got != c.want {
					t.Errorf("scan(%d) = %d, %v; want %d", c.id, got, err, c.want)
				}
			}
		})
	}
	for _, c := range []struct {
		name    string
		h, want int
	}{
		{"a process of the namespace", hSleep, sleep},
		{"its first process", sh, 1},
		{"a process above it", os.Getpid(), 0},
	} {
		t.Run("Local "+c.name, func(t *testing.T) {
			got, err := n.Local(c.h)
			if err != nil || got != c.want {
				t.Errorf("Local(%d) = %d, %v; want %d", c.h, got, err, c.want)
			}
		})
	}
	self, err := fs.Namespace(0, "pid")
	if err != nil {
		t.Fatal(err)
	}
	if same, err := Same(fs, os.Getpid(), self); err != nil || !same {
		t.Errorf("Same(self) = %v, %v", same, err)
	}
	if same, err := Same(fs, 0, self); err == nil || same {
		t.Errorf("Same(0), a process the reader cannot see = %v, %v; want an error", same, err)
	}
	if same, err := Same(fs, sh, self); err != nil || same {
		t.Errorf("Same(the namespace's first process) = %v, %v", same, err)
	}
}

// BenchmarkSame is what telling a caller's PID namespace from paddock's
// costs each trapped call with a pid argument.
func BenchmarkSame(b *testing.B) {
	fs := procfs.Default()
	self, err := fs.Namespace(0, "pid")
	if err != nil {
		b.Fatal(err)
	}
	pid := os.Getpid()
	for b.Loop() {
		if same, err := Same(fs, pid, self); err != nil || !same {
			b.Fatal(same, err)
		}
	}
}
