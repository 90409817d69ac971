// Package config holds mocker-server's configuration tree: every field
// with its JSON key, its default, and its validation. All
// sources (defaults, --config file, --extra-engine-args, explicitly set CLI
// flags) decode onto the same json-tagged structs.
package config

import (
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Config is the whole configuration of one mocker-server process.
// JSON keys are the keys of the README's flag table (vLLM's names where
// vLLM has the setting); "-" and "_" are interchangeable when loading.
type Config struct {
	// Server and API fields.
	Model           string   `json:"model"`
	ServedModelName []string `json:"served_model_name"`
	// Tokenizer is a Hugging Face tokenizer directory; "" means Model
	// when Model is such a directory, else the built-in tokenizer.
	Tokenizer string `json:"tokenizer"`
	// ChatTemplate overrides the tokenizer's chat template: a file path,
	// or the template text itself.
	ChatTemplate string `json:"chat_template"`
	Host         string `json:"host"`
	Port         int    `json:"port"`
	// GRPCPort is the port of the gRPC front end (docs/grpc.md): -1 =
	// none, 0 = OS-assigned.
	GRPCPort int      `json:"grpc_port"`
	APIKey   []string `json:"api_key"`
	Seed     int64    `json:"seed"`
	// OutputLenMode is natural, max or random (internal/plan's LenMode).
	OutputLenMode string `json:"output_len_mode"`
	// ResponseMode is what an answer says: generated tokens, or the prompt
	// echoed back (llm-d-inference-sim's --mode echo).
	ResponseMode ResponseMode `json:"response_mode"`
	// NaturalOutputLen is the median natural answer length in tokens.
	NaturalOutputLen int `json:"natural_output_len"`
	// NaturalOutputLenSigma is the log-normal shape σ of natural lengths.
	NaturalOutputLenSigma     float64       `json:"natural_output_len_sigma"`
	ReasoningField            string        `json:"reasoning_field"`
	EnableRequestIDHeaders    bool          `json:"enable_request_id_headers"`
	EnablePromptTokensDetails bool          `json:"enable_prompt_tokens_details"`
	EnableForceIncludeUsage   bool          `json:"enable_force_include_usage"`
	TrustRequestChatTemplate  bool          `json:"trust_request_chat_template"`
	MaxRequestBodyBytes       int64         `json:"max_request_body_bytes"`
	WorkerID                  string        `json:"worker_id"`
	StartupTime               float64       `json:"startup_time"`
	MetricsFamily             MetricsFamily `json:"metrics_family"`
	DeprecatedMetrics         bool          `json:"deprecated_metrics"`
	LogLevel                  LogLevel      `json:"log_level"`

	// EmbeddingDim is the length of /v1/embeddings vectors.
	EmbeddingDim int `json:"embedding_dim"`

	// Runner, Convert and NumLabels choose what kind of model is served:
	// a generative one, or a pooling one with its task and endpoints
	// (docs/pooling.md).
	Runner    Runner  `json:"runner"`
	Convert   Convert `json:"convert"`
	NumLabels int     `json:"num_labels"`

	// Tool calling fields (docs/tools-and-structured-outputs.md).
	EnableAutoToolChoice           bool    `json:"enable_auto_tool_choice"`
	ToolCallParser                 string  `json:"tool_call_parser"`
	ToolCallProbability            float64 `json:"tool_call_probability"`
	ToolCallAfterResultProbability float64 `json:"tool_call_after_result_probability"`
	ExcludeToolsWhenToolChoiceNone bool    `json:"exclude_tools_when_tool_choice_none"`

	// Engine and scheduler fields.
	EngineType            engine.EngineType       `json:"engine_type"`
	NumGPUBlocks          int                     `json:"num_gpu_blocks"`
	BlockSize             int                     `json:"block_size"`
	MaxModelLen           int                     `json:"max_model_len"`
	MaxNumSeqs            int                     `json:"max_num_seqs"`
	MaxNumBatchedTokens   int                     `json:"max_num_batched_tokens"`
	EnablePrefixCaching   bool                    `json:"enable_prefix_caching"`
	EnableChunkedPrefill  bool                    `json:"enable_chunked_prefill"`
	PreemptionMode        engine.PreemptionMode   `json:"preemption_mode"`
	SchedulingPolicy      engine.SchedulingPolicy `json:"scheduling_policy"`
	PrefixCachingHashAlgo HashAlgo                `json:"prefix_caching_hash_algo"`
	HashSeed              string                  `json:"hash_seed"`

	// SGLang and TensorRT-LLM fields.
	SGLang SGLangConfig `json:"sglang"`
	// EvictionBackend orders the vllm/trtllm pool's free blocks for
	// eviction: lru (default), lineage or multi_lru.
	EvictionBackend engine.EvictionBackend `json:"eviction_backend"`
	TRTLLM          TRTLLMConfig           `json:"trtllm"`

	// Timing fields (docs/timing-model.md).
	TimingModel        engine.TimingModelKind `json:"timing_model"`
	PlannerProfileData string                 `json:"planner_profile_data"`
	FixedPrefillMs     float64                `json:"fixed_prefill_ms"`
	FixedDecodeMs      float64                `json:"fixed_decode_ms"`
	// The fixed model's extensions (engine.FixedJitter; llm-d-inference-sim's
	// latency flags map onto them): per-token prefill cost, the standard
	// deviations of the two terms, and the load factor of a full batch.
	FixedPrefillMsPerToken float64 `json:"fixed_prefill_ms_per_token"`
	FixedPrefillStdMs      float64 `json:"fixed_prefill_std_ms"`
	FixedDecodeStdMs       float64 `json:"fixed_decode_std_ms"`
	FixedLoadFactor        float64 `json:"fixed_load_factor"`
	SpeedupRatio           float64 `json:"speedup_ratio"`
	DecodeSpeedupRatio     float64 `json:"decode_speedup_ratio"`

	// Hardware timing model (docs/hardware.md; hardware.go). The vLLM
	// settings below it take effect only with Hardware set.
	Hardware             string  `json:"hardware"`
	TensorParallelSize   int     `json:"tensor_parallel_size"`
	Dtype                string  `json:"dtype"`
	Quantization         string  `json:"quantization"` // "" = none
	KVCacheDtype         string  `json:"kv_cache_dtype"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// GPUInterconnect prices the tensor-parallel all-reduces: measured
	// (the GPU's measured table) or pcie (NCCL's ring over the
	// catalogue's PCIe generation). Not a vLLM setting.
	GPUInterconnect string `json:"gpu_interconnect"`
	// HardwareTiming is the model Load built from the keys above; nil
	// without Hardware. Not a JSON key.
	HardwareTiming *hardware.Model `json:"-"`

	// Reasoning framing; nil means no framing.
	Reasoning *ReasoningConfig `json:"reasoning"`

	// Data parallelism.
	DPSize    int       `json:"dp_size"`
	DPRouting DPRouting `json:"dp_routing"`

	// Disaggregated prefill/decode (docs/disaggregation.md).
	WorkerType              WorkerType                `json:"worker_type"`
	KVTransferConfig        *KVTransferConfig         `json:"kv_transfer_config"` // nil = no connector
	KVModelShape            KVModelShape              `json:"kv_model_shape"`     // unset: kv_bytes_per_token as set
	BootstrapPort           int                       `json:"bootstrap_port"`     // 0 = none
	AdvertiseHost           string                    `json:"advertise_host"`     // empty until Load resolves it
	KVBytesPerToken         int64                     `json:"kv_bytes_per_token"`
	KVTransferBandwidth     float64                   `json:"kv_transfer_bandwidth"` // GB/s
	KVTransferLatencyMs     float64                   `json:"kv_transfer_latency_ms"`
	KVTransferTimingMode    engine.TransferTimingMode `json:"kv_transfer_timing_mode"`
	HandoffSessionTimeoutMs int64                     `json:"handoff_session_timeout_ms"`

	// Speculative decoding and KV offload tiers
	// (docs/speculative-and-offload.md; speculative.go, offload.go).
	SpeculativeConfig    *SpeculativeConfig `json:"speculative_config"`
	KVOffloadingSize     float64            `json:"kv_offloading_size"` // GiB, 0 = no CPU tier
	KVOffloadingBackend  OffloadingBackend  `json:"kv_offloading_backend"`
	KVOffloadingDiskSize float64            `json:"kv_offloading_disk_size"` // GiB, 0 = no disk tier
	OffloadBandwidth     *OffloadBandwidth  `json:"offload_bandwidth"`       // nil: DefaultOffloadBandwidth
	// kv_transfer_config with the OffloadingConnector is the other way to
	// a CPU tier (KVTransferConfig, above).

	// Multimodal inputs (docs/multimodal.md; multimodal.go).
	LimitMMPerPrompt      *MMLimitSpec    `json:"limit_mm_per_prompt"` // nil: vLLM's defaults
	AllowedLocalMediaPath string          `json:"allowed_local_media_path"`
	AllowedMediaDomains   []string        `json:"allowed_media_domains"`
	MMProcessorCacheGB    float64         `json:"mm_processor_cache_gb"`
	MMEncoderTPMode       MMEncoderTPMode `json:"mm_encoder_tp_mode"`
	DisableChunkedMMInput bool            `json:"disable_chunked_mm_input"`
	EnableMMEmbeds        bool            `json:"enable_mm_embeds"`      // accept image_embeds and audio_embeds parts, as vLLM
	InterleaveMMStrings   bool            `json:"interleave_mm_strings"` // string-format prompts keep items where their parts are
	// MMProcessorModel names the model whose multimodal processor applies
	// when --model is not a multimodal model the mock knows ("none": a
	// text-only model, media refused as vLLM refuses them).
	MMProcessorModel    string          `json:"mm_processor_model"`
	MMEncoderMsPerToken float64         `json:"mm_encoder_ms_per_token"`
	MaxMediaItemBytes   int             `json:"max_media_item_bytes"`
	MMUnfetchedMedia    *UnfetchedMedia `json:"mm_unfetched_media"` // nil: DefaultUnfetchedMedia
	// MMProcessorKwargs is vLLM's --mm-processor-kwargs: the model's
	// processor settings (Qwen's max_pixels, …) every request's
	// mm_processor_kwargs merge over (nil: none).
	MMProcessorKwargs *MMProcessorKwargs `json:"mm_processor_kwargs"`

	// Sleep mode (docs/sleep-mode.md; sleep.go).
	EnableSleepMode    bool    `json:"enable_sleep_mode"`
	SleepWeightsGB     float64 `json:"sleep_weights_gb"`     // weights a wake-up reloads
	SleepHostBandwidth float64 `json:"sleep_host_bandwidth"` // GB/s from host memory (level 1)
	SleepDiskBandwidth float64 `json:"sleep_disk_bandwidth"` // GB/s from disk (level 2)

	// KV events and FPM publishing (docs/kv-events.md, docs/metrics.md).
	KVEventsConfig           *KVEventsConfig  `json:"kv_events_config"`
	ZMQKVEventsPort          int              `json:"zmq_kv_events_port"` // 0 = none
	ZMQReplayPort            int              `json:"zmq_replay_port"`    // 0 = none
	KVEventsEncoding         KVEventsEncoding `json:"kv_events_encoding"`
	KVEventsReplayTopicFrame bool             `json:"kv_events_replay_topic_frame"`
	FPMEndpoint              string           `json:"fpm_endpoint"`

	// Robustness, rate limits and fault injection (docs/FAULTS.md).
	ShutdownGrace         float64  `json:"shutdown_grace"`       // seconds in-flight requests get on shutdown
	RequestBodyTimeout    float64  `json:"request_body_timeout"` // seconds to read a request body (408 after)
	MaxUnflushedTokens    int      `json:"max_unflushed_tokens"` // stuck-reader abort threshold (0 = never)
	DevMode               bool     `json:"dev_mode"`             // serve /reset_prefix_cache, /sleep, … (VLLM_SERVER_DEV_MODE)
	AdminKey              string   `json:"admin_key"`            // enables /admin/faults (also serve's --admin-key)
	UI                    bool     `json:"ui"`                   // serve the live browser view at GET /ui (docs/ui.md)
	MaxConcurrentRequests int      `json:"max_concurrent_requests"`
	RPM                   int      `json:"rpm"`
	TPM                   int      `json:"tpm"`
	FailureRate           float64  `json:"failure_rate"`
	FailureTypes          []string `json:"failure_types"`
	FailureScript         string   `json:"failure_script"`
	AllowFaultHeaders     bool     `json:"allow_fault_headers"`

	// Resource budgets: what one request may make the server hold or
	// compute (budgets.go, docs/SECURITY.md "Budgets").
	MaxPromptsPerRequest   int `json:"max_prompts_per_request"`
	MaxSequencesPerRequest int `json:"max_sequences_per_request"` // prompts × n
	MaxEmbeddingInputs     int `json:"max_embedding_inputs"`
	MaxSchemaBytes         int `json:"max_schema_bytes"`
	MaxSchemaEnum          int `json:"max_schema_enum"`
	MaxSchemaSteps         int `json:"max_schema_steps"`
	MaxLoRAAdapters        int `json:"max_lora_adapters"`
	MaxResponsesStoreBytes int `json:"max_responses_store_bytes"`

	// KVTransferAllowedHosts widens the prefill hosts a decode worker may
	// dial for a handoff (loopback and advertise_host always; docs/SECURITY.md).
	KVTransferAllowedHosts []string `json:"kv_transfer_allowed_hosts"`

	// LoRA adapters (docs/lora.md; parsing and checks in lora.go).
	EnableLoRA bool `json:"enable_lora"`
	// LoRAModules are the adapters served from startup, each "name=path"
	// or a JSON object {"name", "path", "base_model_name"}.
	LoRAModules []string `json:"lora_modules"`
	MaxLoRAs    int      `json:"max_loras"`
	MaxCPULoRAs int      `json:"max_cpu_loras"` // 0 = max_loras
	MaxLoRARank int      `json:"max_lora_rank"`
	// LoRALoadTimeMs is the simulated time to load an adapter into a GPU
	// slot (twice when it must be read from disk first).
	LoRALoadTimeMs float64 `json:"lora_load_time_ms"`
	// LoRAPathCheck says whether adapter paths must exist: LoRAPathNone
	// records any path, LoRAPathExists requires a directory (and checks the
	// rank in its adapter_config.json against max_lora_rank).
	LoRAPathCheck LoRAPathCheck `json:"lora_path_check"`
	// AllowRuntimeLoRAUpdating enables /v1/load_lora_adapter and
	// /v1/unload_lora_adapter (default $VLLM_ALLOW_RUNTIME_LORA_UPDATING).
	AllowRuntimeLoRAUpdating bool `json:"allow_runtime_lora_updating"`

	// NumGPUBlocksOverridden records whether num_gpu_blocks was set
	// explicitly by any source (for vllm:cache_config_info). Not a JSON key.
	NumGPUBlocksOverridden bool `json:"-"`
}

// KVTransferConfig is vLLM's --kv-transfer-config object. With a P/D
// connector (NixlConnector and the like) a worker serves both roles per
// request, as vLLM does: the request's kv_transfer_params decide. With the
// OffloadingConnector it has a CPU offload tier instead
// (docs/speculative-and-offload.md).
type KVTransferConfig struct {
	// KVConnector names the connector; every connector but the
	// OffloadingConnector behaves like NixlConnector (unknown ones get a
	// startup warning).
	KVConnector string `json:"kv_connector"`
	// KVRole restricts the roles: kv_producer serves prefills only,
	// kv_consumer decodes only, kv_both either.
	KVRole string `json:"kv_role"`
	// EngineID is the remote_engine_id this worker answers to (default
	// worker_id).
	EngineID string `json:"engine_id"`
	// KVLoadFailurePolicy is what a decode does when its KV cannot be
	// pulled: fail (vLLM's default: the request fails) or recompute (the
	// prompt is computed locally).
	KVLoadFailurePolicy KVLoadFailurePolicy `json:"kv_load_failure_policy"`
	// Accepted for compatibility; they configure real transports and have
	// no effect here (a startup warning names those set).
	KVBufferDevice         string         `json:"kv_buffer_device"`
	KVBufferSize           float64        `json:"kv_buffer_size"`
	KVRank                 *int           `json:"kv_rank"`
	KVParallelSize         int            `json:"kv_parallel_size"`
	KVIP                   string         `json:"kv_ip"`
	KVPort                 int            `json:"kv_port"`
	KVConnectorExtraConfig map[string]any `json:"kv_connector_extra_config"`
	KVConnectorModulePath  string         `json:"kv_connector_module_path"`
	EnablePermuteLocalKV   bool           `json:"enable_permute_local_kv"`
}

// KVModelShape is the model shape kv_bytes_per_token is computed from:
// num_layers × 2 (K and V) × num_kv_heads × head_dim × dtype bytes.
type KVModelShape struct {
	NumLayers  int     `json:"num_layers"`
	NumKVHeads int     `json:"num_kv_heads"`
	HeadDim    int     `json:"head_dim"`
	DType      KVDType `json:"dtype"`
}

// SGLangConfig holds the sglang.* keys.
type SGLangConfig struct {
	SchedulePolicy           SGLangSchedulePolicy `json:"schedule_policy"`
	PageSize                 int                  `json:"page_size"`
	MaxPrefillTokens         int                  `json:"max_prefill_tokens"`
	ChunkedPrefillSize       int                  `json:"chunked_prefill_size"`
	MaxRunningRequests       int                  `json:"max_running_requests"`
	ClipMaxNewTokens         int                  `json:"clip_max_new_tokens"`
	ScheduleConservativeness float64              `json:"schedule_conservativeness"`
}

// TRTLLMConfig holds the trtllm.* keys (engine_type trtllm only).
type TRTLLMConfig struct {
	// CapacitySchedulerPolicy selects the trtllm engine's claim policy:
	// guaranteed_no_evict (reserve to completion), max_utilization (claim
	// the prompt, preempt when short) or static_batch.
	CapacitySchedulerPolicy engine.CapacityPolicy `json:"capacity_scheduler_policy"`
}

// ReasoningConfig configures reasoning framing of planned outputs: the
// first part of each output is wrapped in the start and end thinking tokens
// (see internal/plan).
type ReasoningConfig struct {
	StartThinkingTokenID uint32  `json:"start_thinking_token_id"`
	EndThinkingTokenID   uint32  `json:"end_thinking_token_id"`
	ThinkingRatio        float64 `json:"thinking_ratio"`
}

// KVEventsConfig mirrors vLLM's KVEventsConfig, so a vLLM command line's
// --kv-events-config works unchanged (docs/kv-events.md).
type KVEventsConfig struct {
	EnableKVCacheEvents bool              `json:"enable_kv_cache_events"`
	Publisher           KVEventsPublisher `json:"publisher"`
	Endpoint            string            `json:"endpoint"`
	ReplayEndpoint      *string           `json:"replay_endpoint"`
	BufferSteps         int               `json:"buffer_steps"`
	HWM                 int               `json:"hwm"`
	MaxQueueSize        int               `json:"max_queue_size"`
	Topic               string            `json:"topic"`
}

// DefaultReasoningConfig returns the defaults of a reasoning object; the
// required thinking_ratio is left at 0.
func DefaultReasoningConfig() ReasoningConfig {
	return ReasoningConfig{StartThinkingTokenID: 3, EndThinkingTokenID: 4}
}

// DefaultKVEventsConfig returns the defaults of a kv_events_config object
// (vLLM's). Publisher stays empty ("unset") until Load resolves
// it to "zmq" (enabled) or "null".
func DefaultKVEventsConfig() KVEventsConfig {
	return KVEventsConfig{
		Endpoint:     "tcp://*:5557",
		BufferSteps:  10000,
		HWM:          10000,
		MaxQueueSize: 100000,
	}
}

// defaultNaturalSigma is natural_output_len_sigma's default (internal/plan's
// DefaultNaturalSigma); docs/http-api.md, "Output lengths", says why 1.0.
const defaultNaturalSigma = 1.0

// Default returns the configuration with every built-in default applied.
// BlockSize stays 0 ("per engine") until Load resolves it.
func Default() Config {
	return Config{
		Model:                 "mocker-model",
		Host:                  "127.0.0.1",
		Port:                  8000,
		GRPCPort:              -1,
		OutputLenMode:         "natural",
		ResponseMode:          ResponseGenerate,
		NaturalOutputLen:      128,
		NaturalOutputLenSigma: defaultNaturalSigma,
		ReasoningField:        "reasoning",
		MaxRequestBodyBytes:   33554432,
		MetricsFamily:         MetricsAuto,
		DeprecatedMetrics:     true,
		LogLevel:              LogInfo,
		EmbeddingDim:          1024,
		Runner:                RunnerAuto,
		Convert:               ConvertAuto,
		NumLabels:             1,
		ToolCallProbability:   DefaultToolCallProbability,

		ToolCallAfterResultProbability: DefaultToolCallAfterResultProbability,

		EngineType:            engine.EngineVLLM,
		NumGPUBlocks:          16384,
		MaxModelLen:           32768,
		MaxNumSeqs:            256,
		MaxNumBatchedTokens:   8192,
		EnablePrefixCaching:   true,
		UI:                    true,
		EnableChunkedPrefill:  true,
		PreemptionMode:        engine.PreemptLIFO,
		SchedulingPolicy:      engine.ScheduleFCFS,
		PrefixCachingHashAlgo: HashXXH3,

		SGLang: SGLangConfig{
			SchedulePolicy:           SGLangFIFO,
			MaxPrefillTokens:         16384,
			ChunkedPrefillSize:       8192,
			ClipMaxNewTokens:         4096,
			ScheduleConservativeness: 1.0,
		},
		TRTLLM:          TRTLLMConfig{CapacitySchedulerPolicy: engine.CapacityGuaranteedNoEvict},
		EvictionBackend: kv.EvictLRU,

		AllowedMediaDomains: []string{},
		MMProcessorCacheGB:  4,
		MMEncoderTPMode:     MMEncoderWeights,
		MMProcessorModel:    DefaultMMProcessorModel,
		MMEncoderMsPerToken: 0.02,
		MaxMediaItemBytes:   20 << 20,

		TimingModel:        engine.TimingPolynomial,
		FixedPrefillMs:     20.0,
		FixedDecodeMs:      10.0,
		FixedLoadFactor:    1,
		SpeedupRatio:       1.0,
		DecodeSpeedupRatio: 1.0,

		TensorParallelSize:   1,
		Dtype:                "auto",
		KVCacheDtype:         "auto",
		GPUMemoryUtilization: 0.9,
		GPUInterconnect:      "measured",

		DPSize:    1,
		DPRouting: RouteRoundRobin,

		MaxLoRAs:      1,
		MaxLoRARank:   16,
		LoRAPathCheck: LoRAPathNone,

		WorkerType:              WorkerAggregated,
		KVModelShape:            KVModelShape{DType: KVBFloat16},
		KVBytesPerToken:         131072,
		KVTransferBandwidth:     64.0,
		KVTransferTimingMode:    engine.TransferFullPrompt,
		HandoffSessionTimeoutMs: 300000,

		KVOffloadingBackend: OffloadNative,

		SleepWeightsGB:     DefaultSleepWeightsGB,
		SleepHostBandwidth: DefaultSleepHostBandwidth,
		SleepDiskBandwidth: DefaultSleepDiskBandwidth,

		KVEventsEncoding:         KVEventsMap,
		KVEventsReplayTopicFrame: true,

		ShutdownGrace:      10,
		RequestBodyTimeout: 10,
		MaxUnflushedTokens: 512,

		MaxPromptsPerRequest:   DefaultMaxPromptsPerRequest,
		MaxSequencesPerRequest: DefaultMaxSequencesPerRequest,
		MaxEmbeddingInputs:     DefaultMaxEmbeddingInputs,
		MaxSchemaBytes:         DefaultMaxSchemaBytes,
		MaxSchemaEnum:          DefaultMaxSchemaEnum,
		MaxSchemaSteps:         DefaultMaxSchemaSteps,
		MaxLoRAAdapters:        DefaultMaxLoRAAdapters,
		MaxResponsesStoreBytes: DefaultMaxResponsesStoreBytes,
		KVTransferAllowedHosts: []string{},
	}
}

// defaultPoolTokens is the default pool's size in tokens: vllm's 16,384
// blocks of 16. The sglang engine type's default page count is derived
// from it.
const defaultPoolTokens = 16384 * 16

// EffectiveBlockSize returns the block size after per-engine defaulting:
// vllm 64, sglang 1 (or sglang.page_size when set), trtllm 32.
func (c *Config) EffectiveBlockSize() int {
	if c.BlockSize > 0 {
		return c.BlockSize
	}
	if c.EngineType == engine.EngineSGLang && c.SGLang.PageSize > 0 {
		return c.SGLang.PageSize
	}
	return c.EngineType.DefaultBlockSize()
}
