package vram

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
)

// llamaCppBinaries load a model onto the GPU (llama.cpp's tools).
var llamaCppBinaries = map[string]bool{
	"llama-server": true, "llama-cli": true, "llama-bench": true, "llama-mtmd-cli": true, "llama-run": true,
	"llama-simple": true, "llama-embedding": true, "llama-perplexity": true, "llama-batched": true,
}

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

// llamaCpp estimates a llama.cpp tool (llama-server, llama-cli, ...): the
// GGUF model file's size (its header, where readable, for the layers and
// the attention shape), the KV cache of the context, and the layers
// offloaded to the GPUs.
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
