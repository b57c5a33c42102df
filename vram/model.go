package vram

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ModelInfo is what a model's name says about its size.
type ModelInfo struct {
	Name string
	// ParamsB is the total parameter count in billions (0: not in the name).
	// Mixture-of-experts models count every expert ("8x7B" is 56,
	// "30B-A3B" is 30): all experts stay resident in VRAM.
	ParamsB float64
	// SizeToken is the part of the name the size came from ("70B", "8x7B").
	SizeToken string
	// BytesPerParam is the weight precision a hint in the name gives
	// (0: no hint).
	BytesPerParam float64
	// Hint is the name part the precision came from ("AWQ", "Q4_K_M").
	Hint string
}

// sizeRe finds "70B", "1.5B", "8x7B", "135M" in a name: a number, an
// optional "NxM" expert count, and a B (billions) or M (millions) suffix,
// not glued to a letter or digit on either side (so "A3B" in "30B-A3B",
// the active parameters, and "E4B" do not count).
var sizeRe = lazyRegexp(`(?i)(?:^|[^a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?:[^a-z0-9]|$)`)

// ParseModel reads a model's parameter count and precision hints from its
// name: a Hugging Face id (meta-llama/Llama-3-70B), an ollama tag
// (llama3:70b-instruct-q8_0) or a file name (Qwen2.5-7B-Instruct-Q4_K_M.gguf).
func ParseModel(name string) ModelInfo {
	mi := ModelInfo{Name: name}
	base := name
	if i := strings.LastIndex(base, "/"); i >= 0 && i < len(base)-1 {
		// Directories (~/models/7B/...) say less than the last element; fall
		// back to the whole path when the last element has no size.
		if m := sizeRe().FindStringSubmatch(base[i+1:]); m != nil {
			base = base[i+1:]
		}
	}
	if m := sizeRe().FindStringSubmatch(base); m != nil {
		v, _ := strconv.ParseFloat(m[2], 64)
		if strings.EqualFold(m[3], "m") {
			v /= 1000
		}
		tok := m[2] + m[3]
		if m[1] != "" {
			n, _ := strconv.ParseFloat(m[1], 64)
			v *= n
			tok = m[1] + "x" + tok
		}
		mi.ParamsB, mi.SizeToken = v, tok
	}
	mi.BytesPerParam, mi.Hint = precisionHint(name)
	return mi
}

var (
	tokenSplitRe = lazyRegexp(`[^a-z0-9]+`)
	qTokenRe     = lazyRegexp(`^i?q([1-8])`)
	wTokenRe     = lazyRegexp(`^w([48])a(8|16)$`)
	hintRe       = lazyRegexp(`(?i)(i?q[1-8](_[a-z0-9]+)*|[a-z0-9]+)`)
)

// explicitPrecision maps name tokens that state a bit width to bytes per
// parameter.
var explicitPrecision = map[string]float64{
	"fp32": 4, "f32": 4, "float32": 4,
	"fp16": 2, "f16": 2, "bf16": 2, "float16": 2, "bfloat16": 2, "half": 2,
	"fp8": 1, "f8": 1, "int8": 1, "8bit": 1, "e4m3": 1, "fp8dynamic": 1,
	"int4": 0.5, "4bit": 0.5, "nf4": 0.5, "fp4": 0.5, "mxfp4": 0.5, "nvfp4": 0.5, "int3": 0.375, "3bit": 0.375, "2bit": 0.25,
}

// methodPrecision maps quantization methods whose usual width is implied.
var methodPrecision = map[string]float64{"awq": 0.5, "gptq": 0.5, "bnb": 0.5, "exl2": 0.5, "hqq": 0.5, "aqlm": 0.25}

// precisionHint finds the smallest stated weight precision in a name: a
// quantized form is what gets loaded even when the name also names its
// base's bf16. Explicit widths (int8, Q4_K_M, fp8) beat a method's usual
// width (GPTQ-Int8 is 1 byte, plain GPTQ 0.5).
func precisionHint(name string) (float64, string) {
	lower := strings.ToLower(name)
	best, hint := 0.0, ""
	consider := func(v float64, h string) {
		if best == 0 || v < best {
			best, hint = v, h
		}
	}
	for _, tok := range tokenSplitRe().Split(lower, -1) {
		if v, ok := explicitPrecision[tok]; ok {
			consider(v, tok)
			continue
		}
		if m := qTokenRe().FindStringSubmatch(tok); m != nil {
			n, _ := strconv.Atoi(m[1])
			consider(float64(n)/8, tok)
			continue
		}
		if m := wTokenRe().FindStringSubmatch(tok); m != nil {
			n, _ := strconv.Atoi(m[1])
			consider(float64(n)/8, tok)
		}
	}
	if best == 0 {
		for _, tok := range tokenSplitRe().Split(lower, -1) {
			if v, ok := methodPrecision[tok]; ok {
				consider(v, tok)
			}
		}
	}
	if hint != "" {
		// Report the hint as spelled in the name (Q4_K_M, AWQ).
		for _, m := range hintRe().FindAllString(name, -1) {
			if strings.HasPrefix(strings.ToLower(m), hint) {
				hint = m
				break
			}
		}
	}
	return best, hint
}

// Estimation constants (documented in docs/vram.md).
const (
	// FloorBytesPerParam is assumed when nothing states the precision: the
	// seed's rule (70B -> 70 GB), a floor, since the common bf16 checkpoint
	// needs twice as much. Refusals on it are never false alarms.
	FloorBytesPerParam = 1.0
	// WeightOverheadFraction and RuntimeOverheadGB turn weights into a
	// minimum footprint: +10% (activations, fragmentation, a minimal KV
	// cache) and +0.5 GB (CUDA context and runtime).
	WeightOverheadFraction = 0.10
	RuntimeOverheadGB      = 0.5
	bytesPerGB             = 1 << 30
)

// WeightsGB is the weights of a paramsB-billion model at bytesPerParam, in GB.
func WeightsGB(paramsB, bytesPerParam float64) float64 {
	return paramsB * 1e9 * bytesPerParam / bytesPerGB
}

// withOverhead adds the documented overhead to a weights figure.
func withOverhead(weightsGB float64) float64 {
	return weightsGB*(1+WeightOverheadFraction) + RuntimeOverheadGB
}

func fmtBytes(b float64) string {
	if b == math.Trunc(b) {
		return fmt.Sprintf("%.0f", b)
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}

// lazyRegexp compiles expr on first use: the vram package is linked into
// every paddock process, including the re-executed init, and compiling its
// expressions at start cost each of them about 0.2 ms.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
