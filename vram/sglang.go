package vram

import "math"

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

// sglangQuant maps SGLang --quantization methods to weight bytes per
// parameter.
var sglangQuant = map[string]float64{
	"awq": 0.5, "awq_marlin": 0.5, "gptq": 0.5, "gptq_marlin": 0.5, "marlin": 0.5, "bitsandbytes": 0.5,
	"mxfp4": 0.5, "modelopt_fp4": 0.5, "w4afp8": 0.5, "gguf": 0.5,
	"fp8": 1, "modelopt": 1, "modelopt_fp8": 1, "w8a8_int8": 1, "w8a8_fp8": 1, "qoq": 0.5,
}

// sglang estimates an SGLang server from its flags: --mem-fraction-static
// of each GPU plus the runtime reserve, or the whole GPU without it.
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
