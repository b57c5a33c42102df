package test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// capSysResource is CAP_SYS_RESOURCE, which lowering oom_score_adj needs.
const capSysResource = 24

// oomScoreAdj reads pid's oom_score_adj ("self" for the test's own).
func oomScoreAdj(t *testing.T, pid string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(readFile("/proc/" + pid + "/oom_score_adj")))
	if err != nil {
		t.Fatalf("oom_score_adj of %s: %v", pid, err)
	}
	return n
}

// TestSupervisorOOMScoreAdj: a root paddock makes itself the OOM killer's
// late choice (oom_score_adj -900, or its own if lower) once its agent is
// forked, and the
// agent and what it starts keep the value paddock was started with, so
// that under memory pressure the agent that uses the memory goes first.
// An unprivileged paddock may not lower it: it runs as before, its value
// unchanged, and says nothing of it above debug level.
func TestSupervisorOOMScoreAdj(t *testing.T) {
	own := oomScoreAdj(t, "self")
	for _, b := range backends {
		t.Run("root/"+string(b), func(t *testing.T) {
			b.require(t)
			if os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			eff, err := capMask(readFile("/proc/self/status"), "CapEff")
			if err != nil {
				t.Fatal(err)
			}
			if eff&(1<<capSysResource) == 0 {
				t.Skipf("needs CAP_SYS_RESOURCE (CapEff %#x) to lower oom_score_adj: root here lacks it", eff)
			}
			paddock, agent, child := b.oomRun(t, nil, "")
			if want := min(own, -900); paddock != want || agent != own || child != own {
				t.Errorf("oom_score_adj: paddock %d, agent %d, its child %d; want %d, %d, %d", paddock, agent, child, want, own, own)
			}
		})
	}
	t.Run("unprivileged", func(t *testing.T) {
		b := backend("seccomp")
		b.require(t)
		var prefix []string
		dir := t.TempDir()
		if os.Geteuid() == 0 {
			dir = nobodyDir(t)
			prefix = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
		}
		paddock, agent, child := b.oomRun(t, prefix, dir)
		if paddock != own || agent != own || child != own {
			t.Errorf("oom_score_adj: paddock %d, agent %d, its child %d; want all %d, as paddock was started", paddock, agent, child, own)
		}
	})
}

// oomRun starts `paddock run` (after prefix, in dir, a temporary directory
// when ""), with an agent that starts a child, reads the oom_score_adj of
// paddock, the agent and its child once paddock has logged that the agent
// started, ends the session with SIGTERM and checks that it ended as the
// agent did and that no log line above debug level spoke of oom_score_adj.
func (b backend) oomRun(t *testing.T, prefix []string, dir string) (paddock, agent, child int) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	args := append(prefix, bins.paddock, "run", "--backend", string(b), "--log-format", "json",
		"--journal", filepath.Join(dir, "j.jsonl"), "--", "sh", "-c", `sleep 60 & echo "child=$!"; wait`)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_RUNTIME_DIR=", "TMPDIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	started, childPid := make(chan int, 1), make(chan int, 1)
	logs := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var rec struct {
				Message string `json:"message"`
				Pid     int    `json:"pid"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Message == "agent started" {
				started <- rec.Pid
			}
		}
		logs <- lines
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "child="); ok {
				n, _ := strconv.Atoi(v)
				childPid <- n
			}
		}
	}()
	var agentPid, kid int
	for agentPid == 0 || kid == 0 {
		select {
		case agentPid = <-started:
		case kid = <-childPid:
		case <-time.After(time.Minute):
			t.Fatal("paddock did not say its agent started, or the agent did not start its child, in a minute")
		}
	}
	paddock = oomScoreAdj(t, itoa(cmd.Process.Pid))
	agent = oomScoreAdj(t, itoa(agentPid))
	child = oomScoreAdj(t, itoa(kid))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	done = true
	lines := <-logs
	if code := exitCode(err); code != 128+int(syscall.SIGTERM) {
		t.Errorf("paddock exited %d (%v), want %d: the agent's death by SIGTERM\n%s", code, err, 128+int(syscall.SIGTERM), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if strings.Contains(l, "oom_score_adj") && !strings.Contains(l, `"level":"debug"`) {
			t.Errorf("paddock spoke of oom_score_adj above debug level: %s", l)
		}
	}
	return paddock, agent, child
}
