package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKeptLeftoverSaysWhy: what a --keep-orphans session leaves running
// keeps the session's filter. Once paddock has exited, a keeper answers
// its calls (package leftover): a kill of a foreign process, and an exec,
// are refused with EPERM and a message on the leftover's own stderr
// saying which session left it and what to do (without the keeper the
// kernel answers ENOSYS and nothing is said); one exec command gives one
// refusal; the calls are journaled; paddock sessions lists the keeper and
// paddock ps --socket its leftover; the keeper is gone once the leftover
// is. The agent, the leftover and the foreign process run as nobody.
func TestKeptLeftoverSaysWhy(t *testing.T) {
	backend("seccomp").require(t)
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	for _, p := range []string{"up", "go"} {
		if err := unix.Mkfifo(filepath.Join(dir, p), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, p), 0o666); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	// The leftover says it is up (the agent waits for that before it
	// exits), then waits for the test, after paddock has exited.
	script := `cd ` + dir + `; setsid sh -c 'echo $$ > pid; echo up > up; read x < go
kill -TERM ` + itoa(f.Pid()) + `; echo "kill=$?"
sleep 1 & echo "bg=$?"; wait; echo done' </dev/null >out 2>err &
read y < up`
	backend("seccomp").nobodyRun(t, bins.paddock, dir, script, "--keep-orphans")

	pid := strings.TrimSpace(readFile(filepath.Join(dir, "pid")))
	if fd, err := unix.PidfdOpen(atoi(pid), 0); err == nil {
		// Started by the test: ended with it, through a pin taken now.
		t.Cleanup(func() {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			unix.Close(fd)
		})
	}
	env := append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR=")
	asNobody := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bins.paddock}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("paddock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var sessions []struct {
		Pid    int    `json:"pid"`
		Socket string `json:"socket"`
		Ended  *struct {
			Session string `json:"session"`
		} `json:"ended"`
	}
	if err := json.Unmarshal([]byte(asNobody("sessions", "--json")), &sessions); err != nil {
		t.Fatal(err)
	}
	var keeper int
	var socket string
	for _, s := range sessions {
		if s.Ended != nil {
			keeper, socket = s.Pid, s.Socket
		}
	}
	if keeper == 0 {
		t.Fatalf("paddock sessions lists no keeper of the ended session: %+v", sessions)
	}
	if ps := asNobody("ps", "--socket", socket); !strings.Contains(ps, pid+" ") || !strings.Contains(ps, "left running by paddock session") {
		t.Errorf("paddock ps --socket %s does not list leftover %s:\n%s", socket, pid, ps)
	}

	// Go: the leftover tries, and ends.
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leftover to finish", func() bool { return strings.Contains(readFile(filepath.Join(dir, "out")), "done") })
	waitFor(t, "the keeper to exit with its last leftover", func() bool {
		err := syscall.Kill(keeper, 0)
		return err != nil || procState(keeper) == 'Z'
	})

	out, stderr := readFile(filepath.Join(dir, "out")), readFile(filepath.Join(dir, "err"))
	if !strings.Contains(out, "kill=1") || !strings.Contains(out, "bg=0") {
		t.Errorf("the leftover's own report: %q, want kill=1 (refused) and its background job started", out)
	}
	want := "paddock refused kill(SIGTERM) of pid " + itoa(f.Pid()) + " from pid " + pid + " (sh): it was left running by paddock session"
	if !strings.Contains(stderr, want) {
		t.Errorf("the leftover's stderr lacks %q:\n%s", want, stderr)
	}
	if n := strings.Count(stderr, "paddock refused execve"); n != 1 {
		t.Errorf("the leftover's `sleep 1 &` got %d exec refusals on its stderr, want 1 (one command, one refusal):\n%s", n, stderr)
	}
	if !f.Alive(t) {
		t.Fatalf("foreign process %d died", f.Pid())
	}
	j := readFile(filepath.Join(dir, "j.jsonl"))
	if !strings.Contains(j, `"rule":"session_ended"`) || !strings.Contains(j, `"target":`+itoa(f.Pid())) {
		t.Errorf("the journal lacks the keeper's refusal of the kill of %d:\n%s", f.Pid(), j)
	}
}
