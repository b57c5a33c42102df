package vram

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/cmdline"
)

// sizes fakes file sizes for the llama.cpp estimator.
func sizes(m map[string]int64) func(string) (int64, error) {
	return func(p string) (int64, error) {
		if n, ok := m[p]; ok {
			return n, nil
		}
		return 0, os.ErrNotExist
	}
}

func detectedBudget(t *testing.T, fixture string) Budget {
	t.Helper()
	h, err := Detect(host(t, fixture), nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewBudget(h, Settings{AllowOptIn: true})
}

type estCase struct {
	name     string
	cmd      string
	env      []string
	budget   string // "seed" (24 GB, 4 headroom), "unconfigured-desktop", or a fixture name
	files    map[string]int64
	notGPU   bool
	engine   string
	required float64 // total over the GPUs used
	devices  []int   // GPU indices used (-1: the pool)
	allow    bool
	has      []string // substrings of notes + warnings + way out
}

func (tc estCase) budgetFor(t *testing.T) Budget {
	switch tc.budget {
	case "", "seed":
		return seedBudget()
	case "unconfigured-desktop":
		return NewBudget(Host{}, Settings{})
	}
	return detectedBudget(t, tc.budget)
}

func runEstCases(t *testing.T, cases []estCase, files func(estCase) Files) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.budgetFor(t)
			f := Files{Size: sizes(tc.files)}
			if files != nil {
				f = files(tc)
			}
			v, est, ok := PreflightCommandFiles(strings.Fields(tc.cmd), tc.env, b, f, true)
			if tc.notGPU {
				if ok || !v.Allow || v.Rule != RuleNotGPU {
					t.Fatalf("want not a GPU workload, got ok=%v %+v %+v", ok, est, v)
				}
				return
			}
			if !ok {
				t.Fatalf("not recognised as a GPU workload")
			}
			if est.Engine != tc.engine {
				t.Errorf("engine %q, want %q", est.Engine, tc.engine)
			}
			if !near(est.RequiredGB, tc.required) {
				t.Errorf("required %.3f GB, want %.2f; notes %q", est.RequiredGB, tc.required, est.Notes)
			}
			var idx []int
			for _, d := range est.Devices {
				idx = append(idx, d.Index)
			}
			if fmt.Sprint(idx) != fmt.Sprint(tc.devices) {
				t.Errorf("devices %v, want %v", idx, tc.devices)
			}
			if v.Allow != tc.allow {
				t.Errorf("allow %v, want %v: %s", v.Allow, tc.allow, v.Message)
			}
			all := strings.Join(append(append(append([]string{}, est.Notes...), est.Warnings...), est.WayOut...), "\n")
			for _, h := range tc.has {
				if !strings.Contains(all, h) {
					t.Errorf("lacks %q in:\n%s", h, all)
				}
			}
		})
	}
}

func TestEstimateVLLM(t *testing.T) {
	runEstCases(t, []estCase{
		{name: "default fraction", cmd: "vllm serve meta-llama/Llama-3-8B", engine: "vLLM", required: 22.08, devices: []int{-1}, allow: false,
			has: []string{"not given, so vLLM's default 0.92", "--gpu-memory-utilization 0.83"}},
		{name: "--flag=value", cmd: "vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization=0.5", engine: "vLLM", required: 12, devices: []int{-1}, allow: true},
		{name: "underscore spelling", cmd: "vllm serve meta-llama/Llama-3-8B --gpu_memory_utilization 0.5", engine: "vLLM", required: 12, devices: []int{-1}, allow: true},
		{name: "serve --model", cmd: "vllm serve --model meta-llama/Llama-3-8B --gpu-memory-utilization 0.5", engine: "vLLM", required: 12, devices: []int{-1}, allow: true},
		{name: "api_server, weights exceed the fraction", cmd: "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3-70B --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 72.21, devices: []int{-1}, allow: false, has: []string{"the weights alone (65.2 GB per GPU) exceed the fraction", "--tensor-parallel-size"}},
		{name: "bf16 tp 2 on two A100 80GB", cmd: "vllm serve meta-llama/Llama-3.1-70B-Instruct --dtype bfloat16 -tp 2", budget: "2gpu-headless",
			engine: "vLLM", required: 2 * 0.92 * 80, devices: []int{0, 1}, allow: true, has: []string{"x 2 byte/param (--dtype bfloat16) = 130.4 GB", "split over 2 GPUs"}},
		{name: "bf16 70B on one A100: weights do not fit", cmd: "vllm serve meta-llama/Llama-3.1-70B-Instruct --dtype bfloat16", budget: "2gpu-headless",
			engine: "vLLM", required: 130.39*1.1 + 0.5, devices: []int{0}, allow: false},
		{name: "kv-cache-memory-bytes ignores the fraction", cmd: "vllm serve meta-llama/Llama-3-8B --kv-cache-memory-bytes 4G --gpu-memory-utilization 0.9",
			engine: "vLLM", required: 7.45*1.1 + 0.5 + 4, devices: []int{-1}, allow: true, has: []string{"ignores --gpu-memory-utilization"}},
		{name: "kv-cache-memory-bytes decimal suffix", cmd: "vllm serve meta-llama/Llama-3-8B --kv-cache-memory-bytes 2000000000",
			engine: "vLLM", required: 7.45*1.1 + 0.5 + 1.863, devices: []int{-1}, allow: true},
		{name: "cpu offload", cmd: "vllm serve meta-llama/Llama-3-70B --cpu-offload-gb 60 --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 12, devices: []int{-1}, allow: true, has: []string{"--cpu-offload-gb 60.0 GB per GPU"}},
		{name: "--quantization awq", cmd: "vllm serve meta-llama/Llama-3-70B --quantization awq --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 32.6*1.1 + 0.5, devices: []int{-1}, allow: false, has: []string{"0.5 byte/param (--quantization awq)"}},
		{name: "AWQ in the name", cmd: "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --gpu-memory-utilization 0.4",
			engine: "vLLM", required: 9.6, devices: []int{-1}, allow: true, has: []string{"the name says AWQ"}},
		{name: "--dtype float32", cmd: "vllm serve meta-llama/Llama-3-8B --dtype float32 --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 29.8*1.1 + 0.5, devices: []int{-1}, allow: false},
		{name: "-q fp8 beats --dtype", cmd: "vllm serve meta-llama/Llama-3-8B -q fp8 --dtype bfloat16 --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 12, devices: []int{-1}, allow: true, has: []string{"1 byte/param (--quantization fp8)"}},
		{name: "30B-A3B keeps every expert", cmd: "vllm serve Qwen/Qwen3-30B-A3B --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 27.94*1.1 + 0.5, devices: []int{-1}, allow: false, has: []string{"30B params"}},
		{name: "bench throughput loads a model", cmd: "vllm bench throughput --model meta-llama/Llama-3-8B --gpu-memory-utilization 0.5", engine: "vLLM", required: 12, devices: []int{-1}, allow: true},
		{name: "wrappers", cmd: "sudo -u ai nice -n 10 timeout 1h uv run --with vllm vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.5",
			engine: "vLLM", required: 12, devices: []int{-1}, allow: true},
		{name: "CUDA_VISIBLE_DEVICES picks the GPU without the desktop", cmd: "nohup env CUDA_VISIBLE_DEVICES=1 vllm serve meta-llama/Llama-3-8B", budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{1}, allow: true, has: []string{"CUDA_VISIBLE_DEVICES=1"}},
		{name: "the display GPU keeps its headroom", cmd: "vllm serve meta-llama/Llama-3-8B", budget: "2gpu-desktop",
			engine: "vLLM", required: 0.92 * 24, devices: []int{0}, allow: false},
		{name: "tp 2 over both GPUs: GPU 0 decides", cmd: "vllm serve meta-llama/Llama-3-8B -tp 2 --gpu-memory-utilization 0.85", budget: "2gpu-desktop",
			engine: "vLLM", required: 2 * 0.85 * 24, devices: []int{0, 1}, allow: true},
		{name: "asks for more GPUs than visible", cmd: "vllm serve meta-llama/Llama-3-8B -tp 4 --gpu-memory-utilization 0.5", budget: "2gpu-desktop",
			engine: "vLLM", required: 24, devices: []int{0, 1}, allow: true, has: []string{"asks for 4 GPUs but only 2 are visible"}},
		{name: "every GPU hidden", cmd: "vllm serve meta-llama/Llama-3-8B", env: []string{"CUDA_VISIBLE_DEVICES="}, budget: "2gpu-desktop",
			engine: "vLLM", required: 0, devices: nil, allow: true, has: []string{"hides every GPU"}},
		{name: "unknown model: the fraction alone", cmd: "vllm serve /srv/models/my-finetune --gpu-memory-utilization 0.6",
			engine: "vLLM", required: 14.4, devices: []int{-1}, allow: true, has: []string{"weights not estimated"}},
		{name: "unconfigured desktop uses the default total", cmd: "vllm serve meta-llama/Llama-3-8B --gpu-memory-utilization 0.9", budget: "unconfigured-desktop",
			engine: "vLLM", required: 14.4, devices: []int{-1}, allow: false},
		{name: "vllm chat is a client", cmd: "vllm chat --url http://localhost:8000/v1", notGPU: true},
		{name: "vllm bench serve is a client", cmd: "vllm bench serve --model meta-llama/Llama-3-8B", notGPU: true},
		{name: "vllm --version", cmd: "vllm --version", notGPU: true},
	}, nil)
}

func TestEstimateSGLang(t *testing.T) {
	runEstCases(t, []estCase{
		{name: "default claims the whole GPU", cmd: "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct", engine: "SGLang", required: 24, devices: []int{-1}, allow: false,
			has: []string{"claims the whole GPU", "--mem-fraction-static 0.71"}},
		{name: "explicit fraction plus runtime reserve", cmd: "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.6",
			engine: "SGLang", required: 0.6*24 + 2.8, devices: []int{-1}, allow: true},
		{name: "80 GB card reserve", cmd: "python3 -m sglang.launch_server --model Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.8 --tp 1", budget: "2gpu-headless",
			engine: "SGLang", required: 0.8*80 + 9.5, devices: []int{0}, allow: true},
		{name: "tp 2", cmd: "sglang serve --model-path meta-llama/Llama-3.1-70B-Instruct --tp-size 2 --mem-fraction-static 0.85", budget: "2gpu-headless",
			engine: "SGLang", required: 2 * (0.85*80 + 9.5), devices: []int{0, 1}, allow: true},
		{name: "weights exceed the fraction", cmd: "python -m sglang.launch_server --model-path meta-llama/Llama-3-70B --mem-fraction-static 0.5",
			engine: "SGLang", required: 72.21, devices: []int{-1}, allow: false, has: []string{"exceed --mem-fraction-static", "--tp-size"}},
	}, nil)
}

func TestEstimateTGI(t *testing.T) {
	runEstCases(t, []estCase{
		{name: "default fraction 1.0", cmd: "text-generation-launcher --model-id mistralai/Mistral-7B-v0.1", engine: "TGI", required: 24, devices: []int{-1}, allow: false,
			has: []string{"default is 1.0", "--cuda-memory-fraction 0.83"}},
		{name: "fraction flag", cmd: "text-generation-launcher --model-id mistralai/Mistral-7B-v0.1 --cuda-memory-fraction 0.5", engine: "TGI", required: 12, devices: []int{-1}, allow: true},
		{name: "fraction from the environment", cmd: "text-generation-launcher", env: []string{"MODEL_ID=mistralai/Mistral-7B-v0.1", "CUDA_MEMORY_FRACTION=0.5"},
			engine: "TGI", required: 12, devices: []int{-1}, allow: true},
		{name: "all visible GPUs by default", cmd: "text-generation-launcher --model-id meta-llama/Llama-3.1-70B-Instruct", budget: "2gpu-headless",
			engine: "TGI", required: 160, devices: []int{0, 1}, allow: true},
		{name: "--num-shard 1", cmd: "text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct --num-shard 1", budget: "2gpu-headless",
			engine: "TGI", required: 80, devices: []int{0}, allow: true},
		{name: "--quantize awq, weights over the fraction", cmd: "text-generation-launcher --model-id meta-llama/Llama-3-70B --quantize awq --cuda-memory-fraction 0.5",
			engine: "TGI", required: 32.6*1.1 + 0.5, devices: []int{-1}, allow: false, has: []string{"0.5 byte/param (--quantize awq)", "--num-shard"}},
	}, nil)
}

func TestEstimateLlamaCpp(t *testing.T) {
	q4 := int64(4920734336) // an 8B Q4_K_M file: 4.58 GB
	big := int64(42520395776)
	runEstCases(t, []estCase{
		{name: "all layers, 8k context", cmd: "llama-server -m /m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf -ngl 99 -c 8192", files: map[string]int64{"/m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf": q4},
			engine: "llama.cpp", required: 4.583 + 1 + 0.5, devices: []int{-1}, allow: true, has: []string{"33 of 33 layers", "8192 tokens x 128 KiB"}},
		{name: "half the layers", cmd: "llama-cli -m /m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf -ngl 16 -c 8192", files: map[string]int64{"/m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf": q4},
			engine: "llama.cpp", required: 4.583*16/33 + 0.5 + 0.5, devices: []int{-1}, allow: true},
		{name: "no layers", cmd: "llama-server -m /m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf --n-gpu-layers 0", files: map[string]int64{"/m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf": q4},
			engine: "llama.cpp", required: 0.5, devices: []int{-1}, allow: true},
		{name: "q8 KV cache", cmd: "llama-server -m /m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf -ngl all -c 16384 -ctk q8_0 -ctv q8_0", files: map[string]int64{"/m/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf": q4},
			engine: "llama.cpp", required: 4.583 + 2*1.0625/2 + 0.5, devices: []int{-1}, allow: true},
		{name: "auto fit caps at total - 1 GiB", cmd: "llama-server -m /m/Llama-3.3-70B-Instruct-Q4_K_M.gguf", files: map[string]int64{"/m/Llama-3.3-70B-Instruct-Q4_K_M.gguf": big},
			engine: "llama.cpp", required: 23, devices: []int{-1}, allow: false, has: []string{"keeping 1.0 GB free per GPU", "--fit-target 4096"}},
		{name: "--fit-target the headroom fits", cmd: "llama-server -m /m/Llama-3.3-70B-Instruct-Q4_K_M.gguf --fit-target 4096", files: map[string]int64{"/m/Llama-3.3-70B-Instruct-Q4_K_M.gguf": big},
			engine: "llama.cpp", required: 20, devices: []int{-1}, allow: true},
		{name: "--fit off claims everything", cmd: "llama-server -m /m/Llama-3.3-70B-Instruct-Q4_K_M.gguf --fit off", files: map[string]int64{"/m/Llama-3.3-70B-Instruct-Q4_K_M.gguf": big},
			engine: "llama.cpp", required: 39.6 + 4096*128.0/1024/1024 + 0.5, devices: []int{-1}, allow: false},
		{name: "split GGUF counts every part", cmd: "llama-server -m /m/big-00001-of-00002.gguf -ngl 999 -c 4096", files: map[string]int64{"/m/big-00001-of-00002.gguf": 1 << 30, "/m/big-00002-of-00002.gguf": 1 << 30},
			engine: "llama.cpp", required: 2 + 0.5 + 0.5, devices: []int{-1}, allow: true, has: []string{"2 parts"}},
		{name: "-hf from the name", cmd: "llama-server -hf unsloth/Qwen3-8B-GGUF:Q8_0 -ngl 99 -c 4096", engine: "llama.cpp", required: 7.45 + 0.5 + 0.5, devices: []int{-1}, allow: true},
		{name: "split over two GPUs by size", cmd: "llama-server -m /m/big.gguf -ngl 99 -c 4096", budget: "2gpu-headless", files: map[string]int64{"/m/big.gguf": 40 << 30},
			engine: "llama.cpp", required: 41, devices: []int{0, 1}, allow: true},
		{name: "--device none is CPU", cmd: "llama-server -m /m/x.gguf --device none", files: map[string]int64{"/m/x.gguf": 1}, notGPU: true},
		{name: "no model", cmd: "llama-cli --version", notGPU: true},
	}, nil)
}

// writeGGUF writes a minimal GGUF v3 header for a Llama-3-8B-like model.
func writeGGUF(t *testing.T, path string) {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	w(uint32(3))
	w(uint64(0)) // tensors
	kvs := []func(){
		func() { str("general.architecture"); w(uint32(ggufString)); str("llama") },
		func() { str("general.name"); w(uint32(ggufString)); str("test") },
		func() { str("llama.block_count"); w(uint32(ggufUint32)); w(uint32(32)) },
		func() { str("llama.context_length"); w(uint32(ggufUint32)); w(uint32(8192)) },
		func() { str("llama.embedding_length"); w(uint32(ggufUint32)); w(uint32(4096)) },
		func() { str("llama.rope.freq_base"); w(uint32(ggufFloat32)); w(float32(500000)) },
		func() { str("llama.attention.head_count"); w(uint32(ggufUint32)); w(uint32(32)) },
		func() {
			str("llama.attention.head_count_kv")
			w(uint32(ggufArray))
			w(uint32(ggufInt32))
			w(uint64(3))
			w(int32(4))
			w(int32(8))
			w(int32(8))
		},
		func() {
			str("tokenizer.ggml.tokens")
			w(uint32(ggufArray))
			w(uint32(ggufString))
			w(uint64(2))
			str("a")
			str("b")
		},
	}
	w(uint64(len(kvs)))
	for _, kv := range kvs {
		kv()
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadGGUF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.gguf")
	writeGGUF(t, p)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := ReadGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	want := GGUFInfo{Arch: "llama", BlockCount: 32, ContextLength: 8192, EmbeddingLength: 4096, HeadCount: 32, HeadCountKV: 8}
	if info != want {
		t.Errorf("info %+v, want %+v", info, want)
	}
	if kv, ok := info.KVBytesPerToken(2, 2); !ok || kv != 131072 {
		t.Errorf("KV/token %v %v, want 131072 (Llama-3-8B f16)", kv, ok)
	}
	for _, bad := range []string{"", "GGML....", "GGUF\x01\x00\x00\x00"} {
		if _, err := ReadGGUF(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadGGUF(%q) accepted", bad)
		}
	}
}

func TestEstimateLlamaCppReadsGGUFHeader(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mystery.gguf") // no size in the name: only the header says 32 layers
	writeGGUF(t, p)
	files := func(estCase) Files {
		return Files{
			Size: func(string) (int64, error) { return 4920734336, nil },
			Open: func(q string) (io.ReadCloser, error) { return os.Open(q) },
		}
	}
	runEstCases(t, []estCase{
		// No -c: the model's 8192-token context, 128 KiB per token from the header.
		{name: "context from the header", cmd: "llama-server -m " + p + " -ngl 99", engine: "llama.cpp", required: 4.583 + 1 + 0.5, devices: []int{-1}, allow: true,
			has: []string{"33 of 33 layers", "8192 tokens x 128 KiB"}},
		{name: "layers from the header", cmd: "llama-server -m " + p + " -ngl 16 -c 8192", engine: "llama.cpp", required: 4.583*16/33 + 0.5 + 0.5, devices: []int{-1}, allow: true,
			has: []string{"16 of 33 layers"}},
	}, files)
}

func TestEstimateOllama(t *testing.T) {
	runEstCases(t, []estCase{
		{name: "serve may fill the GPU", cmd: "ollama serve", engine: "ollama", required: 24, devices: []int{-1}, allow: false, has: []string{"OLLAMA_GPU_OVERHEAD=4294967296"}},
		{name: "serve with the headroom as overhead", cmd: "ollama serve", env: []string{"OLLAMA_GPU_OVERHEAD=4294967296"}, engine: "ollama", required: 20, devices: []int{-1}, allow: true},
		{name: "serve on two GPUs", cmd: "OLLAMA_GPU_OVERHEAD=2576980378 ollama serve", budget: "2gpu-desktop", engine: "ollama", required: 2 * 21.6, devices: []int{0, 1}, allow: true},
		{name: "run a 70b tag", cmd: "ollama run llama3:70b", engine: "ollama", required: 24, devices: []int{-1}, allow: false, has: []string{"Q4_K_M"}},
		{name: "run a 7b tag", cmd: "ollama run qwen2.5:7b", engine: "ollama", required: 3.26*1.1 + 0.5, devices: []int{-1}, allow: true},
		{name: "run a q8 tag", cmd: "ollama run llama3.1:8b-instruct-q8_0", engine: "ollama", required: 7.45*1.1 + 0.5, devices: []int{-1}, allow: true},
		{name: "run, size unknown", cmd: "ollama run llama3", engine: "ollama", required: 0, devices: nil, allow: true, has: []string{"not checked"}},
		{name: "run picks the roomiest GPU", cmd: "ollama run qwen2.5:32b", budget: "2gpu-desktop", engine: "ollama", required: 14.9*1.1 + 0.5, devices: []int{1}, allow: true},
		{name: "pull is not a GPU workload", cmd: "ollama pull llama3", notGPU: true},
		{name: "list", cmd: "ollama list", notGPU: true},
	}, nil)
}

func TestEstimateNotGPU(t *testing.T) {
	for _, cmd := range []string{"ls -l", "python train.py", "python -c print(1)", "bash -c vllm", "env", "nohup", "uv run pytest", "/usr/bin/make -j8"} {
		if e, ok := estimateCommand(strings.Fields(cmd), nil, seedBudget(), Files{}); ok {
			t.Errorf("%q estimated as %+v", cmd, e)
		}
	}
}

func TestParseHumanInt(t *testing.T) {
	for in, want := range map[string]float64{"1k": 1000, "1K": 1024, "25.6k": 25600, "4G": 4 << 30, "4g": 4e9, "123": 123} {
		if got, err := parseHumanInt(in); err != nil || got != want {
			t.Errorf("parseHumanInt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseHumanInt("lots"); err == nil {
		t.Error("parseHumanInt(lots) accepted")
	}
}

func TestIsGPUWorkload(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"vllm", "serve", "m"}, true},
		{[]string{"/opt/bin/vllm", "serve", "m"}, true},
		{[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}, true},
		{[]string{"python", "-m", "sglang.launch_server"}, true},
		{[]string{"text-generation-launcher"}, true},
		{[]string{"llama-server", "-m", "x.gguf"}, true},
		{[]string{"ollama", "serve"}, true},
		{[]string{"env", "CUDA_VISIBLE_DEVICES=0", "vllm", "serve", "m"}, true},
		{[]string{"ls", "-l"}, false},
		{[]string{"python3", "train.py"}, false},
		{[]string{}, false},
	} {
		if got := IsGPUWorkload(tc.argv); got != tc.want {
			t.Errorf("IsGPUWorkload(%q) = %v, want %v", tc.argv, got, tc.want)
		}
		// Every command the estimator handles must be recognised here too.
		if _, ok := estimateCommand(tc.argv, nil, Budget{TotalGB: 24, AvailableGB: 20}, Files{Size: func(string) (int64, error) { return 1 << 30, nil }}); ok && !IsGPUWorkload(tc.argv) {
			t.Errorf("estimateCommand handles %q but IsGPUWorkload says no", tc.argv)
		}
	}
}

// estimateCommand estimates the VRAM argv will claim under budget b, as
// PreflightCommandFiles does before its check: env is the command's
// environment, f reads the model files it names. ok=false: argv is not a
// GPU workload paddock knows.
func estimateCommand(argv []string, env []string, b Budget, f Files) (Estimate, bool) {
	return estimate(cmdline.Unwrap(argv, env), argv, b, f)
}
