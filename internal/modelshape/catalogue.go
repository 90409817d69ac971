package modelshape

import (
	"fmt"
	"slices"
	"strings"
)

// known holds the shapes of common open models, the values of their
// published config.json files on Hugging Face
// (https://huggingface.co/<id>/blob/main/config.json). aiconfigurator
// (ai-dynamo/aiconfigurator, aic-core/src/aiconfigurator_core/model_configs/)
// keeps copies of the Llama 3.1, Qwen3, Mixtral and DeepSeek ones; the
// table in docs/hardware.md lists each source.
var known = map[string]Shape{
	"meta-llama/Llama-3.1-8B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, MaxPosition: 131072},
	"meta-llama/Llama-3.1-70B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, MaxPosition: 131072},
	"meta-llama/Llama-3.1-405B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 126, Hidden: 16384, Heads: 128, KVHeads: 8, HeadDim: 128, Intermediate: 53248, Vocab: 128256, MaxPosition: 131072},
	"meta-llama/Llama-3.3-70B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, MaxPosition: 131072},
	"Qwen/Qwen2.5-7B-Instruct": {Architecture: "Qwen2ForCausalLM", Family: FamilyQwen2,
		Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064, MaxPosition: 32768},
	"Qwen/Qwen2.5-72B-Instruct": {Architecture: "Qwen2ForCausalLM", Family: FamilyQwen2,
		Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 29568, Vocab: 152064, MaxPosition: 32768},
	"Qwen/Qwen3-8B": {Architecture: "Qwen3ForCausalLM", Family: FamilyQwen3,
		Layers: 36, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 12288, Vocab: 151936, MaxPosition: 40960},
	"Qwen/Qwen3-14B": {Architecture: "Qwen3ForCausalLM", Family: FamilyQwen3,
		Layers: 40, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 17408, Vocab: 151936, MaxPosition: 40960},
	"Qwen/Qwen3-32B": {Architecture: "Qwen3ForCausalLM", Family: FamilyQwen3,
		Layers: 64, Hidden: 5120, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 25600, Vocab: 151936, MaxPosition: 40960},
	"Qwen/Qwen3-30B-A3B": {Architecture: "Qwen3MoeForCausalLM", Family: FamilyQwen3MoE,
		Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, Intermediate: 6144, Vocab: 151936, MaxPosition: 40960,
		MoE: MoE{Experts: 128, TopK: 8, Intermediate: 768}},
	"Qwen/Qwen3-235B-A22B": {Architecture: "Qwen3MoeForCausalLM", Family: FamilyQwen3MoE,
		Layers: 94, Hidden: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, Intermediate: 12288, Vocab: 151936, MaxPosition: 40960,
		MoE: MoE{Experts: 128, TopK: 8, Intermediate: 1536}},
	"mistralai/Mistral-7B-Instruct-v0.3": {Architecture: "MistralForCausalLM", Family: FamilyMistral,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32768, MaxPosition: 32768},
	"mistralai/Mistral-7B-v0.1": {Architecture: "MistralForCausalLM", Family: FamilyMistral,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32000, MaxPosition: 32768,
		SlidingWindow: 4096, SlidingLayers: 32},
	"mistralai/Mixtral-8x22B-v0.1": {Architecture: "MixtralForCausalLM", Family: FamilyMixtral,
		Layers: 56, Hidden: 6144, Heads: 48, KVHeads: 8, HeadDim: 128, Intermediate: 16384, Vocab: 32000, MaxPosition: 65536,
		MoE: MoE{Experts: 8, TopK: 2, Intermediate: 16384}},
	"meta-llama/Meta-Llama-3-8B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, MaxPosition: 8192},
	"meta-llama/Meta-Llama-3-70B-Instruct": {Architecture: "LlamaForCausalLM", Family: FamilyLlama,
		Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, MaxPosition: 8192},
	"mistralai/Mixtral-8x7B-Instruct-v0.1": {Architecture: "MixtralForCausalLM", Family: FamilyMixtral,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32000, MaxPosition: 32768,
		MoE: MoE{Experts: 8, TopK: 2, Intermediate: 14336}},
	"google/gemma-2-9b-it": {Architecture: "Gemma2ForCausalLM", Family: FamilyGemma2,
		Layers: 42, Hidden: 3584, Heads: 16, KVHeads: 8, HeadDim: 256, Intermediate: 14336, Vocab: 256000, MaxPosition: 8192,
		TiedEmbed: true, SlidingWindow: 4096, SlidingLayers: 21},
	"google/gemma-2-27b-it": {Architecture: "Gemma2ForCausalLM", Family: FamilyGemma2,
		Layers: 46, Hidden: 4608, Heads: 32, KVHeads: 16, HeadDim: 128, Intermediate: 36864, Vocab: 256000, MaxPosition: 8192,
		TiedEmbed: true, SlidingWindow: 4096, SlidingLayers: 23},
	"google/gemma-3-27b-it": {Architecture: "Gemma3ForConditionalGeneration", Family: FamilyGemma3,
		Layers: 62, Hidden: 5376, Heads: 32, KVHeads: 16, HeadDim: 128, Intermediate: 21504, Vocab: 262208, MaxPosition: 131072,
		TiedEmbed: true, SlidingWindow: 1024, SlidingLayers: 52},
	"deepseek-ai/DeepSeek-V3": deepSeekV3,
	"deepseek-ai/DeepSeek-R1": deepSeekV3,
	// Llama 4's text_config (TensorRT-LLM's tests keep a copy of
	// Maverick's, tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py,
	// LLAMA_4_MAVERICK_TWO_LAYER_CONFIG, at b35ac1b6, with 2 of its 48
	// layers; Scout's differs in 16 experts, interleave_moe_layer_step 1
	// and max_position_embeddings 10485760, as copies in other projects'
	// tests show):
	// one routed expert and one shared expert, both 8192 wide, in every
	// layer (Scout) or every second one (Maverick, whose other layers are
	// 16384-wide dense MLPs); three of every four layers attend within
	// chunks of 8192 positions, the fourth globally.
	"meta-llama/Llama-4-Scout-17B-16E-Instruct":     llama4(16, 1, 10485760),
	"meta-llama/Llama-4-Maverick-17B-128E-Instruct": llama4(128, 2, 1048576),
}

// llama4 is a Llama 4 text model with experts routed experts in every
// step-th layer.
func llama4(experts, step, maxPos int) Shape {
	return Shape{Architecture: "Llama4ForConditionalGeneration", Family: FamilyLlama4,
		Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 16384, Vocab: 202048, MaxPosition: maxPos,
		AttentionChunk: 8192, ChunkedLayers: 36,
		MoE: MoE{Experts: experts, TopK: 1, Intermediate: 8192, SharedIntermediate: 8192, DenseLayers: 48 - 48/step}}
}

var deepSeekV3 = Shape{Architecture: "DeepseekV3ForCausalLM", Family: FamilyDeepSeekV3,
	Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, Intermediate: 18432, Vocab: 129280, MaxPosition: 163840,
	FP8Weights: true, FP8Block: true, QuantMethod: "fp8",
	MoE: MoE{Experts: 256, TopK: 8, Intermediate: 2048, SharedIntermediate: 2048, DenseLayers: 3},
	MLA: MLA{QLoRARank: 1536, KVLoRARank: 512, QKNopeDim: 128, QKRopeDim: 64, VHeadDim: 128}}

// aliases are other spellings of catalogue ids (the base checkpoints share
// the instruct ones' shape; Meta's older "Meta-Llama-3.1" repository names).
var aliases = map[string]string{
	"meta-llama/Meta-Llama-3.1-8B-Instruct":   "meta-llama/Llama-3.1-8B-Instruct",
	"meta-llama/Meta-Llama-3.1-70B-Instruct":  "meta-llama/Llama-3.1-70B-Instruct",
	"meta-llama/Meta-Llama-3.1-405B-Instruct": "meta-llama/Llama-3.1-405B-Instruct",
	"meta-llama/Llama-3.1-8B":                 "meta-llama/Llama-3.1-8B-Instruct",
	"meta-llama/Llama-3.1-70B":                "meta-llama/Llama-3.1-70B-Instruct",
	"meta-llama/Llama-3.1-405B":               "meta-llama/Llama-3.1-405B-Instruct",
	"Qwen/Qwen2.5-7B":                         "Qwen/Qwen2.5-7B-Instruct",
	"Qwen/Qwen2.5-72B":                        "Qwen/Qwen2.5-72B-Instruct",
	"mistralai/Mistral-7B-v0.3":               "mistralai/Mistral-7B-Instruct-v0.3",
	"mistralai/Mixtral-8x7B-v0.1":             "mistralai/Mixtral-8x7B-Instruct-v0.1",
	"mistralai/Mistral-7B-Instruct-v0.1":      "mistralai/Mistral-7B-v0.1",
	"mistralai/Mixtral-8x22B-Instruct-v0.1":   "mistralai/Mixtral-8x22B-v0.1",
	"deepseek-ai/DeepSeek-V3-0324":            "deepseek-ai/DeepSeek-V3",
	"deepseek-ai/DeepSeek-R1-0528":            "deepseek-ai/DeepSeek-R1",
	"meta-llama/Llama-4-Scout-17B-16E":        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
	"meta-llama/Llama-4-Maverick-17B-128E":    "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
}

// fp8Checkpoints are the official FP8 releases of catalogue models: the
// same shape with block-scaled FP8 weights (their config.json's
// quantization_config: quant_method fp8, weight_block_size [128, 128], as
// aiconfigurator's copies in model_configs/ show).
var fp8Checkpoints = map[string]string{
	"Qwen/Qwen3-8B-FP8":        "Qwen/Qwen3-8B",
	"Qwen/Qwen3-14B-FP8":       "Qwen/Qwen3-14B",
	"Qwen/Qwen3-32B-FP8":       "Qwen/Qwen3-32B",
	"Qwen/Qwen3-30B-A3B-FP8":   "Qwen/Qwen3-30B-A3B",
	"Qwen/Qwen3-235B-A22B-FP8": "Qwen/Qwen3-235B-A22B",
}

// fp8PerChannel are FP8 releases with per-tensor or per-channel scales:
// Meta's 405B (quant_method fbgemm_fp8 in config.json) and NVIDIA's
// ModelOpt checkpoints (quant_algo FP8 in hf_quant_config.json;
// aiconfigurator keeps nvidia/Llama-3.1-70B-Instruct-FP8's).
var fp8PerChannel = map[string]struct{ base, method string }{
	"meta-llama/Llama-3.1-405B-Instruct-FP8": {"meta-llama/Llama-3.1-405B-Instruct", "fbgemm_fp8"},
	"nvidia/Llama-3.1-8B-Instruct-FP8":       {"meta-llama/Llama-3.1-8B-Instruct", "modelopt"},
	"nvidia/Llama-3.1-70B-Instruct-FP8":      {"meta-llama/Llama-3.1-70B-Instruct", "modelopt"},
	"nvidia/Llama-3.1-405B-Instruct-FP8":     {"meta-llama/Llama-3.1-405B-Instruct", "modelopt"},
	"nvidia/Llama-3.3-70B-Instruct-FP8":      {"meta-llama/Llama-3.3-70B-Instruct", "modelopt"},
	// NVIDIA's ModelOpt FP8 releases of Llama 4 (the published Llama 4
	// points of TensorRT-LLM's perf-overview run them).
	"nvidia/Llama-4-Scout-17B-16E-Instruct-FP8":     {"meta-llama/Llama-4-Scout-17B-16E-Instruct", "modelopt"},
	"nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8": {"meta-llama/Llama-4-Maverick-17B-128E-Instruct", "modelopt"},
}

// Known returns the catalogue shape of a model id (case-insensitive), and
// whether there is one.
func Known(id string) (*Shape, bool) {
	for f, base := range fp8Checkpoints {
		if strings.EqualFold(f, id) {
			s, _ := Known(base)
			s.Name, s.FP8Weights, s.FP8Block, s.QuantMethod = f, true, true, "fp8"
			return s, true
		}
	}
	for f, c := range fp8PerChannel {
		if strings.EqualFold(f, id) {
			s, _ := Known(c.base)
			s.Name, s.FP8Weights, s.QuantMethod = f, true, c.method
			return s, true
		}
	}
	key := canonical(id)
	if key == "" {
		return nil, false
	}
	s := known[key]
	s.Name = key
	if s.WeightDtype == "" {
		s.WeightDtype = "bfloat16"
	}
	return &s, true
}

func canonical(id string) string {
	for k := range known {
		if strings.EqualFold(k, id) {
			return k
		}
	}
	for a, k := range aliases {
		if strings.EqualFold(a, id) {
			return k
		}
	}
	return ""
}

// KnownIDs lists the catalogue's model ids.
func KnownIDs() []string {
	out := make([]string, 0, len(known)+len(fp8Checkpoints)+len(fp8PerChannel))
	for k := range known {
		out = append(out, k)
	}
	for k := range fp8Checkpoints {
		out = append(out, k)
	}
	for k := range fp8PerChannel {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Resolve finds a model's shape: a directory holding config.json, else a
// catalogue id.
func Resolve(model string) (*Shape, error) {
	if model == "" {
		return nil, fmt.Errorf("model shape: no --model given (a directory with config.json, or one of: %s)", strings.Join(KnownIDs(), ", "))
	}
	if isDir(model) {
		return Load(model)
	}
	if s, ok := Known(model); ok {
		return s, nil
	}
	return nil, fmt.Errorf("model shape: %q is neither a directory with config.json nor a known model id (%s)", model, strings.Join(KnownIDs(), ", "))
}
