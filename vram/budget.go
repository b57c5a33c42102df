package vram

import (
	"fmt"
	"math"
)

// Settings are the profile's VRAM keys; nil means the key is not set.
type Settings struct {
	// TotalGB is total_vram_gb: the host's VRAM, overriding detection.
	TotalGB *float64
	// HeadroomGB is desktop_headroom_gb: always honoured when set.
	HeadroomGB *float64
	// Headless is headless: overrides display detection.
	Headless *bool
	// TotalFrom and HeadroomFrom say where TotalGB and HeadroomGB were set
	// when not in the profile (a command-line flag: "--total-vram"), for
	// messages; "" means the profile.
	TotalFrom, HeadroomFrom string
	// AllowOptIn: whether PADDOCK_ALLOW_OVERBUDGET_VRAM=1 (alias
	// RLM_ALLOW_OVERBUDGET_VRAM=1) in a workload's environment may lift a
	// refusal. Pass it on to Preflight / PreflightCommandFiles.
	AllowOptIn bool
}

// Defaults used when the profile is silent.
const (
	// DefaultDesktopTotalGB is the total assumed for an unconfigured desktop
	// (no total_vram_gb, no GPU detected): a mid-range 16 GB card, so that
	// with the default headroom 14 GB are available.
	DefaultDesktopTotalGB = 16.0
	// DefaultHeadlessTotalGB is the total assumed for an unconfigured
	// headless host: one 80 GB data-centre GPU, no headroom.
	DefaultHeadlessTotalGB = 80.0
	// MinDesktopHeadroomGB and DesktopHeadroomFraction make the default
	// desktop headroom: max(2 GB, 10% of the GPU's total).
	MinDesktopHeadroomGB    = 2.0
	DesktopHeadroomFraction = 0.10
)

// DefaultHeadroomGB is the headroom reserved on a desktop GPU of totalGB
// when the profile sets none: max(2 GB, 10% of total).
func DefaultHeadroomGB(totalGB float64) float64 {
	return math.Max(MinDesktopHeadroomGB, DesktopHeadroomFraction*totalGB)
}

// GPUBudget is one GPU's share of the budget.
type GPUBudget struct {
	Index       int     `json:"index"`
	Name        string  `json:"name"`
	Vendor      string  `json:"vendor"`
	TotalGB     float64 `json:"total_gb"`
	HeadroomGB  float64 `json:"headroom_gb"`
	AvailableGB float64 `json:"available_gb"`
	// UsedGB is what was already in use on it at detection.
	UsedGB float64 `json:"used_gb"`
	// Display: the desktop's headroom is reserved on this GPU.
	Display bool `json:"display"`
}

// Budget is the VRAM a workload may claim.
type Budget struct {
	TotalGB     float64
	HeadroomGB  float64
	AvailableGB float64
	// Configured is false when neither the profile nor detection gave a
	// total and a conservative default stands in (fail closed).
	Configured bool
	Headless   bool
	// Source of the total: "profile", "flag" (Settings.TotalFrom),
	// "detected" or "default".
	Source string
	// HeadlessSource says why the host counts as desktop or headless.
	HeadlessSource string
	// TotalFrom says where a configured total came from ("total_vram_gb
	// from the profile", or the flag that set it).
	TotalFrom string
	// HeadroomRule says where the headroom came from.
	HeadroomRule string
	// UsedGB is VRAM already in use on the detected GPUs (by processes the
	// agent does not own, before it starts).
	UsedGB float64
	// PerGPU holds one entry per detected GPU when the total came from
	// detection; empty when it came from the profile or a default (one pool).
	PerGPU []GPUBudget
	Notes  []string
}

func gib(mib int64) float64 { return float64(mib) / 1024 }

// NewBudget turns what detection found and what the profile says into a
// budget. The profile's total_vram_gb wins over detection; its
// desktop_headroom_gb is always honoured; without it a desktop GPU keeps
// max(2 GB, 10% of its total) free and a headless host keeps nothing.
// Without a total from either, the budget is the conservative default
// (16 GB desktop, 80 GB headless) and Configured is false.
func NewBudget(h Host, s Settings) Budget {
	b := Budget{Headless: h.Headless, HeadlessSource: h.HeadlessSource, UsedGB: gib(h.ForeignUsedMiB)}
	if s.Headless != nil {
		b.Headless = *s.Headless
		b.HeadlessSource = fmt.Sprintf("profile: headless = %t", *s.Headless)
	}
	if b.HeadlessSource == "" {
		b.HeadlessSource = "not detected"
	}
	headroom := func(total float64) float64 {
		switch {
		case s.HeadroomGB != nil:
			return math.Max(0, *s.HeadroomGB)
		case b.Headless:
			return 0
		}
		return DefaultHeadroomGB(total)
	}
	switch {
	case s.HeadroomGB != nil && s.HeadroomFrom != "":
		b.HeadroomRule = fmt.Sprintf("%s %.1f", s.HeadroomFrom, *s.HeadroomGB)
	case s.HeadroomGB != nil:
		b.HeadroomRule = fmt.Sprintf("desktop_headroom_gb = %.1f from the profile", *s.HeadroomGB)
	case b.Headless:
		b.HeadroomRule = "none reserved on a headless host"
	default:
		b.HeadroomRule = fmt.Sprintf("default for a desktop: max(%.0f GB, %.0f%% of the GPU's total)", MinDesktopHeadroomGB, DesktopHeadroomFraction*100)
	}

	switch {
	case s.TotalGB != nil:
		b.Source, b.Configured, b.TotalFrom = "profile", true, "total_vram_gb from the profile"
		if s.TotalFrom != "" {
			b.Source, b.TotalFrom = "flag", s.TotalFrom
		}
		b.TotalGB = math.Max(0, *s.TotalGB)
		b.HeadroomGB = headroom(b.TotalGB)
		if len(h.GPUs) > 0 {
			var det int64
			for _, g := range h.GPUs {
				det += g.TotalMiB
			}
			b.Notes = append(b.Notes, fmt.Sprintf("%.1f GB (%s) stands in for the %.1f GB detected on %d GPU(s)", b.TotalGB, b.TotalFrom, gib(det), len(h.GPUs)))
		}
	case len(h.GPUs) > 0:
		b.Source, b.Configured = "detected", true
		anyDisplay := false
		for _, g := range h.GPUs {
			anyDisplay = anyDisplay || g.DisplayActive
		}
		for _, g := range h.GPUs {
			gb := GPUBudget{Index: g.Index, Name: g.Name, Vendor: g.Vendor, TotalGB: gib(g.TotalMiB), UsedGB: gib(g.UsedMiB)}
			// The desktop's headroom goes on the GPU(s) driving a display;
			// when no GPU says which, on every GPU (browsers and PRIME
			// offload use any of them). On a headless host only a profile
			// headroom is reserved, on every GPU.
			gb.Display = !b.Headless && (g.DisplayActive || !anyDisplay)
			if gb.Display || (b.Headless && s.HeadroomGB != nil) {
				gb.HeadroomGB = headroom(gb.TotalGB)
			}
			gb.AvailableGB = math.Max(0, gb.TotalGB-gb.HeadroomGB)
			b.PerGPU = append(b.PerGPU, gb)
			b.TotalGB += gb.TotalGB
			b.HeadroomGB += gb.HeadroomGB
		}
	default:
		b.Source, b.Configured = "default", false
		b.TotalGB = DefaultDesktopTotalGB
		if b.Headless {
			b.TotalGB = DefaultHeadlessTotalGB
		}
		b.HeadroomGB = headroom(b.TotalGB)
	}
	if b.PerGPU != nil {
		for _, g := range b.PerGPU {
			b.AvailableGB += g.AvailableGB
		}
	} else {
		b.AvailableGB = math.Max(0, b.TotalGB-b.HeadroomGB)
	}
	return b
}

// Describe is one line naming the budget's figures and where they came from.
func (b Budget) Describe() string {
	host := "desktop"
	if b.Headless {
		host = "headless"
	}
	var src string
	switch b.Source {
	case "profile":
		src = "total from the profile (total_vram_gb)"
	case "flag":
		src = "total from " + b.TotalFrom
	case "detected":
		src = fmt.Sprintf("total detected on %d GPU(s)", len(b.PerGPU))
	default:
		src = fmt.Sprintf("total not configured: conservative %s default", host)
	}
	return fmt.Sprintf("%s; %s host (%s); headroom %s", src, host, b.HeadlessSource, b.HeadroomRule)
}
