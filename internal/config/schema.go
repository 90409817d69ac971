package config

import (
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
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

// typedEnum lists the values of one of the engine's typed enums.
func typedEnum[T ~string](values ...T) *enumSpec {
	spec := &enumSpec{}
	for _, v := range values {
		spec.values = append(spec.values, string(v))
	}
	return spec
}

// fieldOpts maps JSON paths to their parsing options.
var fieldOpts = map[string]fieldOpt{
	"max_model_len":          {hr: true},
	"max_num_batched_tokens": {hr: true},
	"max_request_body_bytes": {hr: true},
	"speedup_ratio":          {inf: true},
	"decode_speedup_ratio":   {inf: true},

	"output_len_mode":          {enum: enum("max", "random")},
	"reasoning_field":          {enum: enum("reasoning", "reasoning_content")},
	"metrics_family":           {enum: enum("auto", "vllm", "sglang", "both")},
	"log_level":                {enum: &enumSpec{values: []string{"debug", "info", "warn", "error"}, aliases: map[string]string{"warning": "warn"}}},
	"engine_type":              {enum: typedEnum(engine.EngineVLLM, engine.EngineSGLang, engine.EngineTRTLLM)},
	"preemption_mode":          {enum: typedEnum(engine.PreemptLIFO, engine.PreemptFIFO)},
	"scheduling_policy":        {enum: typedEnum(engine.ScheduleFCFS, engine.SchedulePriority)},
	"prefix_caching_hash_algo": {enum: enum("xxh3", "sha256_cbor")},
	"sglang.schedule_policy": {enum: &enumSpec{
		values: []string{"fifo", "lpm", "dfs_weight", "lof", "random"}, aliases: map[string]string{"fcfs": "fifo"}, fallback: "fifo",
	}},
	"trtllm.capacity_scheduler_policy":          {enum: enum("guaranteed_no_evict")},
	"eviction_backend":                          {enum: enum("lru", "lineage", "multi_lru")},
	"timing_model":                              {enum: typedEnum(engine.TimingPolynomial, engine.TimingFixed, engine.TimingInterpolated)},
	"dp_routing":                                {enum: typedEnum(engine.RouteRoundRobin, engine.RouteLeastLoaded)},
	"worker_type":                               {enum: typedEnum(engine.WorkerAggregated, engine.WorkerPrefill, engine.WorkerDecode)},
	"kv_transfer_timing_mode":                   {enum: enum("full_prompt", "destination_missing")},
	"kv_transfer_config.kv_role":                {enum: enum("kv_producer", "kv_consumer", "kv_both")},
	"kv_transfer_config.kv_load_failure_policy": {enum: enum("recompute", "fail")},
	"kv_model_shape.dtype":                      {enum: enum("float16", "bfloat16", "float32", "fp8")},
	"lora_path_check":                           {enum: enum("none", "exists")},
	"kv_events_encoding":                        {enum: enum("map", "array")},
	"kv_events_config.publisher":                {enum: enum("zmq", "null")},
	"kv_offloading_backend":                     {enum: enum("native", "lmcache")},
	// vLLM 0.17.1's choices (vllmflags.go); the hardware model refuses,
	// with the reason, those it has no tables for (hardware.go).
	"dtype":          {enum: enum("auto", "bfloat16", "float", "float16", "float32", "half")},
	"kv_cache_dtype": {enum: enum("auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc")},
}

// legacyKeys are top-level JSON keys accepted in sources but not stored in
// Config: is_prefill / is_decode select worker_type when it is absent.
var legacyKeys = map[string]bool{"is_prefill": true, "is_decode": true}

// jsonStringObjects are object-valued keys that may also be given as a string
// holding a JSON object (the CLI form, e.g. --kv-events-config '<json>').
var jsonStringObjects = map[string]bool{"reasoning": true, "kv_events_config": true,
	"speculative_config": true, "kv_transfer_config": true, "offload_bandwidth": true}

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
