package vram

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paddock-dev/paddock/audit"
)

func TestPreflightPerGPUMessages(t *testing.T) {
	b := detectedBudget(t, "2gpu-desktop")
	v, est, ok := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-8B -tp 2"), nil, b, Files{}, true)
	if !ok || v.Allow || !est.PerGPU {
		t.Fatalf("%+v %+v", v, est)
	}
	mustContain(t, v.Message,
		"estimated VRAM requirement (22.1 GB on GPU 0; 44.2 GB on 2 GPUs in all) exceeds host VRAM budget (21.6 GB available on GPU 0 (NVIDIA GeForce RTX 3090): 24.0 GB total, 2.4 GB desktop headroom reserved)",
		"display active on GPU 0", "--gpu-memory-utilization 0.90 (0.90 x 24.0 GB = 21.6 GB fits the 21.6 GB available)")
	// One GPU: the seed's wording, with the GPU named.
	v, _, _ = PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-8B"), nil, b, Files{}, true)
	mustContain(t, v.Message, "estimated VRAM requirement (22.1 GB) exceeds host VRAM budget (21.6 GB available on GPU 0")
}

func TestPreflightReportsForeignUse(t *testing.T) {
	b := detectedBudget(t, "2gpu-headless")
	v, _, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-8B -tp 2 --gpu-memory-utilization 0.7"), nil, b, Files{}, true)
	if !v.Allow {
		t.Fatalf("%+v", v)
	}
	// GPU 1 holds 39.2 GB of someone else's: 0.7 x 80 = 56 GB will not be free.
	mustContain(t, v.Message, "39.2 GB of VRAM on GPU 1 is already in use by other processes", "leaving 40.8 GB free")
	if v := Preflight(30, "", b, nil, true); strings.Contains(v.Message, "already in use") {
		t.Errorf("30 GB fits beside the used memory: %s", v.Message)
	}
}

func TestPreflightNotGPUAndNothingToCheck(t *testing.T) {
	v, _, ok := PreflightCommandFiles(argv("make test"), nil, seedBudget(), Files{}, true)
	if ok || !v.Allow || v.Rule != RuleNotGPU {
		t.Errorf("make: %+v", v)
	}
	v, _, ok = PreflightCommandFiles(argv("ollama run llama3"), nil, seedBudget(), Files{}, true)
	if !ok || !v.Allow || !strings.Contains(v.Message, "nothing to check") {
		t.Errorf("unknown ollama tag: %+v", v)
	}
}

func TestPreflightWhatIsQuoted(t *testing.T) {
	v := Preflight(30, "profile check", seedBudget(), nil, true)
	mustContain(t, v.Message, "VRAM preflight rejected `profile check`: requested 30.0 GB exceeds host VRAM budget")
	v = Preflight(30, "profile check", seedBudget(), []string{"PADDOCK_ALLOW_OVERBUDGET_VRAM=1"}, true)
	if !v.Allow || v.OptIn != OptInEnv {
		t.Errorf("%+v", v)
	}
	mustContain(t, v.Message, "VRAM preflight: `profile check`: requested 30.0 GB exceeds host VRAM budget", "allowed by PADDOCK_ALLOW_OVERBUDGET_VRAM=1")
}

func TestReportJSON(t *testing.T) {
	b := seedBudget()
	v, est, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, true)
	raw, err := json.Marshal(NewReport(v, b, 0, &est))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"status": "rejected", "available_budget_gb": 20.0, "requested_gb": 72.21, "headroom_gb": 4.0, "total_gb": 24.0, "engine": "vLLM", "rule": string(RuleOverBudget)} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if _, ok := m["message"].(string); !ok {
		t.Error("no message")
	}
}

func TestSelectDevices(t *testing.T) {
	all := []GPUBudget{{Index: 0}, {Index: 1}, {Index: 2}}
	for spec, want := range map[string]string{"": "[]", "1": "[1]", "2,0": "[2 0]", "1,7,0": "[1]", "-1": "[]", "0,-1,2": "[0]"} {
		sel, ok := selectDevices(all, spec)
		var got []int
		for _, g := range sel {
			got = append(got, g.Index)
		}
		if !ok || fmt.Sprint(got) != want {
			t.Errorf("selectDevices(%q) = %v %v, want %s", spec, got, ok, want)
		}
	}
	if _, ok := selectDevices(all, "GPU-8f6b2a1c-0000"); ok {
		t.Error("UUID list mapped")
	}
}

// A llama.cpp model that exists but cannot be read (a named pipe, a
// device) and whose name gives no size cannot be estimated: the preflight
// refuses it (failing closed) with a message naming the file and why, and
// the opt-in lets it through. A missing file is no reason to refuse (the
// exec fails by itself), nor is an unreadable file whose name gives a size.
func TestPreflightUnreadableModel(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("needs mkfifo: %v", err)
	}
	sized := filepath.Join(dir, "llama-3-8b.Q4_K_M.gguf")
	if err := syscall.Mkfifo(sized, 0o600); err != nil {
		t.Fatal(err)
	}
	b := NewBudget(Host{}, Settings{TotalGB: ptr(24.0), HeadroomGB: ptr(4.0)})
	files := SafeFiles(nil, ReadLimits{})
	tests := []struct {
		cmd   string
		env   []string
		allow bool
		rule  audit.Rule
		has   []string
	}{
		{"llama-server -m " + fifo, nil, false, RuleUndecidable, []string{fifo + " is a named pipe, not a regular file", "cannot estimate", "Way out:", OptInEnv + "=1"}},
		{"llama-server -m /dev/zero -ngl 99", nil, false, RuleUndecidable, []string{"/dev/zero is a character device, not a regular file"}},
		{"llama-server -m " + fifo, []string{OptInEnv + "=1"}, true, RuleOptIn, []string{"cannot be estimated", "explicit opt-in"}},
		{"llama-server -m " + filepath.Join(dir, "missing.gguf"), nil, true, RuleWithinBudget, nil},
		{"llama-server -m " + sized, nil, true, RuleWithinBudget, []string{"estimated from its name"}},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			v, _, ok := PreflightCommandFiles(strings.Fields(tc.cmd), tc.env, b, files, true)
			if !ok || v.Allow != tc.allow || v.Rule != tc.rule {
				t.Fatalf("ok=%v allow=%v rule=%q; want allow=%v rule=%q\n%s", ok, v.Allow, v.Rule, tc.allow, tc.rule, v.Message)
			}
			for _, want := range tc.has {
				if !strings.Contains(v.Message, want) {
					t.Errorf("message lacks %q:\n%s", want, v.Message)
				}
			}
		})
	}
}
