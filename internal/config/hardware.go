package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

// hardwareOnlyKeys are vLLM settings that only the hardware timing model
// uses: without hardware they are accepted and reported as without effect.
var hardwareOnlyKeys = []string{"tensor_parallel_size", "dtype", "quantization", "kv_cache_dtype", "gpu_memory_utilization", "gpu_interconnect"}

// resolveHardware builds the hardware timing model when hardware is set:
// the model's shape from --model, the operator tables of the GPU and
// engine type, and the KV pool (num_gpu_blocks unless set explicitly;
// max_model_len defaults to the model's max_position_embeddings as in
// vLLM). Every problem is a startup error; the model's remarks (a GPU
// without tables) are warnings.
func resolveHardware(cfg *Config, merged map[string]any) ([]problem, []string) {
	set := func(key string) bool { _, ok := merged[key]; return ok }
	if cfg.Hardware == "" {
		var keys []string
		for _, k := range hardwareOnlyKeys {
			if set(k) {
				keys = append(keys, "--"+strings.ReplaceAll(k, "_", "-"))
			}
		}
		if len(keys) == 0 {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("accepted, no effect without --hardware: %s (docs/hardware.md)", strings.Join(keys, ", "))}
	}
	var probs []problem
	fail := func(keys []string, format string, args ...any) {
		probs = append(probs, problem{keys: keys, msg: fmt.Sprintf(format, args...)})
	}
	if set("timing_model") {
		fail([]string{"hardware", "timing_model"}, "hardware %s conflicts with timing_model %s: the hardware model is the timing model", cfg.Hardware, cfg.TimingModel)
	}
	if cfg.PlannerProfileData != "" {
		fail([]string{"hardware", "planner_profile_data"}, "hardware %s conflicts with planner_profile_data: the hardware model is the timing model", cfg.Hardware)
	}
	if cfg.TensorParallelSize < 1 {
		fail([]string{"tensor_parallel_size"}, "tensor_parallel_size must be >= 1, got %d", cfg.TensorParallelSize)
	}
	util := cfg.GPUMemoryUtilization
	if util <= 0 || util > 1 {
		fail([]string{"gpu_memory_utilization"}, "gpu_memory_utilization must be in (0, 1], got %v", util)
	}
	if len(probs) > 0 {
		return probs, nil
	}
	tp := cfg.TensorParallelSize
	shape, err := modelshape.Resolve(cfg.Model)
	if err != nil {
		fail([]string{"model"}, "hardware %s: --model %v", cfg.Hardware, err)
		return probs, nil
	}
	quant := cfg.Quantization
	if strings.EqualFold(quant, "none") {
		quant = ""
	}
	ic, err := hardware.ParseInterconnect(cfg.GPUInterconnect)
	if err != nil {
		fail([]string{"gpu_interconnect"}, "hardware %s: %v", cfg.Hardware, err)
		return probs, nil
	}
	m, err := hardware.New(hardware.Options{
		GPU: cfg.Hardware, Shape: shape, TP: tp, Dtype: cfg.Dtype, Quantization: quant,
		KVCacheDtype: cfg.KVCacheDtype, EngineType: string(cfg.EngineType), LoRARank: cfg.MaxLoRARank,
		Interconnect: ic,
	})
	if err != nil {
		fail([]string{"hardware"}, "hardware %s: %v", cfg.Hardware, err)
		return probs, nil
	}
	var warns []string
	for _, n := range m.Notes() {
		warns = append(warns, "hardware: "+n)
	}
	if cfg.EngineType == engine.EngineVLLM {
		applyVLLMBatchDefaults(cfg, m.GPU(), set)
	}
	if !set("max_model_len") {
		cfg.MaxModelLen = shape.MaxPosition
		if !cfg.EnableChunkedPrefill && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
			fail([]string{"enable_chunked_prefill", "max_num_batched_tokens", "max_model_len"},
				"enable_chunked_prefill=false requires max_num_batched_tokens (%d) >= max_model_len (%d, %s's max_position_embeddings; set --max-model-len)",
				cfg.MaxNumBatchedTokens, cfg.MaxModelLen, shape.Name)
			return probs, nil
		}
	}
	// Each engine sizes its pool its own way; gpu_memory_utilization is
	// TensorRT-LLM's free_gpu_memory_fraction (both default 0.9) and, when
	// given, SGLang's mem_fraction_static (else SGLang's default by TP).
	sizing := hardware.PoolVLLM
	switch cfg.EngineType {
	case engine.EngineTRTLLM:
		sizing = hardware.PoolTRTLLM
	case engine.EngineSGLang:
		sizing = hardware.PoolSGLang
		if !set("gpu_memory_utilization") {
			util = 0
		}
	}
	mem, err := m.Memory(hardware.MemoryOptions{
		Sizing: sizing, GPUMemoryUtilization: util, MaxModelLen: cfg.MaxModelLen,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, MaxNumSeqs: cfg.MaxNumSeqs, BlockSize: cfg.EffectiveBlockSize(),
	})
	switch {
	case err != nil && (mem.KVCache <= 0 || !cfg.NumGPUBlocksOverridden):
		// Weights that do not fit are refused even with
		// num_gpu_blocks_override, which only replaces the block count.
		fail([]string{"hardware"}, "hardware %s: %v", cfg.Hardware, err)
		return probs, warns
	case err != nil && !errors.Is(err, hardware.ErrDoesNotFit):
		fail([]string{"hardware"}, "hardware %s: %v", cfg.Hardware, err)
		return probs, warns
	}
	if !cfg.NumGPUBlocksOverridden {
		cfg.NumGPUBlocks = mem.Blocks
	}
	sg, _ := merged["sglang"].(map[string]any)
	if _, runSet := sg["max_running_requests"]; cfg.EngineType == engine.EngineSGLang && !runSet && !set("max_num_seqs") {
		cfg.SGLang.MaxRunningRequests = sglangMaxRunningRequests(int64(cfg.NumGPUBlocks)*int64(cfg.EffectiveBlockSize()), cfg.MaxModelLen)
	}
	cfg.HardwareTiming = m
	if !set("sleep_weights_gb") {
		// A wake-up from sleep reloads this GPU's share of the weights.
		cfg.SleepWeightsGB = float64(m.WeightBytes()) / 1e9
	}
	return nil, warns
}

// applyVLLMBatchDefaults gives max_num_seqs and max_num_batched_tokens the
// defaults `vllm serve` picks for the GPU when they are not set
// (vllm/engine/arg_utils.py, the OpenAI API server's entries of EngineArgs's
// batch defaults — _set_default_args in v0.9–v0.11, get_batch_defaults on
// main — asserted by vLLM's test_defaults_with_usage_context): 1024
// sequences and 8192 tokens on a GPU of at least 70 GiB whose name does not
// contain "a100" (H100, H200, B200, GB200, GH200; a larger token budget
// slowed A100, vLLM PR 17885), 256 and 2048 on any other; the sequence limit
// never exceeds the token budget. Without --hardware the mock keeps its own
// defaults (256 and 8192). The token budget is left alone without chunked
// prefill, where it must cover max_model_len.
func applyVLLMBatchDefaults(cfg *Config, gpu hardware.GPU, set func(string) bool) {
	seqs, tokens := 256, 2048
	if gpu.MemBytes >= 70<<30 && !strings.Contains(strings.ToLower(gpu.Name), "a100") {
		seqs, tokens = 1024, 8192
	}
	if !set("max_num_batched_tokens") && cfg.EnableChunkedPrefill {
		cfg.MaxNumBatchedTokens = tokens
	}
	if !set("max_num_seqs") {
		cfg.MaxNumSeqs = min(seqs, cfg.MaxNumBatchedTokens)
	}
}

// sglangMaxRunningRequests is the running-batch limit SGLang derives from
// its KV pool when --max-running-requests is not given (sglang/srt/
// model_executor/model_runner.py and managers/scheduler.py): the request
// pool holds poolTokens / context_len × 512 requests, clamped to [2048,
// 4096], and the limit is the smaller of that and half the pool's tokens.
// With --hardware the pool is the one the GPU would have, so the limit is
// too; without it (a synthetic pool) the mock keeps max_num_seqs.
func sglangMaxRunningRequests(poolTokens int64, contextLen int) int {
	reqs := int64(2048)
	if contextLen > 0 {
		reqs = min(max(poolTokens*512/int64(contextLen), 2048), 4096)
	}
	return int(max(1, min(poolTokens/2, reqs)))
}

// hardwareTimingModel is the hardware model as the engine's timing model,
// or nil (an untyped nil, so the engine builds its configured model).
func (c *Config) hardwareTimingModel() engine.TimingModel {
	if c.HardwareTiming == nil {
		return nil
	}
	return c.HardwareTiming
}
