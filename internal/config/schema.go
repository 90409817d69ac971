package config

import (
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// fieldOpt holds the parsing options of one JSON path beyond its Go type.
type fieldOpt struct {
	hr   bool // integer accepting human-readable sizes ("32k", "32K", "1M")
	inf  bool // float accepting "inf" / "+inf" / "Infinity"
	enum *enumSpec
}

// enumSpec lists the canonical values of an enum field (lowercase, "_").
type enumSpec struct {
	values  []string
	aliases map[string]string // accepted spelling -> canonical value
	// fallback, when set, turns an unknown value into a warning and this
	// value (sglang.schedule_policy).
	fallback string
}

func enum(values ...string) *enumSpec { return &enumSpec{values: values} }

// typedEnum lists the values of one of the typed enums (config's, the
// engine's or kv's).
func typedEnum[T ~string](values ...T) *enumSpec {
	spec := &enumSpec{}
	for _, v := range values {
		spec.values = append(spec.values, string(v))
	}
	return spec
}

// withAliases adds accepted spellings (spelling -> canonical value).
func withAliases(spec *enumSpec, aliases map[string]string) *enumSpec {
	spec.aliases = aliases
	return spec
}

// withFallback turns an unknown value into a warning and fallback.
func withFallback[T ~string](spec *enumSpec, fallback T) *enumSpec {
	spec.fallback = string(fallback)
	return spec
}

// fieldOpts maps JSON paths to their parsing options.
var fieldOpts = map[string]fieldOpt{
	"max_model_len":          {hr: true},
	"max_num_batched_tokens": {hr: true},
	"max_request_body_bytes": {hr: true},
	"max_media_item_bytes":   {hr: true},
	"mm_encoder_tp_mode":     {enum: typedEnum(MMEncoderWeights, MMEncoderData)},
	"speedup_ratio":          {inf: true},
	"decode_speedup_ratio":   {inf: true},

	"output_len_mode":          {enum: enum("natural", "max", "random")},
	"response_mode":            {enum: typedEnum(ResponseGenerate, ResponseEcho)},
	"reasoning_field":          {enum: enum("reasoning", "reasoning_content")},
	"metrics_family":           {enum: typedEnum(MetricsAuto, MetricsVLLM, MetricsSGLang, MetricsBoth)},
	"runner":                   {enum: typedEnum(RunnerAuto, RunnerGenerate, RunnerPooling, RunnerDraft)},
	"convert":                  {enum: typedEnum(ConvertAuto, ConvertNone, ConvertEmbed, ConvertClassify)},
	"log_level":                {enum: withAliases(typedEnum(LogDebug, LogInfo, LogWarn, LogError), map[string]string{"warning": "warn"})},
	"engine_type":              {enum: typedEnum(engine.EngineVLLM, engine.EngineSGLang, engine.EngineTRTLLM)},
	"preemption_mode":          {enum: typedEnum(engine.PreemptLIFO, engine.PreemptFIFO)},
	"scheduling_policy":        {enum: typedEnum(engine.ScheduleFCFS, engine.SchedulePriority)},
	"prefix_caching_hash_algo": {enum: typedEnum(HashXXH3, HashSHA256CBOR)},
	"sglang.schedule_policy": {enum: withFallback(withAliases(
		typedEnum(SGLangFIFO, SGLangLPM, SGLangDFSWeight, SGLangLOF, SGLangRandom), map[string]string{"fcfs": "fifo"}), SGLangFIFO)},
	"trtllm.capacity_scheduler_policy":          {enum: typedEnum(engine.CapacityGuaranteedNoEvict, engine.CapacityMaxUtilization, engine.CapacityStaticBatch)},
	"eviction_backend":                          {enum: typedEnum(kv.EvictLRU, kv.EvictLineage, kv.EvictMultiLRU)},
	"timing_model":                              {enum: typedEnum(engine.TimingPolynomial, engine.TimingFixed, engine.TimingInterpolated)},
	"dp_routing":                                {enum: typedEnum(RouteRoundRobin, RouteLeastLoaded)},
	"worker_type":                               {enum: typedEnum(WorkerAggregated, WorkerPrefill, WorkerDecode)},
	"kv_transfer_timing_mode":                   {enum: typedEnum(engine.TransferFullPrompt, engine.TransferDestinationMissing)},
	"kv_transfer_config.kv_role":                {enum: enum("kv_producer", "kv_consumer", "kv_both")},
	"kv_transfer_config.kv_load_failure_policy": {enum: typedEnum(KVLoadRecompute, KVLoadFail)},
	"kv_model_shape.dtype":                      {enum: typedEnum(KVFloat16, KVBFloat16, KVFloat32, KVFP8)},
	"lora_path_check":                           {enum: typedEnum(LoRAPathNone, LoRAPathExists)},
	"kv_events_encoding":                        {enum: typedEnum(KVEventsMap, KVEventsArray)},
	"kv_events_config.publisher":                {enum: typedEnum(PublisherZMQ, PublisherNull)},
	"kv_offloading_backend":                     {enum: typedEnum(OffloadNative, OffloadLMCache)},
	// vLLM 0.17.1's choices (vllmflags.go); the hardware model refuses,
	// with the reason, those it has no tables for (hardware.go).
	"dtype":            {enum: enum("auto", "bfloat16", "float", "float16", "float32", "half")},
	"kv_cache_dtype":   {enum: enum("auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc")},
	"gpu_interconnect": {enum: typedEnum(hardware.InterconnectMeasured, hardware.InterconnectPCIe)},
}

// legacyKeys are top-level JSON keys accepted in sources but not stored in
// Config: is_prefill / is_decode select worker_type when it is absent.
var legacyKeys = map[string]bool{"is_prefill": true, "is_decode": true}

// jsonStringObjects are object-valued keys that may also be given as a string
// holding a JSON object (the CLI form, e.g. --kv-events-config '<json>').
var jsonStringObjects = map[string]bool{"reasoning": true, "kv_events_config": true,
	"speculative_config": true, "kv_transfer_config": true, "offload_bandwidth": true,
	"limit_mm_per_prompt": true, "mm_unfetched_media": true, "mm_processor_kwargs": true}

// noneUnsets are the jsonStringObjects whose vLLM flag takes Python's
// "None" for unset (its optional_type), as "null" unsets any of them.
var noneUnsets = map[string]bool{"mm_processor_kwargs": true}

// normalizeEnum lowercases s and replaces "-" with "_".
func normalizeEnum(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
}

// lookup returns the canonical value for s, or false.
func (e *enumSpec) lookup(s string) (string, bool) {
	n := normalizeEnum(s)
	if a, ok := e.aliases[n]; ok {
		return a, true
	}
	for _, v := range e.values {
		if n == v {
			return v, true
		}
	}
	return "", false
}

// invalidMsg formats the invalid-value message, one style for every enum,
// e.g. for engine_type: Invalid engine_type 'x'. Must be 'vllm', 'sglang', or 'trtllm'.
func (e *enumSpec) invalidMsg(path, got string) string {
	q := make([]string, len(e.values))
	for i, v := range e.values {
		q[i] = "'" + v + "'"
	}
	var list string
	switch len(q) {
	case 1:
		list = q[0]
	case 2:
		list = q[0] + " or " + q[1]
	default:
		list = strings.Join(q[:len(q)-1], ", ") + ", or " + q[len(q)-1]
	}
	return fmt.Sprintf("Invalid %s '%s'. Must be %s.", path, got, list)
}
