package main

import (
	"math"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

// trtllm-bench's batch limits. A `trtllm-bench throughput` run (the
// TensorRT-LLM perf-overview tables) that is not given --max_batch_size and
// --max_num_tokens does not run with the engine's generic defaults: it
// derives both from the dataset's mean ISL/OSL and the KV cache the GPUs
// can hold (TensorRT-LLM tensorrt_llm/bench/build/tuning.py,
// calc_engine_setting and finetune_setting; the v0.17 TensorRT flow for
// FP8 and unquantized models, and the PyTorch flow of 1.0, whose table adds
// NVFP4 at half a byte per weight). The mock's defaults (max_num_seqs 256,
// max_num_batched_tokens 8192) are vLLM's; replaying such a point with them
// caps the batch far below what the benchmark ran, so the table passes the
// limits trtllm-bench would have picked. This is the benchmark's stated
// procedure, not a fit: nothing here reads the published figures.

// trtllmBenchSources are the sources measured with `trtllm-bench
// throughput` and no explicit batch limits.
var trtllmBenchSources = map[string]bool{
	"trtllm-perf-overview":       true,
	"trtllm-perf-overview-v0.17": true,
}

// trtllmBenchKVFraction is calc_engine_setting's kv_cache_gpu_mem_fraction
// default.
const trtllmBenchKVFraction = 0.95

// trtllmBenchLimits returns the max batch size and max num tokens
// trtllm-bench derives for p, and false when p was not measured that way
// (or its model or GPU is unknown here: replay then reports that itself).
func trtllmBenchLimits(p Point) (maxBatch, maxTokens int, ok bool) {
	if p.Load != LoadMax || p.Engine != "trtllm" || !trtllmBenchSources[p.Source] {
		return 0, 0, false
	}
	isl, err1 := strconv.Atoi(p.ISL)
	osl, err2 := strconv.Atoi(p.OSL)
	if err1 != nil || err2 != nil || isl <= 0 || osl <= 0 {
		return 0, 0, false
	}
	s, known := modelshape.Known(p.Model)
	if !known {
		return 0, 0, false
	}
	gpu, err := hardware.Lookup(p.GPU)
	if err != nil {
		return 0, 0, false
	}
	const gib = 1 << 30
	weightBytes := map[string]float64{"fp8": 1, "nvfp4": 0.5}[p.Weights]
	if weightBytes == 0 {
		weightBytes = 2
	}
	kvBytes := 2.0
	if p.KVDType == "fp8" {
		kvBytes = 1
	}
	tp := max(p.TP, 1)
	// Every rank keeps at least one KV head.
	kvHeads := max(tp, s.KVHeads)
	perToken := 2 * float64(s.Layers) * float64(kvHeads) * float64(s.HeadDim) * kvBytes / gib
	engine := float64(s.Params()) * weightBytes / gib
	available := float64(gpu.MemBytes)/gib*float64(tp) - engine
	requests := available * trtllmBenchKVFraction / (perToken * float64(isl+osl))
	if requests < 1 {
		return 0, 0, false
	}
	return finetuneLimits(requests, isl, osl)
}

// finetuneLimits is trtllm-bench's rounding of the KV-bound request count
// into a max batch size (at least 64, at most 4096, rounded up to 32, 128
// or 256) and max num tokens (the batch's share of prompt tokens, at least
// 2048, at most 32768, rounded up to 256, 512 or 1024). No pipeline
// parallelism here (pp = 1).
func finetuneLimits(requests float64, isl, osl int) (maxBatch, maxTokens int, ok bool) {
	bs := min(requests, 4096)
	tok := min(bs*(1+float64(isl)/float64(osl)), 32768)
	roundUp := func(x float64, step int) int { return step * int(math.Ceil(x/float64(step))) }
	switch {
	case bs < 256:
		maxBatch = max(64, roundUp(bs, 32))
	case bs < 1024:
		maxBatch = roundUp(bs, 128)
	default:
		maxBatch = roundUp(bs, 256)
	}
	switch {
	case tok < 4096:
		maxTokens = max(2048, roundUp(tok, 256))
	case tok < 8192:
		maxTokens = roundUp(tok, 512)
	default:
		maxTokens = roundUp(tok, 1024)
	}
	return maxBatch, maxTokens, true
}
