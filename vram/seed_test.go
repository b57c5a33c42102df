package vram

// Ports of the seed suite's sections 3 ("Desktop VRAM Safety & Preflight")
// and 6 ("Unconfigured VRAM Preflight Fail-Closed"). The seed's
// set_host_profile(total_vram_gb=24, desktop_headroom_gb=4) is
// Settings{TotalGB: 24, HeadroomGB: 4}; its _check_command_guards("...")
// on a shell string is PreflightCommandFiles on the argv the shell would exec;
// its "RLM_ALLOW_OVERBUDGET_VRAM=1 cmd" prefix is a leading VAR=1 word.

import (
	"strings"
	"testing"
)

// seedBudget is the seed's test profile: 24 GB total, 4 GB headroom,
// 20 GB available, on a desktop.
func seedBudget() Budget {
	return NewBudget(Host{HeadlessSource: "test"}, Settings{TotalGB: f64(24), HeadroomGB: f64(4), AllowOptIn: true})
}

func mustContain(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message lacks %q:\n%s", p, msg)
		}
	}
}

func argv(s string) []string { return strings.Fields(s) }

// test_vram_preflight_refuses_overbudget_naming_budget
func TestSeedVRAMPreflightRefusesOverBudgetNamingBudget(t *testing.T) {
	v := Preflight(24, "", seedBudget(), nil, true)
	if v.Allow || v.Rule != RuleOverBudget {
		t.Fatalf("24 GB on a 20 GB budget: %+v", v)
	}
	mustContain(t, v.Message,
		"VRAM preflight rejected",
		"requested 24.0 GB exceeds host VRAM budget",
		"20.0 GB available",
		"4.0 GB desktop headroom reserved",
		"24.0 GB total",
		"PADDOCK_ALLOW_OVERBUDGET_VRAM=1",
		"RLM_ALLOW_OVERBUDGET_VRAM=1",
		"Way out: request at most 20.0 GB")
}

// test_vram_preflight_accepts_within_budget
func TestSeedVRAMPreflightAcceptsWithinBudget(t *testing.T) {
	b := seedBudget()
	v := Preflight(16, "", b, nil, true)
	if !v.Allow || v.Rule != RuleWithinBudget {
		t.Fatalf("16 GB on a 20 GB budget: %+v", v)
	}
	r := NewReport(v, b, 16, nil)
	if r.Status != "accepted" || r.AvailableBudgetGB != 20.0 || r.RequestedGB != 16 || r.HeadroomGB != 4 || r.TotalGB != 24 {
		t.Errorf("report %+v", r)
	}
	mustContain(t, v.Message, "VRAM preflight accepted", "requested 16.0 GB fits the host VRAM budget (20.0 GB available")
}

// test_bash_guard_refuses_overbudget_gpu_command_naming_budget
func TestSeedGPUCommandOverBudgetRefusedNamingBudget(t *testing.T) {
	b := seedBudget()
	// 1. A 70B model: the weights alone (65.2 GB at the 1 byte/param floor,
	// 72.2 GB with overhead) exceed the 20 GB budget.
	v, est, ok := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, true)
	if !ok || v.Allow || est.Engine != "vLLM" {
		t.Fatalf("70B: ok=%v %+v", ok, v)
	}
	mustContain(t, v.Message,
		"VRAM preflight rejected `vllm serve meta-llama/Llama-3-70B`",
		"estimated VRAM requirement (72.2 GB) exceeds host VRAM budget (20.0 GB",
		"4.0 GB desktop headroom reserved",
		"RLM_ALLOW_OVERBUDGET_VRAM=1", "PADDOCK_ALLOW_OVERBUDGET_VRAM=1",
		"weights 70B params")
	// 2. --gpu-memory-utilization 0.95 on 24 GB = 22.8 GB > 20 GB.
	v, est, ok = PreflightCommandFiles(argv("python -m vllm --model meta-llama/Llama-3-8B --gpu-memory-utilization 0.95"), nil, b, Files{}, true)
	if !ok || v.Allow {
		t.Fatalf("0.95: ok=%v %+v", ok, v)
	}
	if !near(est.RequiredGB, 22.8) {
		t.Errorf("0.95 x 24 = %.2f, want 22.8", est.RequiredGB)
	}
	mustContain(t, v.Message, "estimated VRAM requirement (22.8 GB) exceeds host VRAM budget (20.0 GB",
		"--gpu-memory-utilization 0.83 (0.83 x 24.0 GB = 19.9 GB fits the 20.0 GB available)")
}

// test_bash_guard_allows_overbudget_gpu_with_explicit_opt_in
func TestSeedGPUCommandOverBudgetAllowedWithOptIn(t *testing.T) {
	b := seedBudget()
	for _, tc := range []struct {
		argv []string
		env  []string
		want string
	}{
		{argv("RLM_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B"), nil, OptInAliasEnv},
		{argv("env PADDOCK_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B"), nil, OptInEnv},
		{argv("vllm serve meta-llama/Llama-3-70B"), []string{"PADDOCK_ALLOW_OVERBUDGET_VRAM=1"}, OptInEnv},
	} {
		v, _, ok := PreflightCommandFiles(tc.argv, tc.env, b, Files{}, true)
		if !ok || !v.Allow || v.Rule != RuleOptIn || v.OptIn != tc.want {
			t.Errorf("%q env %q: %+v", tc.argv, tc.env, v)
		}
		mustContain(t, v.Message, "allowed by "+tc.want+"=1")
	}
	// The one opt-in rule (cmdline.OptInValue): 1, true, yes, on opt in, and
	// nothing else does; and a host may switch the opt-in off.
	for _, val := range []string{"yes", "TRUE", " on "} {
		if v, _, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), []string{OptInEnv + "=" + val}, b, Files{}, true); !v.Allow {
			t.Errorf("=%q did not opt in: %+v", val, v)
		}
	}
	for _, val := range []string{"0", "no", "off", "", "2"} {
		if v, _, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), []string{OptInEnv + "=" + val}, b, Files{}, true); v.Allow {
			t.Errorf("=%q opted in: %+v", val, v)
		}
	}
	v, _, _ := PreflightCommandFiles(argv("RLM_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, false)
	if v.Allow {
		t.Errorf("opt-in honoured with allowOptIn=false: %+v", v)
	}
	mustContain(t, v.Message, "opt-in is disabled on this host")
}

// test_bash_guard_allows_within_budget_gpu_command
func TestSeedGPUCommandWithinBudgetAllowed(t *testing.T) {
	v, est, ok := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.7"), nil, seedBudget(), Files{}, true)
	if !ok || !v.Allow || v.Rule != RuleWithinBudget {
		t.Fatalf("8B at 0.7: %+v", v)
	}
	// vLLM claims 0.7 x 24 = 16.8 GB; the 8B weights (7.5 GB, 8.7 with
	// overhead) fit inside it.
	if !near(est.RequiredGB, 16.8) || !near(est.WeightsGB, 7.45) {
		t.Errorf("required %.2f weights %.2f", est.RequiredGB, est.WeightsGB)
	}
}

// unconfigured returns the budget of a host with no profile values and no
// GPU detected, from the fixtures: an Intel laptop desktop, or a server.
func unconfigured(t *testing.T, fixture string) Budget {
	h, err := Detect(host(t, fixture), nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewBudget(h, Settings{AllowOptIn: true})
}

// test_unconfigured_vram_fails_closed_for_large_model
func TestSeedUnconfiguredFailsClosedForLargeModel(t *testing.T) {
	b := unconfigured(t, "intel-laptop")
	if b.Configured || b.Headless || b.AvailableGB != 14 {
		t.Fatalf("unconfigured desktop budget %+v", b)
	}
	v, _, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, true)
	if v.Allow || v.Rule != RuleUnconfigured {
		t.Fatalf("70B on an unconfigured desktop: %+v", v)
	}
	mustContain(t, v.Message, "exceeds host VRAM budget", "RLM_ALLOW_OVERBUDGET_VRAM=1",
		"set total_vram_gb (and desktop_headroom_gb) in the profile", "not configured", "16.0 GB desktop budget")
	// A plain request too.
	v = Preflight(20, "", b, nil, true)
	if v.Allow || v.Rule != RuleUnconfigured {
		t.Errorf("20 GB on an unconfigured desktop: %+v", v)
	}
	mustContain(t, v.Message, "set total_vram_gb")
}

// test_unconfigured_vram_permits_small_model
func TestSeedUnconfiguredPermitsSmallModel(t *testing.T) {
	b := unconfigured(t, "intel-laptop")
	v, est, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.5"), nil, b, Files{}, true)
	if !v.Allow {
		t.Fatalf("8B at 0.5 unconfigured: %+v", v)
	}
	// 0.5 x 16 = 8 GB; the weights with overhead (8.7 GB) are larger.
	if !near(est.RequiredGB, 8.70) {
		t.Errorf("required %.2f", est.RequiredGB)
	}
	if v := Preflight(8, "", b, nil, true); !v.Allow {
		t.Errorf("8 GB plain request: %+v", v)
	}
}

// test_unconfigured_vram_permits_large_model_with_opt_in
func TestSeedUnconfiguredPermitsLargeModelWithOptIn(t *testing.T) {
	b := unconfigured(t, "intel-laptop")
	v, _, _ := PreflightCommandFiles(argv("RLM_ALLOW_OVERBUDGET_VRAM=1 vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, true)
	if !v.Allow || v.Rule != RuleOptIn {
		t.Errorf("%+v", v)
	}
}

// test_unconfigured_vram_headless_allows_normal_work
func TestSeedUnconfiguredHeadlessAllowsNormalWork(t *testing.T) {
	b := unconfigured(t, "none")
	if b.Configured || !b.Headless || b.AvailableGB != 80 || b.HeadroomGB != 0 {
		t.Fatalf("unconfigured headless budget %+v", b)
	}
	// 70B: max(0.92 x 80 = 73.6, 72.2 weights with overhead) <= 80.
	v, est, _ := PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-70B"), nil, b, Files{}, true)
	if !v.Allow || !near(est.RequiredGB, 73.6) {
		t.Errorf("70B on headless: %.2f %+v", est.RequiredGB, v)
	}
	// A runaway request fails closed even there.
	v, _, _ = PreflightCommandFiles(argv("vllm serve meta-llama/Llama-3-405B"), nil, b, Files{}, true)
	if v.Allow || v.Rule != RuleUnconfigured {
		t.Fatalf("405B on headless: %+v", v)
	}
	mustContain(t, v.Message, "RLM_ALLOW_OVERBUDGET_VRAM=1", "0.0 GB desktop headroom reserved (headless host)", "80.0 GB headless budget")
}
