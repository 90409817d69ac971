package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func n(s string) json.Number { return json.Number(s) }

func TestLoad_FieldValidation(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]any
		want string
	}{
		{"empty model", map[string]any{"model": ""}, "model must not be empty"},
		{"empty served name", map[string]any{"served_model_name": []any{"a", ""}}, "--served-model-name entries must not be empty"},
		{"duplicate served names", map[string]any{"served_model_name": []any{"a", "a"}}, `--served-model-name "a" is listed more than once`},
		{"served name too long", map[string]any{"served_model_name": strings.Repeat("x", 257)}, "longer than 256 bytes"},
		{"port too large", map[string]any{"port": n("65536")}, "port must be between 0 and 65535, got 65536"},
		{"grpc_port below -1", map[string]any{"grpc_port": n("-2")}, "--grpc-port must be between -1 and 65535, got -2"},
		{"grpc_port too large", map[string]any{"grpc_port": n("65536")}, "--grpc-port must be between -1 and 65535, got 65536"},
		{"empty api key", map[string]any{"api_key": []any{""}}, "--api-key entries must not be empty"},
		{"natural_output_len 0", map[string]any{"natural_output_len": n("0")}, "--natural-output-len must be between 1 and 1048576, got 0"},
		{"small body limit", map[string]any{"max_request_body_bytes": n("1000")}, "--max-request-body-bytes must be >= 1024, got 1000"},
		{"negative startup_time", map[string]any{"startup_time": n("-1")}, "--startup-time must be a finite number >= 0, got -1"},
		{"num_gpu_blocks 0", map[string]any{"num_gpu_blocks": n("0")}, "--num-gpu-blocks-override must be between 1 and 16777216, got 0"},
		{"block_size too large", map[string]any{"block_size": n("2048")}, "--block-size must be between 1 and 1024, got 2048"},
		{"negative block_size", map[string]any{"block_size": n("-1")}, "--block-size must be between 1 and 1024 (0 = per engine type), got -1"},
		{"max_model_len too large", map[string]any{"max_model_len": "17M"}, "--max-model-len must be between 1 and 16777216, got 17825792"},
		{"max_num_seqs 0", map[string]any{"max_num_seqs": n("0")}, "--max-num-seqs must be between 1 and 65536, got 0"},
		{"max_num_batched_tokens 0", map[string]any{"max_num_batched_tokens": n("0")}, "--max-num-batched-tokens must be >= 1, got 0"},
		{"sglang conservativeness 0", map[string]any{"sglang": map[string]any{"schedule_conservativeness": n("0")}}, "--sglang-schedule-conservativeness must be > 0 and <= 10, got 0"},
		{"sglang max_prefill_tokens 0", map[string]any{"sglang": map[string]any{"max_prefill_tokens": n("0")}}, "--sglang-max-prefill-tokens must be >= 1, got 0"},
		{"negative fixed_decode_ms", map[string]any{"fixed_decode_ms": n("-0.5")}, "--fixed-decode-ms must be a finite number >= 0, got -0.5"},
		{"negative speedup", map[string]any{"speedup_ratio": n("-1")}, "--speedup-ratio must be >= 0 or inf, got -1"},
		{"thinking ratio above 1", map[string]any{"reasoning": map[string]any{"thinking_ratio": n("1.5")}}, "reasoning.thinking_ratio must be between 0 and 1, got 1.5"},
		{"token id out of uint32", map[string]any{"reasoning": map[string]any{"thinking_ratio": n("0"), "end_thinking_token_id": n("-1")}}, "reasoning.end_thinking_token_id must be between 0 and 4294967295, got -1"},
		{"dp_size 257", map[string]any{"dp_size": n("257")}, "--data-parallel-size must be between 1 and 256, got 257"},
		{"bootstrap_port too large", map[string]any{"bootstrap_port": n("70000")}, "--bootstrap-port must be between 1 and 65535, got 70000"},
		{"negative kv_bytes_per_token", map[string]any{"kv_bytes_per_token": n("-1")}, "--kv-bytes-per-token must be >= 0, got -1"},
		{"handoff timeout 0", map[string]any{"handoff_session_timeout_ms": n("0")}, "--handoff-session-timeout-ms must be >= 1, got 0"},
		{"kv buffer_steps 0", map[string]any{"kv_events_config": map[string]any{"buffer_steps": n("0")}}, "kv_events_config.buffer_steps must be >= 1, got 0"},
		{"kv hwm negative", map[string]any{"kv_events_config": map[string]any{"hwm": n("-1")}}, "kv_events_config.hwm must be >= 1 (0 would mean unlimited), got -1"},
		{"kv hwm zero (unlimited)", map[string]any{"kv_events_config": map[string]any{"hwm": n("0")}}, "kv_events_config.hwm must be >= 1 (0 would mean unlimited), got 0"},
		{"shutdown grace negative", map[string]any{"shutdown_grace": n("-1")}, "--shutdown-grace must be a finite number >= 0, got -1"},
		{"body timeout zero", map[string]any{"request_body_timeout": n("0")}, "--request-body-timeout must be > 0 and <= 3600 seconds, got 0"},
		{"rpm negative", map[string]any{"rpm": n("-5")}, "rpm must be >= 0, got -5"},
		{"failure rate above one", map[string]any{"failure_rate": n("1.5")}, "--failure-rate must be between 0 and 1, got 1.5"},
		{"unknown failure type", map[string]any{"failure_rate": n("0.5"), "failure_types": []any{"explode"}}, `--failure-types: unknown fault "explode"`},
		{"bad failure script", map[string]any{"failure_script": "first three: rate_limit"}, `failure script line 1: "first three: rate_limit": want a positive whole number, got "three"`},
		{"missing failure script file", map[string]any{"failure_script": "@/nonexistent/script"}, "--failure-script: open /nonexistent/script: no such file or directory"},
		{"kv max_queue_size 0", map[string]any{"kv_events_config": map[string]any{"max_queue_size": n("0")}}, "kv_events_config.max_queue_size must be >= 1, got 0"},
		{"kv publisher", map[string]any{"kv_events_config": map[string]any{"publisher": "kafka"}}, "Invalid kv_events_config.publisher 'kafka'. Must be 'zmq' or 'null'."},
		{"zmq port too large", map[string]any{"zmq_kv_events_port": n("65536")}, "--zmq-kv-events-port must be between 1 and 65535, got 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadProblems(t, overlay(tt.set))
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("problems = %q, want one containing %q", got, tt.want)
			}
		})
	}
}

func TestLoad_CrossFieldRules(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" = valid
	}{
		// SGLang page and chunk sizes.
		{"sglang block_size must equal page_size", []string{"--engine-type", "sglang", "--block-size", "16", "--sglang-page-size", "32"},
			"--block-size (16) and --sglang-page-size (32) must be equal"},
		{"sglang equal block_size and page_size", []string{"--engine-type", "sglang", "--block-size", "16", "--sglang-page-size", "16"}, ""},
		{"other engines ignore sglang.page_size", []string{"--block-size", "16", "--sglang-page-size", "32"}, ""},
		{"sglang chunked_prefill_size must be a multiple of the page size", []string{"--engine-type", "sglang", "--block-size", "16", "--sglang-chunked-prefill-size", "100"},
			"--sglang-chunked-prefill-size (100) must be a positive multiple of the page size (16)"},
		{"sglang chunked_prefill_size must be at least the page size", []string{"--engine-type", "sglang", "--sglang-page-size", "64", "--sglang-chunked-prefill-size", "32"},
			"--sglang-chunked-prefill-size (32) must be a positive multiple of the page size (64)"},
		// The budget without chunked prefill.
		{"no chunked prefill needs a budget of max_model_len", []string{"--no-enable-chunked-prefill"},
			"--enable-chunked-prefill=false requires --max-num-batched-tokens (8192) >= --max-model-len (32768)"},
		{"no chunked prefill with a large budget", []string{"--no-enable-chunked-prefill", "--max-num-batched-tokens", "32K"}, ""},
		// The TensorRT-LLM capacity policy.
		{"trtllm policy names the supported ones", []string{"--trtllm-capacity-scheduler-policy", "fcfs"},
			"Invalid --trtllm-capacity-scheduler-policy 'fcfs'. Must be 'guaranteed_no_evict', 'max_utilization', or 'static_batch'."},
		{"trtllm max_utilization", []string{"--engine-type", "trtllm", "--trtllm-capacity-scheduler-policy", "MAX_UTILIZATION"}, ""},
		// Reasoning ids.
		{"reasoning ids must differ", []string{"--reasoning", `{"thinking_ratio": 0.3, "start_thinking_token_id": 9, "end_thinking_token_id": 9}`},
			"reasoning.start_thinking_token_id and reasoning.end_thinking_token_id must differ (both 9)"},
		{"reasoning with defaults", []string{"--reasoning", `{"thinking_ratio": 0.3}`}, ""},
		// The interpolated model's profile.
		{"interpolated needs profile data", []string{"--timing-model", "interpolated"},
			"--timing-model 'interpolated' requires --planner-profile-data"},
		{"interpolated with profile data", []string{"--timing-model", "interpolated", "--planner-profile-data", "p.json"}, ""},
		// The two KV-event configuration styles.
		{"enabled kv_events_config and zmq port conflict", []string{"--kv-events-config", `{"enable_kv_cache_events": true}`, "--zmq-kv-events-port", "5557"},
			"kv_events_config with enable_kv_cache_events=true and --zmq-kv-events-port cannot be combined"},
		{"disabled kv_events_config and zmq port", []string{"--kv-events-config", `{"enable_kv_cache_events": false}`, "--zmq-kv-events-port", "5557"}, ""},
		{"replay port needs events port", []string{"--zmq-replay-port", "5558"}, "--zmq-replay-port requires --zmq-kv-events-port"},
		{"replay port with events port", []string{"--zmq-kv-events-port", "5557", "--zmq-replay-port", "5600", "-dp", "4"}, ""},
		{"dynamo ports overlap across ranks", []string{"--zmq-kv-events-port", "5557", "--zmq-replay-port", "5558", "-dp", "2"},
			"--zmq-kv-events-port and --zmq-replay-port ranges overlap (--data-parallel-size 2)"},
		// Per-rank endpoints.
		{"dp with an ipc kv endpoint", []string{"-dp", "2", "--kv-events-config", `{"enable_kv_cache_events": true, "endpoint": "ipc:///tmp/kv"}`},
			`kv_events_config.endpoint "ipc:///tmp/kv" must use tcp:// or inproc:// when --data-parallel-size > 1`},
		{"dp with an ipc replay endpoint", []string{"-dp", "2", "--kv-events-config", `{"enable_kv_cache_events": true, "replay_endpoint": "ipc:///tmp/r"}`},
			`kv_events_config.replay_endpoint "ipc:///tmp/r" must use tcp:// or inproc:// when --data-parallel-size > 1`},
		{"dp with an ipc fpm endpoint", []string{"-dp", "2", "--fpm-endpoint", "ipc:///tmp/fpm"},
			`--fpm-endpoint "ipc:///tmp/fpm" must use tcp:// or inproc:// when --data-parallel-size > 1`},
		{"dp with tcp and inproc endpoints", []string{"-dp", "2", "--fpm-endpoint", "inproc://fpm",
			"--kv-events-config", `{"enable_kv_cache_events": true, "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5600"}`}, ""},
		{"dp with a tcp endpoint without a port", []string{"-dp", "2", "--fpm-endpoint", "tcp://collector"},
			`--fpm-endpoint "tcp://collector" must end in :<port> when --data-parallel-size > 1`},
		{"dp with a tcp port that overflows", []string{"-dp", "4", "--fpm-endpoint", "tcp://*:65534"},
			`--fpm-endpoint "tcp://*:65534": port + --data-parallel-size - 1 (65537) exceeds 65535`},
		{"one rank with an ipc endpoint", []string{"--fpm-endpoint", "ipc:///tmp/fpm"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := flagOptions(t, tt.args...)
			if tt.want == "" {
				mustLoad(t, opts)
				return
			}
			got := loadProblems(t, opts)
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestLoad_Warnings(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings, one per warning
	}{
		{"none by default", nil, nil},
		{"max_model_len beyond the KV cache", []string{"--num-gpu-blocks", "10", "--block-size", "16"},
			[]string{"max_model_len (32768) is larger than the KV cache (num_gpu_blocks 10 x block_size 16 = 160 tokens)"}},
		{"KV events with prefix caching disabled", []string{"--zmq-kv-events-port", "5557", "--no-enable-prefix-caching"},
			[]string{"prefix caching is disabled"}},
		{"KV events on a decode worker", []string{"--kv-events-config", `{"enable_kv_cache_events":true,"endpoint":"ipc:///tmp/kv"}`, "--worker-type", "decode"},
			[]string{"decode worker"}},
		{"wildcard ZMQ binds with a loopback host", []string{"--kv-events-config", `{"enable_kv_cache_events":true,"replay_endpoint":"tcp://*:5558"}`, "--fpm-endpoint", "tcp://[::]:5560"},
			[]string{"kv_events_config.endpoint binds tcp://*:5557 on every interface", "kv_events_config.replay_endpoint binds tcp://*:5558", "fpm_endpoint binds tcp://[::]:5560"}},
		{"wildcard ZMQ binds with a wildcard host", []string{"--host", "0.0.0.0", "--kv-events-config", `{"enable_kv_cache_events":true}`}, nil},
		{"failure types without a rate", []string{"--failure-types", "truncate"}, []string{"failure_types has no effect"}},
		{"a log-normal shape in random mode", []string{"--output-len-mode", "random", "--natural-output-len-sigma", "0.5"},
			[]string{"natural_output_len_sigma has no effect with output_len_mode random"}},
		{"a log-normal shape in natural mode", []string{"--natural-output-len-sigma", "0.5"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warns := mustLoad(t, flagOptions(t, tt.args...))
			if len(warns) != len(tt.want) {
				t.Fatalf("warnings = %q, want %d", warns, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q does not contain %q", warns[i], w)
				}
			}
		})
	}
}

func TestValidate_DefaultConfigIsValid(t *testing.T) {
	c := Default()
	warns, err := c.Validate()
	if err != nil || len(warns) != 0 {
		t.Errorf("Validate(Default()) = %q, %v", warns, err)
	}
}

func TestValidate_ChecksProgrammaticEnumValues(t *testing.T) {
	c := Default()
	c.EngineType = "foo"
	_, err := c.Validate()
	want := "Invalid engine_type 'foo'. Must be 'vllm', 'sglang', or 'trtllm'."
	if err == nil || err.Error() != want {
		t.Errorf("Validate error = %v, want %q", err, want)
	}
}
