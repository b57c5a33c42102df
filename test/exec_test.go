package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// standins makes a directory that is the whole PATH of the agent: stand-in
// scripts for names (each appends its argv to the marker file when it runs)
// and links to the few real tools the test scripts need. No other directory
// is on PATH, so when paddock refuses a stand-in, a shell that goes on to
// try the next PATH entry finds no real power command there.
func standins(t *testing.T, names ...string) (dir, marker string) {
	t.Helper()
	dir = t.TempDir()
	marker = filepath.Join(dir, "marker")
	for _, n := range names {
		script := "#!/bin/sh\necho \"" + n + " $*\" >> " + marker + "\n"
		if err := os.WriteFile(filepath.Join(dir, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"bash", "sh", "env"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
		if err := os.Symlink(real, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, marker
}

// runWithPath runs a script under paddock with PATH set to dir alone.
func (b backend) runWithPath(t *testing.T, dir string, extra []string, script string) result {
	t.Helper()
	t.Setenv("PATH", dir)
	args := append(extra, "--", "bash", "-c", script)
	return b.runPaddock(t, args...)
}

func markerLines(marker string) string {
	b, _ := os.ReadFile(marker)
	return string(b)
}

// powerControlRefusedAtExec covers the seed's power-control tests through
// the kernel path: each command is refused at execve with EPERM unless the
// opt-in is in its environment, and the stand-in never runs when refused.
func powerControlRefusedAtExec(t *testing.T, b backend) {
	b.require(t)
	dir, marker := standins(t, "reboot", "poweroff", "shutdown", "halt", "init", "systemctl", "sudo")
	dirEnv := filepath.Join(dir, "env") // an absolute path to env, which then searches PATH
	refused := []string{"reboot", "poweroff", "shutdown -h now", "halt", "init 0", "init 6",
		"systemctl reboot", "systemctl poweroff", "systemctl halt", "systemctl suspend", "systemctl hibernate",
		"sh -c 'systemctl poweroff'", "env systemctl kexec", dirEnv + " reboot"}
	for _, c := range refused {
		t.Run(c, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, nil, c+"; echo rc=$?")
			if m := markerLines(marker); m != "" {
				t.Fatalf("the stand-in ran: %q\n%s", m, r)
			}
			for _, want := range []string{"power-control commands", "require explicit user intent", "PADDOCK_ALLOW_POWER_CONTROL=1"} {
				if !strings.Contains(r.callerStderr(), want) {
					t.Errorf("message lacks %q\n%s", want, r)
				}
			}
			if !strings.Contains(r.journal, `"action":"exec_denied"`) || !strings.Contains(r.journal, `"rule":"power_control"`) {
				t.Errorf("journal lacks exec_denied/power_control:\n%s", r.journal)
			}
		})
	}
	for _, c := range []string{"PADDOCK_ALLOW_POWER_CONTROL=1 reboot", "RLM_ALLOW_POWER_CONTROL=1 systemctl poweroff", "PRIME_ALLOW_POWER_CONTROL=1 shutdown -h now"} {
		t.Run(c, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, nil, c)
			if markerLines(marker) == "" || r.code != 0 {
				t.Fatalf("explicit intent did not let the stand-in run\n%s", r)
			}
			if !strings.Contains(r.journal, `"action":"opt_in_used"`) {
				t.Errorf("journal lacks opt_in_used:\n%s", r.journal)
			}
		})
	}
}

// protectedServicesRefusedAtExec covers the seed's protected-service and
// systemctl-verb tests through the kernel path, with a profile naming the
// services to survive.
func protectedServicesRefusedAtExec(t *testing.T, b backend) {
	b.require(t)
	dir, marker := standins(t, "systemctl")
	prof := filepath.Join(t.TempDir(), "profile.toml")
	if err := os.WriteFile(prof, []byte(`name = "desktop"
services_to_survive = ["display-manager", "sway", "hyprland", "pipewire", "gdm", "logind"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := []string{"systemctl disable display-manager", "systemctl stop sway", "systemctl mask pipewire.service"}
	for _, verb := range []string{"restart", "try-restart", "reload-or-restart", "isolate"} {
		for _, unit := range []string{"display-manager", "gdm.service", "logind"} {
			refused = append(refused, "systemctl "+verb+" "+unit)
		}
	}
	for _, c := range refused {
		t.Run(c, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, []string{"--profile", prof}, c)
			if m := markerLines(marker); m != "" {
				t.Fatalf("the stand-in ran: %q\n%s", m, r)
			}
			if e := r.callerStderr(); !strings.Contains(e, "PADDOCK_ALLOW_POWER_CONTROL=1") || !(strings.Contains(e, "protected desktop service") || strings.Contains(e, "isolate")) {
				t.Errorf("message lacks the protected service and the opt-in\n%s", r)
			}
		})
	}
	for _, c := range []string{"systemctl restart nginx", "systemctl try-restart my-worker.service"} {
		t.Run(c, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, []string{"--profile", prof}, c)
			if markerLines(marker) == "" || r.code != 0 {
				t.Fatalf("an unrelated service was refused\n%s", r)
			}
		})
	}
}

// rebootSyscallRefused: reboot(2) with invalid magic numbers gets EPERM
// from paddock; with the opt-in it reaches the kernel, which answers
// EINVAL for the magic numbers to a caller with CAP_SYS_BOOT, and EPERM
// before it looks at them to one without (an unprivileged agent): then
// the journal tells the two EPERMs apart.
func rebootSyscallRefused(t *testing.T, b backend) {
	b.require(t)
	r := b.sh(t, `$AGENTHELPER reboot-invalid`)
	if !strings.Contains(r.stdout, "err EPERM") {
		t.Fatalf("reboot(2) was not refused by paddock\n%s", r)
	}
	if !strings.Contains(r.journal, `"action":"power_denied"`) {
		t.Errorf("journal lacks power_denied:\n%s", r.journal)
	}
	// The helper's capabilities are those of any program the agent runs.
	r = b.sh(t, `grep CapEff /proc/self/status; PADDOCK_ALLOW_POWER_CONTROL=1 $AGENTHELPER reboot-invalid`)
	eff, err := capMask(r.stdout, "CapEff")
	if err != nil {
		t.Fatalf("the agent's CapEff: %v\n%s", err, r)
	}
	const capSysBoot = 22
	kernel := "err EPERM"
	if eff&(1<<capSysBoot) != 0 {
		kernel = "err EINVAL"
	}
	if !strings.Contains(r.stdout, kernel) || strings.Contains(r.journal, `"action":"power_denied"`) || !strings.Contains(r.journal, `"action":"opt_in_used"`) {
		t.Fatalf("with the opt-in the call should reach the kernel, which answers %q to CapEff %#x, and be journaled as opt_in_used\n%s\njournal:\n%s", kernel, eff, r, r.journal)
	}
}

// vramPreflightAtExec: a stand-in vllm on PATH is refused or allowed as
// the estimate against the profile's budget says (24 GB, 4 GB headroom).
func vramPreflightAtExec(t *testing.T, b backend) {
	b.require(t)
	dir, marker := standins(t, "vllm")
	prof := filepath.Join(t.TempDir(), "profile.toml")
	if err := os.WriteFile(prof, []byte("name = \"test-gpu\"\ntotal_vram_gb = 24.0\ndesktop_headroom_gb = 4.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd     string
		allowed bool
	}{
		{"vllm serve meta-llama/Llama-3-70B", false},
		{"vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.95", false},
		{"vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.7", true},
		{"PADDOCK_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B", true},
		{"RLM_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B", true},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, []string{"--profile", prof}, tc.cmd)
			ran := markerLines(marker) != ""
			if ran != tc.allowed {
				t.Fatalf("stand-in ran = %v, want %v\n%s", ran, tc.allowed, r)
			}
			if !tc.allowed {
				for _, want := range []string{"VRAM preflight rejected", "exceeds host VRAM budget", "20.0 GB available", "4.0 GB desktop headroom reserved", "24.0 GB total", "PADDOCK_ALLOW_OVERBUDGET_VRAM=1"} {
					if !strings.Contains(r.callerStderr(), want) {
						t.Errorf("message lacks %q\n%s", want, r)
					}
				}
			}
		})
	}
}

// TestBrokenProfileStopsBeforeStart: a profile with an unknown key stops
// paddock before the agent runs, naming the file, line and key.
func TestBrokenProfileStopsBeforeStart(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "profile.toml")
	if err := os.WriteFile(prof, []byte("name = \"x\"\ntotal_vram_gb = -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	r := backend("auto").runPaddock(t, "--profile", prof, "--", "touch", marker)
	if r.code == 0 || !strings.Contains(r.stderr, prof+":2") || !strings.Contains(r.stderr, "total_vram_gb") {
		t.Fatalf("want a non-zero exit naming %s:2 and total_vram_gb\n%s", prof, r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent ran despite the broken profile")
	}
}

// missingPowerCommandIsENOENT: an exec of a path that does not exist fails
// with ENOENT, as without paddock, even when the guard would refuse what it
// names: shells and execvp try every PATH entry, and each miss is not a
// refusal (no message, no journal record).
func missingPowerCommandIsENOENT(t *testing.T, b backend) {
	b.require(t)
	r := b.sh(t, `/nonexistent/reboot; echo rc=$?`)
	if !strings.Contains(r.stdout, "rc=127") || !strings.Contains(r.stderr, "No such file or directory") {
		t.Errorf("want ENOENT (exit 127) for a missing path\n%s", r)
	}
	if strings.Contains(r.journal, "exec_denied") || strings.Contains(r.stderr, "paddock refused exec") {
		t.Errorf("a missing path was reported as a refusal\n%s\njournal:\n%s", r, r.journal)
	}
}

// agentCommandRefusedAtExec: the agent command itself is an exec paddock
// decides. A power command given straight to paddock run is refused like
// one the agent runs: exit 126 (a command that cannot be executed), the
// message on stderr, the journal record, and the stand-in never runs.
func agentCommandRefusedAtExec(t *testing.T, b backend) {
	b.require(t)
	dir, marker := standins(t, "reboot")
	t.Setenv("PATH", dir)
	r := b.runPaddock(t, "--", "reboot")
	if m := markerLines(marker); m != "" {
		t.Fatalf("the stand-in ran: %q\n%s", m, r)
	}
	if r.code != 126 {
		t.Errorf("exit %d, want 126\n%s", r.code, r)
	}
	if !strings.Contains(r.journal, `"action":"exec_denied"`) || !strings.Contains(r.journal, `"rule":"power_control"`) {
		t.Errorf("journal lacks exec_denied/power_control:\n%s", r.journal)
	}
	t.Setenv("PADDOCK_ALLOW_POWER_CONTROL", "1")
	if r := b.runPaddock(t, "--", "reboot", "now"); r.code != 0 || markerLines(marker) != "reboot now\n" {
		t.Errorf("with the opt-in: exit %d, stand-in said %q\n%s", r.code, markerLines(marker), r)
	}
	// A paddock that is not root may not take a descriptor of its own
	// fork before the fork's exec (pidfd_getfd needs ptrace access, and
	// the fork is not dumpable yet) under the seccomp backend: the message
	// then reaches stderr only as paddock's log line (docs/limits.md).
	if b == "seccomp" && os.Geteuid() != 0 {
		t.Skip("needs root for the message on the agent command's own stderr under seccomp: an unprivileged paddock cannot take its fork's descriptor before the fork's exec")
	}
	for _, want := range []string{"power-control commands", "PADDOCK_ALLOW_POWER_CONTROL=1", "operation not permitted"} {
		if !strings.Contains(r.callerStderr(), want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
}

// unreadableModelHoldsNothingUp: an agent starts a llama.cpp server on a
// named pipe nobody writes, on a pipe that holds data and never ends (a
// file that never finishes reading), and on /dev/zero. Its next signal is
// answered at once, and the exec's decision ends well within the read
// deadline: refused, since nothing says how big the model is, with a
// message naming the file and why it could not be read.
func unreadableModelHoldsNothingUp(t *testing.T, b backend) {
	b.require(t)
	dir, marker := standins(t, "llama-server")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("needs sleep: %v", err)
	}
	if err := os.Symlink(sleep, filepath.Join(dir, "sleep")); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "profile.toml")
	if err := os.WriteFile(prof, []byte("name = \"test-gpu\"\ntotal_vram_gb = 24.0\ndesktop_headroom_gb = 4.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "model")
	full := filepath.Join(t.TempDir(), "model")
	for _, p := range []string{empty, full} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("needs mkfifo: %v", err)
		}
	}
	// A reader of full finds data, and never its end: the test holds the
	// write side open.
	w, err := os.OpenFile(full, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("GGUF\x03\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, model, why string }{
		{"pipe without writer", empty, "is a named pipe, not a regular file"},
		{"pipe without end", full, "is a named pipe, not a regular file"},
		{"dev zero", "/dev/zero", "is a character device, not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			r := b.runWithPath(t, dir, []string{"--profile", prof},
				`llama-server -m `+tc.model+` -ngl 99 & sleep 600 & kill $!; echo "kill status $?"; wait %1; echo "server status $?"`)
			if !strings.Contains(r.stdout, "kill status 0") {
				t.Fatalf("the agent's kill of its own sleep did not succeed\n%s", r)
			}
			if markerLines(marker) != "" || !strings.Contains(r.stdout, "server status 126") {
				t.Fatalf("llama-server ran (or was not refused) though its model cannot be read\n%s", r)
			}
			rec := ""
			for _, line := range strings.Split(r.journal, "\n") {
				if strings.Contains(line, `"action":"exec_denied"`) && strings.Contains(line, `"rule":"vram_undecidable"`) {
					rec = line
				}
			}
			if rec == "" {
				t.Fatalf("no exec_denied record with rule vram_undecidable\n%s", r)
			}
			for _, want := range []string{tc.model + " " + tc.why, "cannot estimate", "PADDOCK_ALLOW_OVERBUDGET_VRAM=1"} {
				if !strings.Contains(rec, want) {
					t.Errorf("the refusal lacks %q: %s", want, rec)
				}
			}
		})
	}
}

// nonDumpableCallerExecs: a caller that made itself non-dumpable (as
// ssh-agent and gpg-agent do) execs a program, with paddock and the agent
// running as the same unprivileged user, so that paddock may not read the
// exec's strings. By default the exec runs and is journaled as
// exec_unread; with --strict-exec it is refused as undecidable.
func nonDumpableCallerExecs(t *testing.T, b backend) {
	b.require(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("needs python3: %v", err)
	}
	dir := nobodyDir(t)
	script := `import ctypes, os
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
try:
    os.execv("/bin/echo", ["echo", "ran" + "-unread"])
except OSError as e:
    print("exec failed:", e.strerror)`
	for _, strict := range []bool{false, true} {
		journal := filepath.Join(dir, "journal-"+strconv.FormatBool(strict)+".jsonl")
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", bins.paddock, "run", "--backend", string(b), "--journal", journal}
		if strict {
			args = append(args, "--strict-exec")
		}
		cmd := exec.Command("setpriv", append(args, "--", "python3", "-c", script)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_RUNTIME_DIR=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		records := readFile(journal)
		// Whole lines of the agent's stdout: paddock's log goes to stderr.
		lines := strings.Split(stdout.String(), "\n")
		switch {
		case !strict && (!slices.Contains(lines, "ran-unread") || !strings.Contains(records, `"action":"exec_unread"`)):
			t.Errorf("the non-dumpable caller's exec did not run, or was not journaled as exec_unread\nstdout:\n%s\nstderr:\n%s\njournal:\n%s", &stdout, &stderr, records)
		case strict && (slices.Contains(lines, "ran-unread") || !strings.Contains(stdout.String(), "exec failed: Operation not permitted") || !strings.Contains(records, `"rule":"undecidable"`)):
			t.Errorf("--strict-exec: the non-dumpable caller's exec was not refused as undecidable\nstdout:\n%s\nstderr:\n%s\njournal:\n%s", &stdout, &stderr, records)
		}
	}
}
