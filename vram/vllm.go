package vram

import (
	"math"
	"strings"
)

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

// vllm estimates a vLLM server (or offline run) from its flags: the memory
// fraction it claims of each GPU, the weights per shard, and the way out.
// model is the model named before the flags ("" when --model names it).
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
