package vram

import (
	"math"
	"strconv"
	"strings"
)

// ollama estimates ollama serve (it may claim each GPU less
// OLLAMA_GPU_OVERHEAD) and ollama run of a model named by its size.
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
