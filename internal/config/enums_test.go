package config

import (
	"slices"
	"testing"
)

// TestLoad_TypedEnumsNameTheirValues: every closed set of values is
// refused outside its values with one line naming all of them, and
// accepted in any case with "-" for "_", landing as the typed constant.
func TestLoad_TypedEnumsNameTheirValues(t *testing.T) {
	for _, tc := range []struct {
		key, want string
	}{
		{"metrics_family", "Invalid --metrics-family 'x'. Must be 'auto', 'vllm', 'sglang', or 'both'."},
		{"log_level", "Invalid --log-level 'x'. Must be 'debug', 'info', 'warn', or 'error'."},
		{"prefix_caching_hash_algo", "Invalid --prefix-caching-hash-algo 'x'. Must be 'xxh3' or 'sha256_cbor'."},
		{"eviction_backend", "Invalid --eviction-backend 'x'. Must be 'lru', 'lineage', or 'multi_lru'."},
		{"kv_transfer_timing_mode", "Invalid --kv-transfer-timing-mode 'x'. Must be 'full_prompt' or 'destination_missing'."},
		{"lora_path_check", "Invalid --lora-path-check 'x'. Must be 'none' or 'exists'."},
		{"kv_events_encoding", "Invalid --kv-events-encoding 'x'. Must be 'map' or 'array'."},
		{"kv_offloading_backend", "Invalid --kv-offloading-backend 'x'. Must be 'native' or 'lmcache'."},
		{"trtllm.capacity_scheduler_policy", "Invalid --trtllm-capacity-scheduler-policy 'x'. Must be 'guaranteed_no_evict', 'max_utilization', or 'static_batch'."},
		{"kv_transfer_config.kv_load_failure_policy", "Invalid kv_transfer_config.kv_load_failure_policy 'x'. Must be 'recompute' or 'fail'."},
		{"kv_model_shape.dtype", "Invalid --kv-dtype 'x'. Must be 'float16', 'bfloat16', 'float32', or 'fp8'."},
		{"kv_events_config.publisher", "Invalid kv_events_config.publisher 'x'. Must be 'zmq' or 'null'."},
	} {
		probs := loadProblems(t, overlay(nested(tc.key, "x")))
		if !slices.Contains(probs, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.key, probs, tc.want)
		}
	}

	cfg, _ := mustLoad(t, flagOptions(t, "--metrics-family", "Both", "--log-level", "WARNING", "--lora-path-check", "EXISTS",
		"--eviction-backend", "multi-lru", "--kv-events-encoding", "Array", "--kv-transfer-timing-mode", "destination-missing",
		"--sglang-schedule-policy", "DFS-Weight", "--prefix-caching-hash-algo", "SHA256_CBOR"))
	if cfg.MetricsFamily != MetricsBoth || cfg.LogLevel != LogWarn || cfg.LoRAPathCheck != LoRAPathExists ||
		cfg.EvictionBackend != "multi_lru" || cfg.KVEventsEncoding != KVEventsArray ||
		cfg.KVTransferTimingMode != "destination_missing" || cfg.SGLang.SchedulePolicy != SGLangDFSWeight ||
		cfg.PrefixCachingHashAlgo != HashSHA256CBOR {
		t.Errorf("typed values: %+v", cfg)
	}
}

// nested returns the overlay map of a dotted key.
func nested(key string, v any) map[string]any {
	parts := splitKey(key)
	m := map[string]any{parts[len(parts)-1]: v}
	for i := len(parts) - 2; i >= 0; i-- {
		m = map[string]any{parts[i]: m}
	}
	return m
}

func splitKey(key string) []string {
	var parts []string
	start := 0
	for i := range len(key) {
		if key[i] == '.' {
			parts = append(parts, key[start:i])
			start = i + 1
		}
	}
	return append(parts, key[start:])
}
