package vram

import (
	"math"
	"strconv"
)

// tgiQuant maps TGI --quantize methods to weight bytes per parameter.
var tgiQuant = map[string]float64{
	"awq": 0.5, "gptq": 0.5, "marlin": 0.5, "exl2": 0.5, "bitsandbytes-nf4": 0.5, "bitsandbytes-fp4": 0.5,
	"bitsandbytes": 1, "eetq": 1, "fp8": 1,
}

// tgi estimates text-generation-launcher (Hugging Face TGI) from its flags
// and environment: --cuda-memory-fraction of each shard's GPU.
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
