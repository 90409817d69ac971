package config

// Typed enums of the configuration's closed sets of values. The schema
// (fieldOpts, typedEnum) accepts exactly the listed values, in any case
// and with "-" for "_", and names them all when a value is refused; the
// engine's own enums (engine.EngineType, engine.PreemptionMode, ...) are
// used directly where the engine takes the value as it is.

// WorkerType is a worker's role in disaggregated prefill/decode serving
// (--disaggregation-mode, worker_type; docs/disaggregation.md).
type WorkerType string

// Worker types.
const (
	WorkerAggregated WorkerType = "aggregated"
	WorkerPrefill    WorkerType = "prefill"
	WorkerDecode     WorkerType = "decode"
)

// DPRouting chooses the data-parallel rank of a request that names none
// (--dp-routing); the HTTP layer's enum is api.DPRouting (the worker
// converts).
type DPRouting string

// DP routing policies.
const (
	RouteRoundRobin  DPRouting = "round_robin"
	RouteLeastLoaded DPRouting = "least_loaded"
)

// ResponseMode is what a generation answers (--response-mode).
type ResponseMode string

// Response modes.
const (
	// ResponseGenerate answers with the planned output tokens.
	ResponseGenerate ResponseMode = "generate"
	// ResponseEcho answers with the prompt: the last message of a chat,
	// the prompt of a completion (llm-d-inference-sim's --mode echo).
	ResponseEcho ResponseMode = "echo"
)

// MetricsFamily selects the metric families (--metrics-family).
type MetricsFamily string

// Metrics families.
const (
	// MetricsAuto is sglang for engine type sglang, else vllm
	// (Config.ResolvedMetricsFamily).
	MetricsAuto   MetricsFamily = "auto"
	MetricsVLLM   MetricsFamily = "vllm"
	MetricsSGLang MetricsFamily = "sglang"
	MetricsBoth   MetricsFamily = "both"
)

// LogLevel is the stderr log level (--log-level; "warning" is accepted
// for warn).
type LogLevel string

// Log levels.
const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
)

// HashAlgo is the prefix-caching block hash (--prefix-caching-hash-algo;
// docs/kv-hashing.md): the kv package's algorithm names.
type HashAlgo string

// Block hash algorithms.
const (
	HashXXH3       HashAlgo = "xxh3"
	HashSHA256CBOR HashAlgo = "sha256_cbor"
)

// SGLangSchedulePolicy is SGLang's --schedule-policy, in SGLang's names
// ("fcfs" is accepted for fifo; an unknown one warns and falls back to
// fifo, as SGLang does).
type SGLangSchedulePolicy string

// SGLang schedule policies.
const (
	SGLangFIFO      SGLangSchedulePolicy = "fifo"
	SGLangLPM       SGLangSchedulePolicy = "lpm"
	SGLangDFSWeight SGLangSchedulePolicy = "dfs_weight"
	SGLangLOF       SGLangSchedulePolicy = "lof"
	SGLangRandom    SGLangSchedulePolicy = "random"
)

// KVLoadFailurePolicy is what a decode does when its KV cannot be pulled
// (kv_transfer_config.kv_load_failure_policy).
type KVLoadFailurePolicy string

// KV load failure policies.
const (
	// KVLoadRecompute computes the prompt locally.
	KVLoadRecompute KVLoadFailurePolicy = "recompute"
	// KVLoadFail fails the request (vLLM's default).
	KVLoadFail KVLoadFailurePolicy = "fail"
)

// KVDType is the KV cache element type of kv_model_shape.
type KVDType string

// KV element types.
const (
	KVFloat16  KVDType = "float16"
	KVBFloat16 KVDType = "bfloat16"
	KVFloat32  KVDType = "float32"
	KVFP8      KVDType = "fp8"
)

// LoRAPathCheck says whether LoRA adapter paths must exist
// (--lora-path-check).
type LoRAPathCheck string

// LoRA path checks.
const (
	// LoRAPathNone records any path.
	LoRAPathNone LoRAPathCheck = "none"
	// LoRAPathExists requires a directory and checks the rank in its
	// adapter_config.json against max_lora_rank.
	LoRAPathExists LoRAPathCheck = "exists"
)

// KVEventsEncoding is how KV events are written (--kv-events-encoding;
// docs/kv-events.md).
type KVEventsEncoding string

// KV event encodings.
const (
	// KVEventsMap is vLLM's tagged maps.
	KVEventsMap KVEventsEncoding = "map"
	// KVEventsArray is the older positional arrays.
	KVEventsArray KVEventsEncoding = "array"
)

// KVEventsPublisher is kv_events_config.publisher; Load resolves an unset
// one to zmq when events are enabled, else null.
type KVEventsPublisher string

// KV event publishers.
const (
	PublisherZMQ  KVEventsPublisher = "zmq"
	PublisherNull KVEventsPublisher = "null"
)

// OffloadingBackend is --kv-offloading-backend.
type OffloadingBackend string

// Offloading backends.
const (
	// OffloadNative is vLLM's native CPU offloading.
	OffloadNative OffloadingBackend = "native"
	// OffloadLMCache is refused at startup as not supported yet.
	OffloadLMCache OffloadingBackend = "lmcache"
)
