package vram

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// estimator builds the estimate of one command line: what it runs with,
// the budget, the model files it may read, and the estimate so far.
type estimator struct {
	env   map[string]string
	b     Budget
	files Files
	est   Estimate
}

func (c *estimator) note(format string, a ...any) {
	c.est.Notes = append(c.est.Notes, fmt.Sprintf(format, a...))
}

func (c *estimator) warn(format string, a ...any) {
	c.est.Warnings = append(c.est.Warnings, fmt.Sprintf(format, a...))
}

func (c *estimator) wayOut(format string, a ...any) {
	c.est.WayOut = append(c.est.WayOut, fmt.Sprintf(format, a...))
}

// flagArgs reads flags the way argparse and llama.cpp do: "--name value"
// and "--name=value", the last occurrence winning; in long names "_" and
// "-" are the same.
type flagArgs []string

func normFlag(s string) string {
	if strings.HasPrefix(s, "--") {
		return strings.ReplaceAll(s, "_", "-")
	}
	return s
}

func (a flagArgs) get(names ...string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(a); i++ {
		tok := a[i]
		if tok == "--" {
			break
		}
		if len(tok) < 2 || tok[0] != '-' {
			continue
		}
		name, v, hasEq := strings.Cut(tok, "=")
		for _, n := range names {
			if normFlag(name) != normFlag(n) {
				continue
			}
			if hasEq {
				val, found = v, true
			} else if i+1 < len(a) {
				val, found = a[i+1], true
				i++
			}
			break
		}
	}
	return val, found
}

func (a flagArgs) has(names ...string) bool {
	for _, tok := range a {
		if tok == "--" {
			break
		}
		name, _, _ := strings.Cut(tok, "=")
		for _, n := range names {
			if normFlag(name) == normFlag(n) {
				return true
			}
		}
	}
	return false
}

// float reads a float flag; def when absent or unreadable (with a warning).
func (c *estimator) float(a flagArgs, def float64, names ...string) (float64, bool) {
	v, ok := a.get(names...)
	if !ok {
		return def, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		c.warn("cannot read %s %q; assumed %s", names[0], v, fmtBytes(def))
		return def, false
	}
	return f, true
}

func (c *estimator) integer(a flagArgs, def int, names ...string) int {
	v, ok := a.get(names...)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		c.warn("cannot read %s %q; assumed %d", names[0], v, def)
		return def
	}
	return n
}

// parseHumanInt reads vLLM's human-readable integers: 1k = 1000, 1K = 1024,
// likewise m/M, g/G, t/T; decimals allowed (25.6k).
func parseHumanInt(s string) (float64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 'k':
			mult = 1e3
		case 'm':
			mult = 1e6
		case 'g':
			mult = 1e9
		case 't':
			mult = 1e12
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	return f * mult, nil
}

// visible lists the budget's GPUs the command can see, in the order
// CUDA_VISIBLE_DEVICES (NVIDIA) or HIP_VISIBLE_DEVICES /
// ROCR_VISIBLE_DEVICES (AMD) list them.
func (c *estimator) visible() []GPUBudget {
	var out []GPUBudget
	for _, vendor := range []string{"nvidia", "amd"} {
		var all []GPUBudget
		for _, g := range c.b.PerGPU {
			if g.Vendor == vendor || vendor == "nvidia" && g.Vendor == "" {
				all = append(all, g)
			}
		}
		if len(all) == 0 {
			continue
		}
		vars := []string{"CUDA_VISIBLE_DEVICES"}
		if vendor == "amd" {
			vars = []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}
		}
		spec, set := "", false
		for _, v := range vars {
			if s, ok := c.env[v]; ok {
				spec, set = s, true
				c.note("%s=%s", v, s)
				break
			}
		}
		if !set {
			out = append(out, all...)
			continue
		}
		sel, ok := selectDevices(all, spec)
		if !ok {
			c.note("GPU list %q names devices by UUID or MIG instance; every %s GPU counted", spec, vendor)
			sel = all
		}
		out = append(out, sel...)
	}
	return out
}

// selectDevices applies a CUDA-style visible-devices list: indices, in
// order, up to the first invalid one. ok=false for UUIDs / MIG names.
func selectDevices(all []GPUBudget, spec string) ([]GPUBudget, bool) {
	var sel []GPUBudget
	if strings.TrimSpace(spec) == "" {
		return nil, true
	}
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			if strings.HasPrefix(f, "GPU-") || strings.HasPrefix(f, "MIG-") {
				return nil, false
			}
			break
		}
		found := false
		for _, g := range all {
			if g.Index == n {
				sel, found = append(sel, g), true
			}
		}
		if !found {
			break // CUDA ignores the rest of the list after an invalid entry
		}
	}
	return sel, true
}

// targets picks the devices a command that uses n GPUs runs on (n <= 0: all
// it can see). Without per-GPU budgets the single pool is split evenly over
// n devices.
func (c *estimator) targets(n int) []DeviceNeed {
	if len(c.b.PerGPU) == 0 {
		k := max(n, 1)
		devs := make([]DeviceNeed, k)
		for i := range devs {
			devs[i] = DeviceNeed{Index: -1, TotalGB: c.b.TotalGB / float64(k), HeadroomGB: c.b.HeadroomGB / float64(k), AvailableGB: c.b.AvailableGB / float64(k)}
		}
		if k > 1 {
			c.note("the budget is one pool (%.1f GB total): assumed spread evenly over the %d GPUs", c.b.TotalGB, k)
		}
		return devs
	}
	c.est.PerGPU = true
	vis := c.visible()
	if len(vis) == 0 {
		c.note("the environment hides every GPU: nothing is claimed")
		return nil
	}
	if n > len(vis) {
		c.warn("asks for %d GPUs but only %d are visible: the engine will refuse to start", n, len(vis))
		n = len(vis)
	}
	if n <= 0 {
		n = len(vis)
	}
	devs := make([]DeviceNeed, n)
	for i, g := range vis[:n] {
		devs[i] = DeviceNeed{Index: g.Index, Name: g.Name, Vendor: g.Vendor, TotalGB: g.TotalGB, HeadroomGB: g.HeadroomGB, AvailableGB: g.AvailableGB}
	}
	return devs
}

// dtypeBytes maps --dtype values (vLLM, SGLang, TGI) to bytes per parameter.
var dtypeBytes = map[string]float64{
	"float32": 4, "float": 4, "fp32": 4,
	"float16": 2, "half": 2, "fp16": 2, "bfloat16": 2, "bf16": 2,
}

// weightsGB estimates a model's weights from its name, a quantization
// flag (looked up in quantTable) and a --dtype flag. Precedence: the
// quantization flag, a quantized form named in the model name, an explicit
// --dtype, a precision named in the name, then defBytes.
func (c *estimator) weightsGB(model, quantFlag, quant string, quantTable map[string]float64, dtype string, defBytes float64, defWhy string) float64 {
	mi := ParseModel(model)
	c.est.Model = model
	if mi.ParamsB == 0 {
		if model == "" {
			c.note("no model named: weights not estimated")
		} else {
			c.note("model size not in the name %q: weights not estimated", model)
		}
		return 0
	}
	bytes, why := 0.0, ""
	if v, ok := quantTable[strings.ToLower(quant)]; ok && quant != "" {
		bytes, why = v, quantFlag+" "+quant
	}
	if bytes == 0 && mi.BytesPerParam > 0 && mi.BytesPerParam < 2 {
		bytes, why = mi.BytesPerParam, "the name says "+mi.Hint
	}
	if bytes == 0 {
		if v, ok := dtypeBytes[strings.ToLower(dtype)]; ok {
			bytes, why = v, "--dtype "+dtype
		}
	}
	if bytes == 0 && mi.BytesPerParam > 0 {
		bytes, why = mi.BytesPerParam, "the name says "+mi.Hint
	}
	if bytes == 0 {
		bytes, why = defBytes, defWhy
	}
	w := WeightsGB(mi.ParamsB, bytes)
	c.note("weights %s params (from %q) x %s byte/param (%s) = %.1f GB", fmtParams(mi.ParamsB), mi.SizeToken, fmtBytes(bytes), why, w)
	c.est.WeightsGB = w
	return w
}

func fmtParams(b float64) string {
	if b < 1 {
		return fmt.Sprintf("%.0fM", b*1000)
	}
	return strconv.FormatFloat(b, 'f', -1, 64) + "B"
}

const floorWhy = "no precision stated: the floor; a bf16 checkpoint needs 2"

// fractionWayOut suggests the largest memory fraction (two decimals) that
// fits the tightest GPU, when the weights fit in it; reserveGB is what the
// engine uses beyond the fraction.
func (c *estimator) fractionWayOut(devs []DeviceNeed, weightsPerGPU float64, flag string, reserveGB float64) {
	if len(devs) == 0 {
		return
	}
	best := math.Inf(1)
	var tight DeviceNeed
	for _, d := range devs {
		if d.TotalGB <= 0 {
			continue
		}
		if f := (d.AvailableGB - reserveGB) / d.TotalGB; f < best {
			best, tight = f, d
		}
	}
	f := math.Floor(best*100) / 100
	if math.IsInf(best, 1) || f <= 0.05 {
		return
	}
	need := RuntimeOverheadGB
	if weightsPerGPU > 0 {
		need = withOverhead(weightsPerGPU)
	}
	if f*tight.TotalGB < need {
		return
	}
	if reserveGB > 0 {
		c.wayOut("%s %.2f (%.2f x %.1f GB + %.1f GB runtime reserve = %.1f GB fits the %.1f GB available)", flag, f, f, tight.TotalGB, reserveGB, f*tight.TotalGB+reserveGB, tight.AvailableGB)
		return
	}
	c.wayOut("%s %.2f (%.2f x %.1f GB = %.1f GB fits the %.1f GB available)", flag, f, f, tight.TotalGB, f*tight.TotalGB, tight.AvailableGB)
}

// weightsWayOut adds advice when the weights with overhead do not fit the
// tightest GPU's budget however the fraction is set.
func (c *estimator) weightsWayOut(devs []DeviceNeed, weightsPerGPU float64, advice string) {
	if weightsPerGPU <= 0 {
		return
	}
	for _, d := range devs {
		if withOverhead(weightsPerGPU) > d.AvailableGB {
			c.wayOut("%s", advice)
			return
		}
	}
}
