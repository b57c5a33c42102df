package vram

import (
	"math"
	"testing"
)

func TestParseModel(t *testing.T) {
	tests := []struct {
		name    string
		params  float64
		token   string
		bytes   float64
		hint    string
		comment string
	}{
		{"meta-llama/Llama-3-70B", 70, "70B", 0, "", ""},
		{"meta-llama/Llama-3-8B", 8, "8B", 0, "", ""},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", 8, "8B", 0, "", "3.1 is a version, not a size"},
		{"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.5, "1.5B", 0, "", ""},
		{"meta-llama/Llama-3.1-405B-Instruct", 405, "405B", 0, "", ""},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 56, "8x7B", 0, "", "all experts resident"},
		{"mistralai/Mixtral-8x22B-v0.1", 176, "8x22B", 0, "", ""},
		{"Qwen/Qwen3-30B-A3B", 30, "30B", 0, "", "A3B is the active count: total counts"},
		{"Qwen/Qwen2.5-0.5B-Instruct", 0.5, "0.5B", 0, "", ""},
		{"Qwen/Qwen2.5-0.5B-Instruct-AWQ", 0.5, "0.5B", 0.5, "AWQ", ""},
		{"TheBloke/Llama-2-70B-GPTQ", 70, "70B", 0.5, "GPTQ", ""},
		{"Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", 72, "72B", 1, "Int8", "an explicit width beats the method's usual one"},
		{"neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 70, "70B", 1, "FP8", ""},
		{"Meta-Llama-3-8B-Instruct-Q4_K_M.gguf", 8, "8B", 0.5, "Q4_K_M", ""},
		{"/models/qwen2.5-7b-instruct-q8_0.gguf", 7, "7b", 1, "q8_0", ""},
		{"unsloth/Llama-3.2-3B-Instruct-bnb-4bit", 3, "3B", 0.5, "4bit", ""},
		{"google/gemma-2-9b-it", 9, "9b", 0, "", ""},
		{"llama3:70b", 70, "70b", 0, "", "ollama tag"},
		{"llama3.1:8b-instruct-fp16", 8, "8b", 2, "fp16", ""},
		{"openai/gpt-oss-120b", 120, "120b", 0, "", ""},
		{"HuggingFaceTB/SmolLM2-135M", 0.135, "135M", 0, "", "millions"},
		{"some-model-bf16", 0, "", 2, "bf16", "no size"},
		{"model-fp32-70B", 70, "70B", 4, "fp32", ""},
		{"RedHatAI/Qwen2.5-7B-Instruct-quantized.w4a16", 7, "7B", 0.5, "w4a16", ""},
		{"/home/u/models/7B/ggml-model-f16.gguf", 7, "7B", 2, "f16", "size in a directory"},
		{"google/gemma-3n-E4B-it", 0, "", 0, "", "E4B is glued to a letter: unknown"},
		{"facebook/opt-125m", 0.125, "125m", 0, "", ""},
		{"gpt2", 0, "", 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mi := ParseModel(tc.name)
			if math.Abs(mi.ParamsB-tc.params) > 1e-9 || mi.SizeToken != tc.token {
				t.Errorf("params = %v (%q), want %v (%q) %s", mi.ParamsB, mi.SizeToken, tc.params, tc.token, tc.comment)
			}
			if mi.BytesPerParam != tc.bytes || mi.Hint != tc.hint {
				t.Errorf("precision = %v (%q), want %v (%q)", mi.BytesPerParam, mi.Hint, tc.bytes, tc.hint)
			}
		})
	}
}

func TestWeightsGB(t *testing.T) {
	// 70B at the 1 byte/param floor: 70e9 bytes = 65.19 GiB; with the
	// overhead (+10%, +0.5 GB) 72.2 GB.
	if w := WeightsGB(70, 1); math.Abs(w-65.19) > 0.01 {
		t.Errorf("WeightsGB(70, 1) = %v", w)
	}
	if o := withOverhead(WeightsGB(70, 1)); math.Abs(o-72.21) > 0.01 {
		t.Errorf("withOverhead = %v", o)
	}
}
