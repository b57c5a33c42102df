package vram

import (
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/cmdline"
)

// wrapperPrefixes holds, for every wrapper the guard sees through, a
// command line that runs what follows it, options included.
var wrapperPrefixes = map[string]string{
	"busybox":               "busybox env",
	"builtin":               "builtin",
	"chroot":                "chroot --userspec=ai /srv/root",
	"chrt":                  "chrt -f 10",
	"command":               "command",
	"conda":                 "conda run -n gpu",
	"dbus-run-session":      "dbus-run-session --",
	"distrobox-host-exec":   "distrobox-host-exec",
	"doas":                  "doas -u ai",
	"env":                   "env -i HF_HOME=/tmp/hf",
	"exec":                  "exec -a server",
	"flatpak-spawn":         "flatpak-spawn --host --env=HF_HOME=/tmp/hf",
	"flock":                 "flock L",
	"hatch":                 "hatch run -e gpu",
	"ionice":                "ionice -c 3",
	"ld-linux-aarch64.so.1": "ld-linux-aarch64.so.1 --library-path /opt/lib",
	"ld-linux-x86-64.so.2":  "ld-linux-x86-64.so.2 --library-path /opt/lib",
	"ld-linux.so.2":         "ld-linux.so.2",
	"ld.so":                 "ld.so --preload libfoo.so",
	"mamba":                 "mamba run -p /opt/env",
	"micromamba":            "micromamba run -n gpu",
	"nice":                  "nice -n 5",
	"nohup":                 "nohup",
	"nsenter":               "nsenter -t 1 -m",
	"pdm":                   "pdm run",
	"pipx":                  "pipx run --spec vllm",
	"pixi":                  "pixi run -e cuda",
	"pkexec":                "pkexec --user ai",
	"poetry":                "poetry run",
	"run0":                  "run0 --setenv=HF_HOME=/tmp/hf",
	"runuser":               "runuser -u ai --",
	"setsid":                "setsid -f",
	"stdbuf":                "stdbuf -oL",
	"strace":                "strace -f -o /tmp/trace",
	"sudo":                  "sudo -E",
	"systemd-inhibit":       "systemd-inhibit --what=idle",
	"systemd-run":           "systemd-run --scope",
	"taskset":               "taskset -c 0",
	"time":                  "time -o /tmp/t",
	"timeout":               "timeout 10",
	"unshare":               "unshare -U",
	"uv":                    "uv run --with vllm",
	"uvx":                   "uvx --from vllm",
	"watch":                 "watch -x",
	"xargs":                 "xargs -0",
}

// shellStringWrappers run a shell string, not an argv: at exec level the
// shell's own exec of the workload is what paddock checks, so the wrapper
// itself is not a GPU workload.
var shellStringWrappers = map[string]string{
	"eval": "eval",
	"su":   "su ai -c",
}

// Every wrapper the guard unwraps reaches the VRAM estimate: the list comes
// from the command-line reader's own table (package cmdline), which the
// guard reads with too, so a wrapper added there fails here until it is
// given a case.
func TestEstimateSeesThroughEveryWrapper(t *testing.T) {
	workloads := []struct {
		argv   string
		engine string
	}{
		{"vllm serve meta-llama/Llama-3.1-70B-Instruct", "vLLM"},
		{"llama-server -m model.gguf", "llama.cpp"},
		{"python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-70B-Instruct", "vLLM"},
	}
	files := Files{Size: sizes(map[string]int64{"model.gguf": 4 << 30})}
	var all []string
	for _, name := range cmdline.Wrappers() {
		prefix, ok := wrapperPrefixes[name]
		shell, isShell := shellStringWrappers[name]
		switch {
		case !ok && !isShell:
			t.Errorf("guard unwraps %s: give it a case in wrapperPrefixes (or shellStringWrappers)", name)
			continue
		case isShell:
			for _, w := range workloads {
				argv := append(strings.Fields(shell), w.argv)
				if IsGPUWorkload(argv) {
					t.Errorf("%q: a shell string is checked when the shell execs it, not here", argv)
				}
			}
			continue
		}
		all = append(all, prefix)
		for _, w := range workloads {
			checkWrapped(t, prefix+" "+w.argv, w.engine, files)
		}
	}
	for name := range wrapperPrefixes {
		if !contains(cmdline.Wrappers(), name) {
			t.Errorf("wrapperPrefixes has %s, which the guard does not unwrap", name)
		}
	}
	// All of them at once, one inside the other.
	checkWrapped(t, strings.Join(all, " ")+" "+workloads[0].argv, workloads[0].engine, files)
}

func checkWrapped(t *testing.T, cmd, engine string, files Files) {
	t.Helper()
	argv := strings.Fields(cmd)
	if !IsGPUWorkload(argv) {
		t.Errorf("IsGPUWorkload(%q) = false", cmd)
		return
	}
	est, ok := estimateCommand(argv, nil, seedBudget(), files)
	if !ok || est.Engine != engine || est.RequiredGB <= 0 {
		t.Errorf("estimateCommand(%q) = engine %q, %.1f GB, %v; want %s", cmd, est.Engine, est.RequiredGB, ok, engine)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The workload runs with the environment the wrappers give it: sudo and
// env -i drop the caller's CUDA_VISIBLE_DEVICES, assignments set it.
func TestEstimateWrapperEnvironment(t *testing.T) {
	caller := []string{"CUDA_VISIBLE_DEVICES=1"}
	runEstCases(t, []estCase{
		{name: "caller's choice", cmd: "vllm serve meta-llama/Llama-3-8B", env: caller, budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{1}, allow: true},
		{name: "sudo -E keeps it", cmd: "sudo -E chrt -f 10 vllm serve meta-llama/Llama-3-8B", env: caller, budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{1}, allow: true},
		{name: "sudo resets it", cmd: "sudo chrt -f 10 vllm serve meta-llama/Llama-3-8B", env: caller, budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{0}, allow: false},
		{name: "sudo VAR=x sets it", cmd: "sudo CUDA_VISIBLE_DEVICES=1 vllm serve meta-llama/Llama-3-8B", budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{1}, allow: true},
		{name: "env -i drops it", cmd: "env -i HOME=/root vllm serve meta-llama/Llama-3-8B", env: caller, budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{0}, allow: false},
		{name: "systemd-run --setenv sets it", cmd: "systemd-run --scope --setenv=CUDA_VISIBLE_DEVICES=1 vllm serve meta-llama/Llama-3-8B", budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{1}, allow: true},
		{name: "the opt-in goes after sudo", cmd: "sudo PADDOCK_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B", allow: true,
			engine: "vLLM", required: 72.21, devices: []int{-1}},
	}, nil)
}
