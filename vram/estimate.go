package vram

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/cmdline"
)

// DeviceNeed is one GPU's part of an estimate.
type DeviceNeed struct {
	// Index is the GPU's index, -1 for the budget's single pool (the total
	// came from the profile or a default, so GPUs are not told apart).
	Index       int     `json:"index"`
	Name        string  `json:"name,omitempty"`
	Vendor      string  `json:"vendor,omitempty"`
	RequiredGB  float64 `json:"required_gb"`
	TotalGB     float64 `json:"total_gb"`
	HeadroomGB  float64 `json:"headroom_gb"`
	AvailableGB float64 `json:"available_gb"`
}

// Estimate is what a command line will claim.
type Estimate struct {
	// Engine names the estimator ("vLLM", "SGLang", "TGI", "llama.cpp", "ollama").
	Engine string
	Model  string
	// RequiredGB is the VRAM the command will claim on all the GPUs it uses.
	RequiredGB float64
	// PerGPU is true when Devices are real GPUs, each checked against its
	// own budget; false when they share the budget's single pool.
	PerGPU bool
	// Notes explain the figure; Warnings flag what will likely go wrong.
	Notes    []string
	Warnings []string
	// Command is the command line as given, for messages.
	Command string
	// Devices is the requirement per GPU used.
	Devices []DeviceNeed
	// WeightsGB is the model weights estimate (all GPUs), 0 when unknown.
	WeightsGB float64
	// Unknown, when set, says why the requirement cannot be estimated at
	// all (a model file that exists but cannot be read, with no size in its
	// name); the preflight then refuses, failing closed.
	Unknown string
	// Fraction is the share of each GPU's memory the engine claims (vLLM,
	// SGLang, TGI), 0 when it does not work that way.
	Fraction float64
	// WayOut lists engine-specific changes that would fit the budget.
	WayOut []string
}

// Files is what estimators may read of the files a command names (the
// llama.cpp model). Size is required; Open, when set, lets the llama.cpp
// estimator read the GGUF header for the layer count and attention shape.
// Paths are as the command gave them: resolve them (the caller's working
// directory, its root) before answering.
type Files struct {
	Size func(path string) (int64, error)
	Open func(path string) (io.ReadCloser, error)
}

// EstimateCommand estimates the VRAM argv will claim under budget b. env is
// the command's environment (KEY=VALUE; it holds CUDA_VISIBLE_DEVICES,
// OLLAMA_GPU_OVERHEAD, TGI's settings). ok=false: argv is not a GPU
// workload paddock knows.
func EstimateCommand(argv []string, env []string, b Budget, fileSize func(string) (int64, error)) (Estimate, bool) {
	return EstimateCommandFiles(argv, env, b, Files{Size: fileSize})
}

// IsGPUWorkload reports whether argv names an engine paddock estimates
// (vLLM, SGLang, TGI, llama.cpp, ollama), without estimating anything: the
// exec path asks it first, so that ordinary commands never wait for GPU
// detection.
//
// argv is read with cmdline.Unwrap, the reader the guard uses: every
// wrapper the guard sees through (sudo, env, nohup, chrt, systemd-run,
// flock, unshare, busybox, uv run, conda run, ...) is seen through here
// too, and python -m MODULE names the module.
func IsGPUWorkload(argv []string) bool {
	run := cmdline.Unwrap(argv, nil)
	if run.Module != "" {
		return run.Module == "vllm" || strings.HasPrefix(run.Module, "vllm.") || strings.HasPrefix(run.Module, "sglang.")
	}
	if len(run.Argv) == 0 {
		return false
	}
	switch base := filepath.Base(run.Argv[0]); {
	case base == "vllm", base == "sglang", base == "text-generation-launcher", base == "ollama", llamaCppBinaries[base]:
		return true
	}
	return false
}

// EstimateCommandFiles is EstimateCommand with GGUF headers readable too.
func EstimateCommandFiles(argv []string, env []string, b Budget, f Files) (Estimate, bool) {
	return estimate(cmdline.Unwrap(argv, env), argv, b, f)
}

// estimate estimates what run runs; argv is the command line as given.
func estimate(run cmdline.Run, argv []string, b Budget, f Files) (Estimate, bool) {
	if len(run.Argv) == 0 {
		return Estimate{}, false
	}
	c := &estimator{env: run.Env, b: b, files: f}
	c.est.Command = shellJoin(argv)
	var ok bool
	module, args := run.Module, run.Args
	base := ""
	if module == "" {
		base = filepath.Base(run.Argv[0])
	}
	switch {
	case module == "vllm" || module == "vllm.entrypoints.cli.main":
		ok = c.vllmCLI(args, true)
	case strings.HasPrefix(module, "vllm.entrypoints"):
		ok = c.vllm(args, "")
	case module == "" && base == "vllm":
		ok = c.vllmCLI(args, false)
	case module == "sglang.launch_server" || module == "sglang.bench_one_batch" || module == "sglang.bench_offline_throughput":
		ok = c.sglang(args)
	case module == "" && base == "sglang" && len(args) > 0 && args[0] == "serve":
		ok = c.sglang(args[1:])
	case module == "" && base == "text-generation-launcher":
		ok = c.tgi(args)
	case module == "" && llamaCppBinaries[base]:
		ok = c.llamaCpp(args)
	case module == "" && base == "ollama":
		ok = c.ollama(args)
	}
	if !ok {
		return Estimate{}, false
	}
	e := c.est
	for _, d := range e.Devices {
		e.RequiredGB += d.RequiredGB
	}
	return e, true
}

// llamaCppBinaries load a model onto the GPU (llama.cpp's tools).
var llamaCppBinaries = map[string]bool{
	"llama-server": true, "llama-cli": true, "llama-bench": true, "llama-mtmd-cli": true, "llama-run": true,
	"llama-simple": true, "llama-embedding": true, "llama-perplexity": true, "llama-batched": true,
}

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

// ---- command-line plumbing ----

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

// ---- GPUs a command uses ----

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

// ---- weights ----

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

// ---- vLLM ----

// VLLMDefaultGPUMemoryUtilization is vLLM's --gpu-memory-utilization
// default: 0.92 in vllm/config/cache.py on main (2026); it was 0.9 in every
// release before. paddock assumes the larger.
const VLLMDefaultGPUMemoryUtilization = 0.92

// vllmQuant maps vLLM --quantization methods to weight bytes per parameter.
var vllmQuant = map[string]float64{
	"awq": 0.5, "awq_marlin": 0.5, "gptq": 0.5, "gptq_marlin": 0.5, "gptq_marlin_24": 0.5, "marlin": 0.5,
	"bitsandbytes": 0.5, "mxfp4": 0.5, "nvfp4": 0.5, "modelopt_fp4": 0.5, "hqq": 0.5, "gguf": 0.5,
	"fp8": 1, "fbgemm_fp8": 1, "modelopt": 1, "ptpc_fp8": 1, "fp_quant": 1, "experts_int8": 1, "int8": 1, "deepspeedfp": 1,
	"aqlm": 0.25,
}

// vllmCLI handles the vllm command (and python -m vllm): serve, run-batch
// and the offline benchmarks load a model; chat, complete, bench serve and
// collect-env are clients.
func (c *estimator) vllmCLI(args []string, module bool) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "serve":
		model := ""
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			model = args[1]
		}
		return c.vllm(args[1:], model)
	case "run-batch":
		return c.vllm(args[1:], "")
	case "bench":
		if len(args) > 1 && (args[1] == "latency" || args[1] == "throughput") {
			return c.vllm(args[2:], "")
		}
		return false
	}
	if strings.HasPrefix(args[0], "-") && (module || flagArgs(args).has("--model")) {
		return c.vllm(args, "") // python -m vllm --model M: the server's flags
	}
	return false
}

func (c *estimator) vllm(args []string, model string) bool {
	c.est.Engine = "vLLM"
	a := flagArgs(args)
	if m, ok := a.get("--model"); ok {
		model = m
	}
	frac, set := c.float(a, VLLMDefaultGPUMemoryUtilization, "--gpu-memory-utilization")
	if frac <= 0 || frac > 1 {
		c.warn("--gpu-memory-utilization %g is outside (0, 1]; vLLM will reject it", frac)
		frac = math.Min(math.Max(frac, 0), 1)
	}
	tp := c.integer(a, 1, "--tensor-parallel-size", "-tp")
	pp := c.integer(a, 1, "--pipeline-parallel-size", "-pp")
	dp := c.integer(a, 1, "--data-parallel-size", "-dp")
	offload, _ := c.float(a, 0, "--cpu-offload-gb")
	quant, _ := a.get("--quantization", "-q")
	dtype, _ := a.get("--dtype")
	var kvGB float64
	kvSet := false
	if v, ok := a.get("--kv-cache-memory-bytes"); ok {
		n, err := parseHumanInt(v)
		if err != nil {
			c.warn("cannot read --kv-cache-memory-bytes %q; the fraction applies", v)
		} else {
			kvGB, kvSet = n/bytesPerGB, true
		}
	}
	w := c.weightsGB(model, "--quantization", quant, vllmQuant, dtype, FloorBytesPerParam, floorWhy)
	shards := float64(tp * pp)
	devs := c.targets(tp * pp * dp)
	if !kvSet {
		c.est.Fraction = frac
		if set {
			c.note("vLLM claims --gpu-memory-utilization x each GPU's total")
		} else {
			c.note("vLLM claims --gpu-memory-utilization x each GPU's total; not given, so vLLM's default %.2f (current vLLM; 0.9 in releases before)", VLLMDefaultGPUMemoryUtilization)
		}
	} else {
		c.note("--kv-cache-memory-bytes %.1f GB per GPU: vLLM ignores --gpu-memory-utilization and claims weights + that KV cache", kvGB)
	}
	if tp*pp > 1 {
		c.note("weights split over %d GPUs (tensor %d x pipeline %d)", tp*pp, tp, pp)
	}
	if offload > 0 {
		c.note("--cpu-offload-gb %.1f GB per GPU stays in host memory", offload)
	}
	for i := range devs {
		d := &devs[i]
		wi := math.Max(0, w/shards-offload)
		base := RuntimeOverheadGB
		if w > 0 {
			base = withOverhead(wi)
		}
		if kvSet {
			d.RequiredGB = base + kvGB
			continue
		}
		claim := frac * d.TotalGB
		d.RequiredGB = math.Max(claim, base)
		if i == 0 {
			c.note("%.2f x %.1f GB = %.1f GB per GPU; weights with overhead (+%.0f%%, +%.1f GB) %.1f GB per GPU", frac, d.TotalGB, claim, WeightOverheadFraction*100, RuntimeOverheadGB, base)
			if w > 0 && wi > claim {
				c.warn("the weights alone (%.1f GB per GPU) exceed the fraction (%.2f x %.1f GB = %.1f GB): vLLM will fail to load the model after filling the GPU", wi, frac, d.TotalGB, claim)
			}
		}
	}
	c.est.Devices = devs
	if kvSet {
		c.wayOut("a smaller --kv-cache-memory-bytes")
	} else {
		c.fractionWayOut(devs, w/shards-offload, "--gpu-memory-utilization", 0)
	}
	c.weightsWayOut(devs, w/shards-offload, "use a quantized checkpoint (an AWQ or GPTQ model, or --quantization fp8), spread the model over more GPUs (--tensor-parallel-size), or keep part of it in host memory (--cpu-offload-gb)")
	return true
}

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

// ---- SGLang ----

// sglangReserveGB is the memory SGLang keeps outside --mem-fraction-static
// for activations and CUDA graphs, by card size (sglang server_args.py,
// _handle_gpu_memory_settings, 2025: < 35 GB: 2.8; < 90: 9.5; < 160: 12;
// else 32 GB).
func sglangReserveGB(totalGB float64) float64 {
	switch {
	case totalGB < 35:
		return 2.8
	case totalGB < 90:
		return 9.5
	case totalGB < 160:
		return 12
	}
	return 32
}

var sglangQuant = map[string]float64{
	"awq": 0.5, "awq_marlin": 0.5, "gptq": 0.5, "gptq_marlin": 0.5, "marlin": 0.5, "bitsandbytes": 0.5,
	"mxfp4": 0.5, "modelopt_fp4": 0.5, "w4afp8": 0.5, "gguf": 0.5,
	"fp8": 1, "modelopt": 1, "modelopt_fp8": 1, "w8a8_int8": 1, "w8a8_fp8": 1, "qoq": 0.5,
}

func (c *estimator) sglang(args []string) bool {
	c.est.Engine = "SGLang"
	a := flagArgs(args)
	model, _ := a.get("--model-path", "--model")
	frac, set := c.float(a, 0, "--mem-fraction-static")
	tp := c.integer(a, 1, "--tp-size", "--tp", "--tensor-parallel-size")
	pp := c.integer(a, 1, "--pp-size", "--pipeline-parallel-size")
	dp := c.integer(a, 1, "--dp-size", "--dp", "--data-parallel-size")
	quant, _ := a.get("--quantization")
	dtype, _ := a.get("--dtype")
	w := c.weightsGB(model, "--quantization", quant, sglangQuant, dtype, FloorBytesPerParam, floorWhy)
	shards := float64(tp * pp)
	// With data parallelism each replica holds the whole tp x pp model.
	devs := c.targets(tp * pp * dp)
	if set && (frac <= 0 || frac > 1) {
		c.warn("--mem-fraction-static %g is outside (0, 1]", frac)
		set = false
	}
	if set {
		c.est.Fraction = frac
		c.note("SGLang claims --mem-fraction-static x each GPU's total for weights and KV cache, plus its runtime reserve (activations, CUDA graphs: 2.8 GB under 35 GB cards, 9.5 under 90, 12 under 160, else 32)")
	} else {
		c.note("no --mem-fraction-static: SGLang sizes its static pool as (total - its runtime reserve) / total and uses the reserve at runtime, so it claims the whole GPU")
	}
	wi := w / shards
	base := RuntimeOverheadGB
	if w > 0 {
		base = withOverhead(wi)
	}
	for i := range devs {
		d := &devs[i]
		claim := d.TotalGB
		if set {
			claim = math.Min(d.TotalGB, frac*d.TotalGB+sglangReserveGB(d.TotalGB))
		}
		d.RequiredGB = math.Max(claim, base)
		if i == 0 && w > 0 && set && wi > frac*d.TotalGB {
			c.warn("the weights alone (%.1f GB per GPU) exceed --mem-fraction-static %.2f x %.1f GB: SGLang will fail to load the model", wi, frac, d.TotalGB)
		}
	}
	c.est.Devices = devs
	if len(devs) > 0 {
		c.fractionWayOut(devs, wi, "--mem-fraction-static", sglangReserveGB(devs[0].TotalGB))
	}
	c.weightsWayOut(devs, wi, "use a quantized checkpoint (an AWQ or GPTQ model, or --quantization fp8) or spread the model over more GPUs (--tp-size)")
	return true
}

// ---- TGI ----

var tgiQuant = map[string]float64{
	"awq": 0.5, "gptq": 0.5, "marlin": 0.5, "exl2": 0.5, "bitsandbytes-nf4": 0.5, "bitsandbytes-fp4": 0.5,
	"bitsandbytes": 1, "eetq": 1, "fp8": 1,
}

func (c *estimator) tgi(args []string) bool {
	c.est.Engine = "TGI"
	a := flagArgs(args)
	get := func(flag, env string) (string, bool) {
		if v, ok := a.get(flag); ok {
			return v, true
		}
		v, ok := c.env[env]
		return v, ok
	}
	model, _ := get("--model-id", "MODEL_ID")
	if model == "" {
		model = "bigscience/bloom-560m" // the launcher's default
	}
	frac := 1.0
	fracSet := false
	if v, ok := get("--cuda-memory-fraction", "CUDA_MEMORY_FRACTION"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			c.warn("cannot read --cuda-memory-fraction %q; assumed 1.0", v)
		} else {
			frac, fracSet = f, true
		}
	}
	shards := 0 // TGI: every visible GPU unless --num-shard or --sharded false
	if v, ok := get("--num-shard", "NUM_SHARD"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			shards = n
		}
	} else if v, ok := get("--sharded", "SHARDED"); ok && v == "false" {
		shards = 1
	}
	quant, _ := get("--quantize", "QUANTIZE")
	dtype, _ := get("--dtype", "DTYPE")
	w := c.weightsGB(model, "--quantize", quant, tgiQuant, dtype, FloorBytesPerParam, floorWhy)
	devs := c.targets(shards)
	n := float64(max(len(devs), 1))
	if len(c.b.PerGPU) == 0 {
		n = float64(max(shards, 1))
	}
	c.est.Fraction = frac
	if fracSet {
		c.note("TGI claims --cuda-memory-fraction x each shard's GPU")
	} else {
		c.note("TGI claims --cuda-memory-fraction x each shard's GPU; its default is 1.0, the whole GPU")
	}
	wi := w / n
	base := RuntimeOverheadGB
	if w > 0 {
		base = withOverhead(wi)
	}
	for i := range devs {
		d := &devs[i]
		d.RequiredGB = math.Max(frac*d.TotalGB, base)
		if i == 0 && w > 0 && wi > frac*d.TotalGB {
			c.warn("the weights alone (%.1f GB per shard) exceed --cuda-memory-fraction %.2f x %.1f GB", wi, frac, d.TotalGB)
		}
	}
	c.est.Devices = devs
	c.fractionWayOut(devs, wi, "--cuda-memory-fraction", 0)
	c.weightsWayOut(devs, wi, "use a quantized checkpoint (--quantize awq, gptq or eetq) or shard the model over more GPUs (--num-shard)")
	return true
}

// ---- llama.cpp ----

// LlamaCppDefaultFitTargetMiB is the free memory llama.cpp's fitting keeps
// per device when -ngl / -c are left to it (common/common.h, 2026:
// fit_params on, fit_params_target 1 GiB; --fit-target MiB changes it).
const LlamaCppDefaultFitTargetMiB = 1024

// llamaCppKVBytes maps -ctk/-ctv cache types to bytes per element.
var llamaCppKVBytes = map[string]float64{
	"f32": 4, "f16": 2, "bf16": 2, "q8_0": 1.0625, "q4_0": 0.5625, "q4_1": 0.625, "iq4_nl": 0.5625, "q5_0": 0.6875, "q5_1": 0.75,
}

// llamaLayersGuess gives a typical layer count by model size when the GGUF
// header cannot be read.
func llamaLayersGuess(paramsB float64) int {
	switch {
	case paramsB == 0:
		return 32
	case paramsB < 2:
		return 24
	case paramsB < 10:
		return 32
	case paramsB < 20:
		return 40
	case paramsB < 40:
		return 64
	case paramsB < 100:
		return 80
	}
	return 126
}

var splitGGUFRe = lazyRegexp(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// fallbackKVBytesPerToken is Llama-3-8B's f16 KV cache per token
// (32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 128 KiB), used
// when the GGUF header cannot be read.
const fallbackKVBytesPerToken = 128 << 10

func (c *estimator) llamaCpp(args []string) bool {
	c.est.Engine = "llama.cpp"
	a := flagArgs(args)
	if dev, ok := a.get("-dev", "--device"); ok && strings.EqualFold(dev, "none") {
		return false // CPU only
	}
	path, _ := a.get("-m", "--model")
	hf, _ := a.get("-hf", "-hfr", "--hf-repo")
	var fileGB float64
	var info GGUFInfo
	haveInfo := false
	mi := ParseModel(path)
	switch {
	case path != "" && c.files.Size != nil:
		c.est.Model = path
		size, parts, err := c.ggufSize(path)
		if err != nil {
			c.warn("cannot read the model file %s (%v): estimated from its name", path, err)
			fileGB = c.weightsGB(path, "", "", nil, "", 0.5, "GGUF default Q4")
			if fileGB == 0 && !errors.Is(err, fs.ErrNotExist) {
				// The file is there (a missing one fails the exec by
				// itself) but unreadable: nothing says how big it is.
				c.est.Unknown = fmt.Sprintf("the model file %s cannot be read (%v) and its name gives no size", path, err)
			}
		} else {
			fileGB = float64(size) / bytesPerGB
			c.est.WeightsGB = fileGB
			if parts > 1 {
				c.note("model file %s: %d parts, %.1f GB", path, parts, fileGB)
			} else {
				c.note("model file %s: %.1f GB", path, fileGB)
			}
		}
		if c.files.Open != nil {
			if r, err := c.files.Open(path); err == nil {
				info, err = ReadGGUF(r)
				r.Close()
				haveInfo = err == nil
				if err != nil {
					c.note("GGUF header unreadable (%v): layer count guessed", err)
				}
			}
		}
	case path != "":
		c.est.Model = path
		fileGB = c.weightsGB(path, "", "", nil, "", 0.5, "GGUF default Q4")
	case hf != "":
		mi = ParseModel(hf)
		fileGB = c.weightsGB(hf, "", "", nil, "", 0.5, "-hf picks Q4_K_M by default")
	default:
		return false
	}
	if mm, ok := a.get("-mm", "--mmproj"); ok && c.files.Size != nil && !a.has("--no-mmproj-offload") {
		if n, err := c.files.Size(mm); err == nil {
			fileGB += float64(n) / bytesPerGB
			c.note("projector %s: %.1f GB", mm, float64(n)/bytesPerGB)
		}
	}

	layers := int64(llamaLayersGuess(mi.ParamsB))
	if haveInfo {
		layers = info.BlockCount
	}
	nglAuto := true
	ngl := layers + 1
	if v, ok := a.get("-ngl", "--n-gpu-layers", "--gpu-layers"); ok {
		switch n, err := strconv.Atoi(v); {
		case v == "auto" || err == nil && n == -1:
		case v == "all" || err == nil && n <= -2:
			nglAuto = false
		case err == nil:
			nglAuto, ngl = false, min(int64(n), layers+1)
		default:
			c.warn("cannot read -ngl %q; assumed auto", v)
		}
	}
	share := float64(ngl) / float64(layers+1)
	layerShare := math.Min(1, float64(ngl)/float64(layers))

	fitOn := true
	if v, ok := a.get("-fit", "--fit"); ok && v == "off" {
		fitOn = false
	}
	fitTargetGB := float64(LlamaCppDefaultFitTargetMiB) / 1024
	if v, ok := a.get("-fitt", "--fit-target"); ok {
		first, _, _ := strings.Cut(v, ",")
		if n, err := strconv.ParseFloat(first, 64); err == nil && n >= 0 {
			fitTargetGB = n / 1024
		}
	}

	ctx, ctxSet := int64(0), false
	if v, ok := a.get("-c", "--ctx-size"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			ctx, ctxSet = n, true
		}
	}
	if !ctxSet {
		ctx = 4096
		if haveInfo && info.ContextLength > 0 {
			ctx = info.ContextLength
		}
	}
	kvType := func(flag, long string) float64 {
		if v, ok := a.get(flag, long); ok {
			if b, ok := llamaCppKVBytes[strings.ToLower(v)]; ok {
				return b
			}
		}
		return 2
	}
	bk, bv := kvType("-ctk", "--cache-type-k"), kvType("-ctv", "--cache-type-v")
	perTok, ok := info.KVBytesPerToken(bk, bv)
	if !ok {
		perTok = fallbackKVBytesPerToken * (bk + bv) / 4
	}
	kvGB := func(tokens int64) float64 {
		if a.has("-nkvo", "--no-kv-offload") {
			return 0
		}
		return perTok * float64(tokens) / bytesPerGB * layerShare
	}

	need := fileGB*share + kvGB(ctx) + RuntimeOverheadGB
	c.note("%d of %d layers on the GPU (%.0f%% of the file); KV cache %d tokens x %.0f KiB = %.1f GB; +%.1f GB compute buffers and CUDA context",
		ngl, layers+1, share*100, ctx, perTok/1024, kvGB(ctx), RuntimeOverheadGB)

	devs := c.targets(0)
	if sm, ok := a.get("-sm", "--split-mode"); ok && sm == "none" && len(devs) > 1 {
		main := 0
		if v, ok := a.get("-mg", "--main-gpu"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(devs) {
				main = n
			}
		}
		devs = devs[main : main+1]
	}
	var sumTotal float64
	for _, d := range devs {
		sumTotal += d.TotalGB
	}
	if fitOn && (nglAuto || !ctxSet) {
		// llama.cpp fits what was left unset to free memory minus the
		// fit target on every device: it claims at most total - target.
		limit := 0.0
		for _, d := range devs {
			limit += math.Max(0, d.TotalGB-fitTargetGB)
		}
		floor := RuntimeOverheadGB
		if !nglAuto {
			floor += fileGB*share + kvGB(min(ctx, 4096))
		}
		if need > limit {
			c.note("llama.cpp fits -ngl/-c to free memory, keeping %.1f GB free per GPU (--fit-target): it claims up to %.1f GB", fitTargetGB, limit)
			need = math.Max(floor, limit)
		}
	}
	for i := range devs {
		if sumTotal > 0 {
			devs[i].RequiredGB = need * devs[i].TotalGB / sumTotal
		}
	}
	c.est.Devices = devs
	if len(devs) > 0 {
		var minHead float64 = math.Inf(1)
		for _, d := range devs {
			minHead = math.Min(minHead, d.TotalGB-d.AvailableGB)
		}
		if fitOn && minHead > fitTargetGB {
			c.wayOut("--fit-target %d (MiB kept free per GPU: the desktop's headroom)", int(math.Ceil(minHead*1024)))
		}
		c.wayOut("offload fewer layers (-ngl N) or a smaller context (-c N)")
	}
	return true
}

// ggufSize is the model's size on disk, all parts of a split GGUF included.
func (c *estimator) ggufSize(path string) (int64, int, error) {
	m := splitGGUFRe().FindStringSubmatch(path)
	if m == nil {
		n, err := c.files.Size(path)
		return n, 1, err
	}
	parts, _ := strconv.Atoi(m[3])
	var total int64
	for i := 1; i <= parts; i++ {
		n, err := c.files.Size(fmt.Sprintf("%s-%05d-of-%s.gguf", m[1], i, m[3]))
		if err != nil {
			return 0, 0, err
		}
		total += n
	}
	return total, parts, nil
}

// ---- ollama ----

func (c *estimator) ollama(args []string) bool {
	if len(args) == 0 {
		return false
	}
	c.est.Engine = "ollama"
	overheadGB := 0.0
	if v, ok := c.env["OLLAMA_GPU_OVERHEAD"]; ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
			overheadGB = n / bytesPerGB
		} else {
			c.warn("cannot read OLLAMA_GPU_OVERHEAD=%q (bytes)", v)
		}
	}
	switch args[0] {
	case "serve", "start":
		devs := c.targets(0)
		c.note("ollama serve loads models on demand and fits them into free VRAM on every GPU, keeping OLLAMA_GPU_OVERHEAD (%.1f GB) free per GPU: it may claim total - overhead", overheadGB)
		for i := range devs {
			devs[i].RequiredGB = math.Max(0, devs[i].TotalGB-overheadGB)
		}
		head := 0.0
		for _, d := range devs {
			head = math.Max(head, d.TotalGB-d.AvailableGB)
		}
		if head > 0 {
			c.wayOut("start it with OLLAMA_GPU_OVERHEAD=%d (bytes kept free per GPU: the desktop's headroom)", int64(math.Ceil(head*bytesPerGB)))
		}
		c.est.Devices = devs
		return true
	case "run":
		model := ""
		for _, t := range args[1:] {
			if !strings.HasPrefix(t, "-") {
				model = t
				break
			}
		}
		if model == "" {
			return false
		}
		w := c.weightsGB(model, "", "", nil, "", 0.5, "ollama's library tags default to Q4_K_M")
		c.note("the model loads in the ollama server, which fits it to free VRAM with its own OLLAMA_GPU_OVERHEAD")
		if w == 0 {
			c.warn("model size unknown from %q: not checked", model)
			return true
		}
		// The server puts a model that fits on one GPU: the roomiest.
		devs := c.targets(0)
		best := 0
		for i, d := range devs {
			if d.AvailableGB > devs[best].AvailableGB {
				best = i
			}
		}
		if len(devs) > 0 {
			devs = devs[best : best+1]
			devs[0].RequiredGB = math.Min(withOverhead(w), devs[0].TotalGB)
		}
		c.est.Devices = devs
		c.wayOut("run a smaller or more quantized tag (e.g. a :q4_K_M or smaller parameter count)")
		return true
	}
	return false
}

// shellJoin renders argv for messages, quoting words with spaces.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\") {
			parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			parts[i] = a
		}
	}
	s := strings.Join(parts, " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
