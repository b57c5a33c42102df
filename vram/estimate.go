package vram

import (
	"io"
	"path/filepath"
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

// estimate estimates what run runs; argv is the command line as given.
// Each engine (or family of tools) has a file of its own: vllm.go,
// sglang.go, tgi.go, llamacpp.go, ollama.go; what they share (the
// estimator, its flag reading, the GPUs a command uses, the weights, the
// way out of a memory fraction) is estimator.go.
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
