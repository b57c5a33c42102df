package test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAutoFallsBackToPtraceUnderListener forces the EBUSY case: paddock
// starts under a process that already holds a seccomp listener (what some
// sandboxes and container runtimes do, and paddock under paddock). --backend
// auto then picks ptrace, says why, and still refuses a foreign kill itself;
// --backend seccomp fails before the agent runs, naming EBUSY.
func TestAutoFallsBackToPtraceUnderListener(t *testing.T) {
	backend("seccomp").require(t)
	backend("ptrace").require(t)
	f := startForeign(t, "sleep", "300")
	dir := t.TempDir()
	journal, marker := filepath.Join(dir, "j.jsonl"), filepath.Join(dir, "ran")
	run := func(b string, script string) (string, error) {
		cmd := exec.Command(bins.helper, "listen-exec", bins.paddock, "run", "--backend", b, "--log-format", "json", "--log-level", "debug",
			"--journal", journal, "--", "bash", "-c", script)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("auto", "kill -TERM "+itoa(f.Pid())+"; echo rc=$?")
	if err != nil {
		t.Fatalf("paddock run --backend auto under a listener: %v\n%s", err, out)
	}
	if !f.Alive(t) {
		t.Fatalf("foreign process died\n%s", out)
	}
	for _, want := range []string{`"backend":"ptrace"`, `"backend_reason":"seccomp listener unavailable`, "device or resource busy", "rc=1", "paddock refused kill(SIGTERM) of pid " + itoa(f.Pid())} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	r := result{journal: readFile(journal)}
	r.denial(t, f.Pid())

	out, err = run("seccomp", "touch "+marker)
	if exitCode(err) == 0 || !strings.Contains(out, "device or resource busy") {
		t.Errorf("--backend seccomp under a listener: want a failure naming EBUSY, got %v\n%s", err, out)
	}
	if fileExists(marker) {
		t.Error("the agent ran although its backend could not be had")
	}
}

// TestPaddockUnderPaddock: paddock run inside a paddock session refuses to
// start (exit 2, naming the session and the way out), under either backend
// outside and whether or not the agent kept PADDOCK_SOCKET: its command,
// a kill of a foreign process, never runs, and the foreign process lives.
// (Before, the inner paddock fell back to ptrace beneath the outer
// listener, which answered first: a refusal shown twice, and an inner
// summary of "no refusals".)
func TestPaddockUnderPaddock(t *testing.T) {
	for _, b := range []backend{"seccomp", "ptrace"} {
		t.Run(string(b), func(t *testing.T) {
			b.require(t)
			f := startForeign(t, "sleep", "300")
			dir := t.TempDir()
			inner := filepath.Join(dir, "inner.jsonl")
			for _, env := range [][]string{{"env"}, {"env", "-u", "PADDOCK_SOCKET"}} {
				args := append(append([]string{"--"}, env...), bins.paddock, "run", "--log-format", "json", "--journal", inner, "--",
					"bash", "-c", "kill -KILL "+itoa(f.Pid())+"; echo rc=$?")
				r := b.runPaddock(t, args...)
				if !f.Alive(t) {
					t.Fatalf("%v: foreign process died\n%s", env, r)
				}
				if r.code != 2 || strings.Contains(r.stdout, "rc=") {
					t.Errorf("%v: want the inner paddock to exit 2 before running its command\n%s", env, r)
				}
				for _, want := range []string{"this process is already inside a paddock session (paddock pid ", "/control.sock)", "Way out: run CMD directly here"} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("%v: stderr lacks %q\n%s", env, want, r)
					}
				}
				for _, rec := range r.records(t) {
					if rec["action"] == "signal_denied" {
						t.Errorf("%v: the outer journal has a refusal, so the inner command ran: %v", env, rec)
					}
				}
				if fileExists(inner) {
					t.Errorf("%v: the inner paddock opened its journal %s", env, inner)
				}
			}
		})
	}
}

// oneCPU: paddock with a single P (GOMAXPROCS=1, as in a one-CPU container)
// and pinned to one CPU (taskset) still starts the agent and decides its
// calls. The seccomp backend forks the agent with a vfork that holds the
// launching thread's P until the agent's execve is answered by the notify
// loop; with one P that used to wait forever.
func oneCPU(t *testing.T, b backend) {
	b.require(t)
	f := startForeign(t, "sleep", "300")
	script := "sleep 30 & kill $!; echo owned=$?; kill " + itoa(f.Pid()) + " 2>/dev/null; echo foreign=$?"
	runs := map[string][]string{"GOMAXPROCS=1": {"env", "GOMAXPROCS=1"}}
	if taskset, err := exec.LookPath("taskset"); err == nil {
		runs["taskset -c 0"] = []string{taskset, "-c", "0"}
	}
	for name, pre := range runs {
		args := append(pre, bins.paddock, "run", "--backend", string(b), "--log-level", "error", "--", "bash", "-c", script)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			t.Fatalf("%s: paddock did not finish in 20 s\n%s", name, out)
		}
		if err != nil || !strings.Contains(string(out), "owned=0") || !strings.Contains(string(out), "foreign=1") {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	if !f.Alive(t) {
		t.Fatal("foreign process died")
	}
}
