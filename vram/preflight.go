package vram

import (
	"github.com/paddock-dev/paddock/audit"

	"fmt"
	"math"
	"strings"

	"github.com/paddock-dev/paddock/cmdline"
)

// The opt-in that lets an over-budget workload start: set to 1 in the
// workload's environment (or as a VAR=1 prefix of its command line). The
// older name is accepted as an alias.
const (
	OptInEnv      = "PADDOCK_ALLOW_OVERBUDGET_VRAM"
	OptInAliasEnv = "RLM_ALLOW_OVERBUDGET_VRAM"
)

// Verdict rules (the journal's "rule"; package audit holds the vocabulary).
const (
	RuleWithinBudget = audit.RuleVRAMWithinBudget
	RuleOverBudget   = audit.RuleVRAMOverBudget
	// RuleUnconfigured: over the conservative default budget of a host whose
	// VRAM is not configured (fail closed).
	RuleUnconfigured = audit.RuleVRAMUnconfigured
	// RuleOptIn: over budget, allowed by the explicit opt-in.
	RuleOptIn = audit.RuleVRAMOptIn
	// RuleNotGPU: not a GPU workload paddock knows; nothing was checked.
	RuleNotGPU = audit.RuleNotGPU
	// RuleUndecidable: a workload paddock cannot estimate (Estimate.Unknown).
	RuleUndecidable = audit.RuleVRAMUndecidable
)

// Verdict is the preflight's answer.
type Verdict struct {
	Allow bool
	Rule  audit.Rule
	// Message says what was checked or refused, why with the numbers, and
	// the way out; it is the text an agent sees on a refusal (with EPERM,
	// or exit status 1 from paddock preflight).
	Message string
	// OptIn is the opt-in variable that allowed an over-budget workload
	// ("" unless Rule is RuleOptIn).
	OptIn string
}

// OptedIn returns the opt-in variable set to a true value in env
// (cmdline.OptInValue, the one rule for every opt-in), "" when none is.
func OptedIn(env map[string]string) string {
	for _, k := range []string{OptInEnv, OptInAliasEnv} {
		if cmdline.OptInValue(env[k]) {
			return k
		}
	}
	return ""
}

const epsilonGB = 1e-6

// Preflight checks a plain request of requiredGB against the budget. what,
// when not empty, names what asked (it is quoted in the message). env is
// the requester's environment, for the opt-in; allowOptIn=false ignores it.
func Preflight(requiredGB float64, what string, b Budget, env []string, allowOptIn bool) Verdict {
	subject := ""
	if what != "" {
		subject = " `" + what + "`"
	}
	c := check{
		subject:  subject,
		req:      fmt.Sprintf("requested %.1f GB", requiredGB),
		over:     requiredGB > b.AvailableGB+epsilonGB,
		budget:   poolPhrase(b),
		used:     usedNote("", b.UsedGB, requiredGB, b.TotalGB),
		wayOut:   []string{fmt.Sprintf("request at most %.1f GB", b.AvailableGB)},
		optInVar: OptedIn(cmdline.EnvMap(env)),
	}
	return c.verdict(b, allowOptIn)
}

// PreflightCommandFiles estimates argv's VRAM and checks it against the
// budget: per GPU when the budget knows the GPUs, against the pool
// otherwise. env is the command's environment (KEY=VALUE; it holds
// CUDA_VISIBLE_DEVICES, OLLAMA_GPU_OVERHEAD, TGI's settings); f reads the
// model files argv names (Size; Open for GGUF headers, when set).
// ok=false: not a GPU workload; the Verdict then allows. The opt-in is
// read from env and from VAR=1 words leading argv.
func PreflightCommandFiles(argv, env []string, b Budget, f Files, allowOptIn bool) (Verdict, Estimate, bool) {
	run := cmdline.Unwrap(argv, env)
	est, ok := estimate(run, argv, b, f)
	if !ok {
		return Verdict{Allow: true, Rule: RuleNotGPU, Message: "not a GPU workload paddock estimates: no VRAM check"}, est, false
	}
	c := check{
		subject:  " `" + est.Command + "`",
		optInVar: OptedIn(run.Env),
		detail:   estimateDetail(est),
		wayOut:   est.WayOut,
	}
	if est.Unknown != "" {
		return c.undecidable(est.Unknown, allowOptIn), est, true
	}
	switch {
	case len(est.Devices) == 0:
		c.req = "nothing to check"
		c.budget = poolPhrase(b)
	case est.PerGPU:
		worst := est.Devices[0]
		for _, d := range est.Devices {
			if d.RequiredGB-d.AvailableGB > worst.RequiredGB-worst.AvailableGB {
				worst = d
			}
		}
		c.over = worst.RequiredGB > worst.AvailableGB+epsilonGB
		if len(est.Devices) == 1 {
			c.req = fmt.Sprintf("estimated VRAM requirement (%.1f GB)", worst.RequiredGB)
		} else {
			c.req = fmt.Sprintf("estimated VRAM requirement (%.1f GB on GPU %d; %.1f GB on %d GPUs in all)", worst.RequiredGB, worst.Index, est.RequiredGB, len(est.Devices))
		}
		c.budget = gpuPhrase(worst)
		var notes []string
		for _, d := range est.Devices {
			for _, g := range b.PerGPU {
				if g.Index == d.Index && g.Vendor == d.Vendor {
					notes = append(notes, usedNote(fmt.Sprintf(" on GPU %d", g.Index), g.UsedGB, d.RequiredGB, g.TotalGB))
				}
			}
		}
		c.used = join(notes...)
	default:
		c.over = est.RequiredGB > b.AvailableGB+epsilonGB
		c.req = fmt.Sprintf("estimated VRAM requirement (%.1f GB)", est.RequiredGB)
		c.budget = poolPhrase(b)
		c.used = usedNote("", b.UsedGB, est.RequiredGB, b.TotalGB)
	}
	return c.verdict(b, allowOptIn), est, true
}

type check struct {
	subject  string
	req      string
	over     bool
	budget   string
	used     string
	detail   string
	wayOut   []string
	optInVar string
}

func (c check) verdict(b Budget, allowOptIn bool) Verdict {
	if !c.over {
		msg := fmt.Sprintf("VRAM preflight accepted%s: %s fits the host VRAM budget (%s).", c.subject, c.req, c.budget)
		if c.req == "nothing to check" {
			msg = fmt.Sprintf("VRAM preflight accepted%s: nothing to check.", c.subject)
		}
		return Verdict{Allow: true, Rule: RuleWithinBudget, Message: join(msg, c.used, c.detail)}
	}
	if allowOptIn && c.optInVar != "" {
		msg := fmt.Sprintf("VRAM preflight: %s%s exceeds host VRAM budget (%s); allowed by %s=1 (explicit opt-in).",
			strings.TrimPrefix(c.subject, " ")+sep(c.subject), c.req, c.budget, c.optInVar)
		return Verdict{Allow: true, Rule: RuleOptIn, OptIn: c.optInVar, Message: join(msg, c.used, c.detail)}
	}
	rule := RuleOverBudget
	why := "Budget: " + b.Describe() + "."
	way := append([]string(nil), c.wayOut...)
	if !b.Configured {
		rule = RuleUnconfigured
		host := "desktop"
		if b.Headless {
			host = "headless"
		}
		why = fmt.Sprintf("This host's VRAM is not configured (no total_vram_gb in the profile and no GPU detected through nvidia-smi or %s), so paddock fails closed with a conservative %.1f GB %s budget.", DRMRoot, b.TotalGB, host)
		way = append(way, "set total_vram_gb (and desktop_headroom_gb) in the profile to this host's real figures")
	}
	if allowOptIn {
		way = append(way, fmt.Sprintf("if exceeding the budget is intended, set %s=1 (alias %s=1) in the command's environment", OptInEnv, OptInAliasEnv))
	} else {
		way = append(way, fmt.Sprintf("(the %s=1 / %s=1 opt-in is disabled on this host)", OptInEnv, OptInAliasEnv))
	}
	msg := fmt.Sprintf("VRAM preflight rejected%s: %s exceeds host VRAM budget (%s).", c.subject, c.req, c.budget)
	return Verdict{Allow: false, Rule: rule, Message: join(msg, why, c.used, c.detail, "Way out: "+strings.Join(way, "; ")+".")}
}

// undecidable refuses a workload whose size cannot be estimated (why), as
// paddock refuses whatever it cannot decide; the opt-in lets it through.
func (c check) undecidable(why string, allowOptIn bool) Verdict {
	if allowOptIn && c.optInVar != "" {
		msg := fmt.Sprintf("VRAM preflight: %s%s cannot be estimated (%s); allowed by %s=1 (explicit opt-in).",
			strings.TrimPrefix(c.subject, " ")+sep(c.subject), "it", why, c.optInVar)
		return Verdict{Allow: true, Rule: RuleOptIn, OptIn: c.optInVar, Message: join(msg, c.detail)}
	}
	way := []string{"point the command at the model file itself (a regular file paddock can read)"}
	if allowOptIn {
		way = append(way, fmt.Sprintf("if running it unestimated is intended, set %s=1 (alias %s=1) in the command's environment", OptInEnv, OptInAliasEnv))
	} else {
		way = append(way, fmt.Sprintf("(the %s=1 / %s=1 opt-in is disabled on this host)", OptInEnv, OptInAliasEnv))
	}
	msg := fmt.Sprintf("VRAM preflight rejected%s: paddock cannot estimate its VRAM: %s, and paddock refuses what it cannot check.", c.subject, why)
	return Verdict{Allow: false, Rule: RuleUndecidable, Message: join(msg, c.detail, "Way out: "+strings.Join(way, "; ")+".")}
}

func sep(subject string) string {
	if subject == "" {
		return ""
	}
	return ": "
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func headroomWords(headroom float64, headless bool) string {
	s := fmt.Sprintf("%.1f GB desktop headroom reserved", headroom)
	if headless && headroom == 0 {
		s += " (headless host)"
	}
	return s
}

func poolPhrase(b Budget) string {
	return fmt.Sprintf("%.1f GB available: %.1f GB total, %s", b.AvailableGB, b.TotalGB, headroomWords(b.HeadroomGB, b.Headless))
}

func gpuPhrase(d DeviceNeed) string {
	return fmt.Sprintf("%.1f GB available on GPU %d (%s): %.1f GB total, %.1f GB desktop headroom reserved", d.AvailableGB, d.Index, d.Name, d.TotalGB, d.HeadroomGB)
}

// usedNote reports VRAM other processes already hold when the request
// would not fit beside it: vLLM-style engines check free memory at startup.
func usedNote(where string, usedGB, requiredGB, totalGB float64) string {
	if usedGB < 0.05 || requiredGB <= totalGB-usedGB {
		return ""
	}
	return fmt.Sprintf("Note: %.1f GB of VRAM%s is already in use by other processes (the desktop's included), leaving %.1f GB free; engines that claim a fraction of the total, like vLLM, refuse to start when free memory is below it.", usedGB, where, totalGB-usedGB)
}

func estimateDetail(e Estimate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Estimate (%s", e.Engine)
	if e.Model != "" {
		fmt.Fprintf(&b, ", %s", e.Model)
	}
	b.WriteString("): ")
	b.WriteString(strings.Join(e.Notes, "; "))
	b.WriteString(".")
	if len(e.Warnings) > 0 {
		b.WriteString(" Warning: " + strings.Join(e.Warnings, "; ") + ".")
	}
	return b.String()
}

// Report is the preflight's answer as data (paddock preflight --json).
type Report struct {
	Status            string       `json:"status"` // "accepted" or "rejected"
	Rule              audit.Rule   `json:"rule"`
	AvailableBudgetGB float64      `json:"available_budget_gb"`
	RequestedGB       float64      `json:"requested_gb"`
	HeadroomGB        float64      `json:"headroom_gb"`
	TotalGB           float64      `json:"total_gb"`
	Configured        bool         `json:"configured"`
	Headless          bool         `json:"headless"`
	BudgetSource      string       `json:"budget_source"`
	OptIn             string       `json:"opt_in,omitempty"`
	Engine            string       `json:"engine,omitempty"`
	Model             string       `json:"model,omitempty"`
	GPUs              []GPUBudget  `json:"gpus,omitempty"`
	Devices           []DeviceNeed `json:"devices,omitempty"`
	Notes             []string     `json:"notes,omitempty"`
	Warnings          []string     `json:"warnings,omitempty"`
	Message           string       `json:"message"`
}

// NewReport builds the Report of a verdict; est is nil for a plain request.
// Figures are rounded to 0.01 GB.
func NewReport(v Verdict, b Budget, requestedGB float64, est *Estimate) Report {
	r := Report{
		Status: "accepted", Rule: v.Rule, AvailableBudgetGB: round2(b.AvailableGB), RequestedGB: round2(requestedGB),
		HeadroomGB: round2(b.HeadroomGB), TotalGB: round2(b.TotalGB), Configured: b.Configured, Headless: b.Headless,
		BudgetSource: b.Source, OptIn: v.OptIn, GPUs: b.PerGPU, Notes: b.Notes, Message: v.Message,
	}
	if !v.Allow {
		r.Status = "rejected"
	}
	if est != nil {
		r.Engine, r.Model, r.Devices = est.Engine, est.Model, est.Devices
		r.RequestedGB = round2(est.RequiredGB)
		r.Notes = append(append([]string(nil), est.Notes...), b.Notes...)
		r.Warnings = est.Warnings
	}
	return r
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
