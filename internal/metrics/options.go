package metrics

import (
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Family names a set of metric families a Registry exposes.
type Family string

// Metric families (--metrics-family, with "auto" resolved by the caller).
const (
	// FamilyVLLM is vllm:* (and the mocker_* product metrics); the default.
	FamilyVLLM Family = "vllm"
	// FamilySGLang is sglang:*.
	FamilySGLang Family = "sglang"
	// FamilyBoth is vllm:* and sglang:* side by side.
	FamilyBoth Family = "both"
)

// Options is what a Registry needs to know of the server it describes:
// only the settings that shape its families, labels and constant series.
// internal/worker builds it once from the configuration. The zero value
// describes one vLLM rank with every optional family off.
type Options struct {
	// Model is the model_name label (the first served model name).
	Model string
	// Family selects the families; "" means FamilyVLLM.
	Family Family
	// HideDeprecated leaves out vLLM's deprecated families
	// (--deprecated-metrics=false); the default shows them.
	HideDeprecated bool
	// DPSize is the number of DP ranks with their own children; 0 means 1.
	DPSize int

	// EngineType is the engine the ranks imitate (mocker_info's label; the
	// SGLang engine counts retractions instead of preemptions); "" is vllm.
	EngineType engine.EngineType
	// WorkerType is mocker_info's worker_type label (aggregated, prefill or
	// decode).
	WorkerType string
	// TimingModel is mocker_info's timing_model label.
	TimingModel engine.TimingModelKind

	// BlockSize is the effective KV block size in tokens, NumGPUBlocks the
	// pool size of one rank; NumGPUBlocksOverridden says a source set it
	// (vllm:cache_config_info's num_gpu_blocks_override).
	BlockSize              int
	NumGPUBlocks           int
	NumGPUBlocksOverridden bool
	// MaxModelLen bounds the request-length histograms' buckets.
	MaxModelLen int
	// EnablePrefixCaching and HashAlgo are vllm:cache_config_info labels.
	EnablePrefixCaching bool
	HashAlgo            string
	// KVCacheDtype ("" means auto) and GPUMemoryUtilization (0 means
	// vLLM's 0.9) are vllm:cache_config_info labels too; they size the
	// pool with the hardware timing model.
	KVCacheDtype         string
	GPUMemoryUtilization float64
	// Hardware names the GPU of the hardware timing model (docs/hardware.md);
	// when set, mocker_info's timing_model is "hardware".
	Hardware string

	// Disaggregated adds the KV handoff and transfer families.
	Disaggregated bool
	// MaxLoRAs, when > 0, adds the LoRA families (max_lora label); 0 means
	// LoRA is off.
	MaxLoRAs int
	// SpeculativeTokens, when > 0, adds the speculative decoding families
	// with one accepted-per-position series per draft position.
	SpeculativeTokens int
	// OffloadTiers are the media of the KV offload tiers below the GPU
	// pool, in order; any adds the offload families with a series per
	// medium. nil: no offload.
	OffloadTiers []kv.Medium
	// SleepMode adds vllm:engine_sleep_state (--enable-sleep-mode).
	SleepMode bool
}

// kvCacheDtypeLabel is KVCacheDtype with "" replaced by auto.
func (o *Options) kvCacheDtypeLabel() string {
	if o.KVCacheDtype == "" {
		return "auto"
	}
	return o.KVCacheDtype
}

// gpuMemoryUtilization is GPUMemoryUtilization with 0 replaced by 0.9.
func (o *Options) gpuMemoryUtilization() float64 {
	if o.GPUMemoryUtilization == 0 {
		return 0.9
	}
	return o.GPUMemoryUtilization
}

// resolvedFamily is Family with "" replaced by FamilyVLLM.
func (o *Options) resolvedFamily() Family {
	if o.Family == "" {
		return FamilyVLLM
	}
	return o.Family
}
