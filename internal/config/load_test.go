package config

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestLoad_PrecedenceDefaultsFileExtraArgsFlags(t *testing.T) {
	file := writeFile(t, "c.yaml", "max_num_seqs: 10\nmax_model_len: 4096\n")
	extraFile := writeFile(t, "extra.yaml", "max_num_seqs: 20\n")
	tests := []struct {
		name      string
		opts      LoadOptions
		wantSeqs  int
		wantModel int
	}{
		{"defaults only", LoadOptions{}, 256, 32768},
		{"config file overrides defaults", LoadOptions{ConfigPath: file}, 10, 4096},
		{"inline extra-engine-args overrides config file",
			LoadOptions{ConfigPath: file, ExtraEngineArgs: `{"max_num_seqs": 20}`}, 20, 4096},
		{"extra-engine-args file path overrides config file",
			LoadOptions{ConfigPath: file, ExtraEngineArgs: extraFile}, 20, 4096},
		{"flag overrides extra-engine-args and file", func() LoadOptions {
			o := flagOptions(t, "--config", file, "--extra-engine-args", `{"max_num_seqs": 20}`, "--max-num-seqs", "30")
			return o
		}(), 30, 4096},
		{"flag explicitly set to its default value overrides the file",
			flagOptions(t, "--config", file, "--max-num-seqs", "256"), 256, 4096},
		{"unset flags do not override the file",
			flagOptions(t, "--config", file, "--port", "9000"), 10, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, tt.opts)
			if cfg.MaxNumSeqs != tt.wantSeqs || cfg.MaxModelLen != tt.wantModel {
				t.Errorf("max_num_seqs=%d max_model_len=%d, want %d %d", cfg.MaxNumSeqs, cfg.MaxModelLen, tt.wantSeqs, tt.wantModel)
			}
		})
	}
}

func TestLoad_NestedObjectsMergePerKeyAcrossSources(t *testing.T) {
	file := writeFile(t, "c.json", `{"sglang": {"page_size": 16, "max_prefill_tokens": 100},
		"reasoning": {"thinking_ratio": 0.5},
		"kv_events_config": {"enable_kv_cache_events": true, "topic": "t"}}`)
	opts := flagOptions(t, "--config", file, "--sglang-page-size", "32",
		"--reasoning", `{"start_thinking_token_id": 7}`,
		"--kv-events-config", `{"endpoint": "tcp://*:6000"}`)
	cfg, _ := mustLoad(t, opts)
	if cfg.SGLang.PageSize != 32 || cfg.SGLang.MaxPrefillTokens != 100 {
		t.Errorf("sglang = %+v, want page_size 32 and max_prefill_tokens 100", cfg.SGLang)
	}
	wantR := ReasoningConfig{StartThinkingTokenID: 7, EndThinkingTokenID: 4, ThinkingRatio: 0.5}
	if cfg.Reasoning == nil || *cfg.Reasoning != wantR {
		t.Errorf("reasoning = %+v, want %+v", cfg.Reasoning, wantR)
	}
	k := cfg.KVEventsConfig
	if k == nil || !k.EnableKVCacheEvents || k.Topic != "t" || k.Endpoint != "tcp://*:6000" {
		t.Errorf("kv_events_config = %+v", k)
	}
}

func TestLoad_FileFormats(t *testing.T) {
	tests := []struct {
		name, file, content string
	}{
		{"yaml", "c.yaml", "max_model_len: 2048\nsglang:\n  page_size: 16\n"},
		{"yml with dashes in keys", "c.yml", "max-model-len: 2048\nsglang:\n  page-size: 16\n"},
		{"json", "c.json", `{"max_model_len": 2048, "sglang": {"page_size": 16}}`},
		{"json with dashes in nested keys", "c.json", `{"max-model-len": 2048, "sglang": {"page-size": 16}}`},
		{"json without extension", "config", `{"max_model_len": 2048, "sglang": {"page_size": 16}}`},
		{"yaml without extension", "config", "max_model_len: 2048\nsglang: {page_size: 16}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, LoadOptions{ConfigPath: writeFile(t, tt.file, tt.content)})
			if cfg.MaxModelLen != 2048 || cfg.SGLang.PageSize != 16 {
				t.Errorf("max_model_len=%d sglang.page_size=%d", cfg.MaxModelLen, cfg.SGLang.PageSize)
			}
		})
	}
}

func TestLoad_EmptyConfigFileMeansNoSettings(t *testing.T) {
	cfg, _ := mustLoad(t, LoadOptions{ConfigPath: writeFile(t, "c.yaml", "# nothing\n")})
	if cfg.MaxNumSeqs != 256 {
		t.Errorf("max_num_seqs = %d", cfg.MaxNumSeqs)
	}
}

func TestLoad_ParsingProblems(t *testing.T) {
	tests := []struct {
		name    string
		file    string // file name; content below
		content string
		extra   string
		want    []string // exact problem lines; "<F>" is replaced by "--config <path>"
	}{
		{"unknown top-level key names the key", "c.json", `{"max_num_seq": 3}`, "",
			[]string{`<F>: unknown field "max_num_seq" (did you mean "max_num_seqs"?)`}},
		{"unknown nested key names its path", "c.yaml", "sglang:\n  foo: 1\n", "",
			[]string{`<F>:2: unknown field "sglang.foo"`}},
		{"unknown keys in inline extra-engine-args", "", "", `{"kv_events_config": {"bogus": 1}}`,
			[]string{`--extra-engine-args: unknown field "kv_events_config.bogus"`}},
		{"null for a non-optional field", "c.json", `{"max_model_len": null}`, "",
			[]string{"<F>: max_model_len must not be null"}},
		{"null for a nested non-optional field", "c.yaml", "sglang:\n  page_size: ~\n", "",
			[]string{"<F>:2: sglang.page_size must not be null"}},
		{"integer given as a float with a fraction", "c.json", `{"max_num_seqs": 2.5}`, "",
			[]string{"<F>: max_num_seqs must be an integer, got 2.5"}},
		{"HR integer given as a float with a fraction", "c.json", `{"max_model_len": 100.5}`, "",
			[]string{`<F>: max_model_len must be an integer or a size such as "32k" or "32K", got 100.5`}},
		{"string for a non-HR integer", "c.json", `{"max_num_seqs": "4"}`, "",
			[]string{`<F>: max_num_seqs must be an integer, got string "4"`}},
		{"bad HR suffix", "c.json", `{"max_model_len": "32x"}`, "",
			[]string{`<F>: max_model_len must be an integer or a size such as "32k" or "32K", got string "32x"`}},
		{"string for a float without inf support", "c.json", `{"fixed_prefill_ms": "inf"}`, "",
			[]string{`<F>: fixed_prefill_ms must be a number, got string "inf"`}},
		{"bad inf spelling", "c.json", `{"speedup_ratio": "infinite"}`, "",
			[]string{`<F>: speedup_ratio must be a number or "inf", got string "infinite"`}},
		{"string for a bool", "c.json", `{"enable_prefix_caching": "yes"}`, "",
			[]string{`<F>: enable_prefix_caching must be a boolean (true or false), got string "yes"`}},
		{"number for a string", "c.json", `{"host": 5}`, "",
			[]string{"<F>: host must be a string, got number 5"}},
		{"scalar for an object", "c.json", `{"sglang": 5}`, "",
			[]string{"<F>: sglang must be an object, got number 5"}},
		{"trailing data after a JSON file", "c.json", `{"port": 1} {"port": 2}`, "",
			[]string{"<F>: trailing data after JSON value"}},
		{"trailing data after inline JSON", "", "", `{"port": 1}x`,
			[]string{"--extra-engine-args: trailing data after JSON value"}},
		{"second YAML document", "c.yaml", "port: 1\n---\nport: 2\n", "",
			[]string{"<F>: trailing data after the first YAML document"}},
		{"keys equal after normalisation", "c.json", `{"max-model-len": 1, "max_model_len": 2}`, "",
			[]string{`<F>: duplicate field "max_model_len"`}},
		{"duplicate YAML keys, on one line", "c.yaml", "port: 1\nport: 2\n", "",
			[]string{`<F>: yaml: unmarshal errors: line 2: key "port" already set in map`}},
		{"top level is not an object", "c.json", `[1]`, "",
			[]string{"<F>: expected a JSON object, got a list"}},
		{"engine_type error text", "c.json", `{"engine_type": "tensorrt"}`, "",
			[]string{"<F>: Invalid engine_type 'tensorrt'. Must be 'vllm', 'sglang', or 'trtllm'."}},
		{"two-valued enum error text", "c.json", `{"reasoning_field": "short"}`, "",
			[]string{"<F>: Invalid reasoning_field 'short'. Must be 'reasoning' or 'reasoning_content'."}},
		{"output_len_mode error text", "c.json", `{"output_len_mode": "short"}`, "",
			[]string{"<F>: Invalid output_len_mode 'short'. Must be 'natural', 'max', or 'random'."}},
		{"natural_output_len_sigma out of range", "c.json", `{"natural_output_len_sigma": 0}`, "",
			[]string{"<F>: natural_output_len_sigma must be > 0 and <= 4, got 0"}},
		{"both legacy worker booleans", "c.json", `{"is_prefill": true, "is_decode": true}`, "",
			[]string{"is_prefill and is_decode must not both be true"}},
		{"reasoning without thinking_ratio", "c.json", `{"reasoning": {"start_thinking_token_id": 5}}`, "",
			[]string{"reasoning.thinking_ratio is required"}},
		{"every problem is collected, one line each", "c.json",
			`{"max_num_seq": 1, "port": "x", "engine_type": "x", "max_num_seqs": 0}`, "",
			[]string{
				`<F>: unknown field "max_num_seq" (did you mean "max_num_seqs"?)`,
				`<F>: port must be an integer, got string "x"`,
				"<F>: Invalid engine_type 'x'. Must be 'vllm', 'sglang', or 'trtllm'.",
				"<F>: max_num_seqs must be between 1 and 65536, got 0",
			}},
		{"validation problems caused by a bad value are suppressed", "c.json",
			`{"enable_chunked_prefill": false, "max_num_batched_tokens": "lots"}`, "",
			[]string{`<F>: max_num_batched_tokens must be an integer or a size such as "32k" or "32K", got string "lots"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts LoadOptions
			label := ""
			if tt.file != "" {
				opts.ConfigPath = writeFile(t, tt.file, tt.content)
				label = "--config " + opts.ConfigPath
			}
			opts.ExtraEngineArgs = tt.extra
			got := loadProblems(t, opts)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.ReplaceAll(w, "<F>", label)
			}
			if !slices.Equal(got, want) {
				t.Errorf("problems:\n got  %q\n want %q", got, want)
			}
		})
	}
}

func TestLoad_MissingConfigFileIsAProblem(t *testing.T) {
	got := loadProblems(t, LoadOptions{ConfigPath: "/nonexistent/c.yaml"})
	if len(got) != 1 || !strings.HasPrefix(got[0], "--config /nonexistent/c.yaml: ") {
		t.Errorf("problems = %q", got)
	}
}

func TestLoad_NullForOptionalFieldMeansUnset(t *testing.T) {
	file := writeFile(t, "c.json", `{"reasoning": {"thinking_ratio": 0.2},
		"kv_events_config": {"enable_kv_cache_events": true, "replay_endpoint": "tcp://*:5558"}}`)
	cfg, _ := mustLoad(t, LoadOptions{ConfigPath: file,
		ExtraEngineArgs: `{"reasoning": null, "kv_events_config": {"replay_endpoint": null}}`})
	if cfg.Reasoning != nil {
		t.Errorf("reasoning = %+v, want nil", cfg.Reasoning)
	}
	if cfg.KVEventsConfig == nil || cfg.KVEventsConfig.ReplayEndpoint != nil {
		t.Errorf("kv_events_config = %+v, want replay_endpoint nil", cfg.KVEventsConfig)
	}
	cfg, _ = mustLoad(t, LoadOptions{ConfigPath: file, ExtraEngineArgs: `{"kv_events_config": null}`})
	if cfg.KVEventsConfig != nil {
		t.Errorf("kv_events_config = %+v, want nil", cfg.KVEventsConfig)
	}
	opts := flagOptions(t, "--config", file, "--reasoning", "null")
	if cfg, _ = mustLoad(t, opts); cfg.Reasoning != nil {
		t.Errorf("--reasoning null: reasoning = %+v, want nil", cfg.Reasoning)
	}
}

func TestLoad_HumanReadableIntegers(t *testing.T) {
	tests := []struct {
		val  any
		want int
	}{
		{"32k", 32000}, {"32K", 32768}, {"1m", 1000000}, {"1M", 1048576},
		{"1.5k", 1500}, {"4096", 4096}, {json.Number("2048"), 2048}, {json.Number("1e3"), 1000},
		{json.Number("4096.0"), 4096},
	}
	for _, tt := range tests {
		t.Run("max_model_len "+toString(tt.val), func(t *testing.T) {
			cfg, _ := mustLoad(t, overlay(map[string]any{"max_model_len": tt.val}))
			if cfg.MaxModelLen != tt.want {
				t.Errorf("max_model_len = %d, want %d", cfg.MaxModelLen, tt.want)
			}
		})
	}
	t.Run("all HR fields from YAML", func(t *testing.T) {
		file := writeFile(t, "c.yaml", "max_model_len: 32K\nmax_num_batched_tokens: 32k\nmax_request_body_bytes: 1M\n")
		cfg, _ := mustLoad(t, LoadOptions{ConfigPath: file})
		if cfg.MaxModelLen != 32768 || cfg.MaxNumBatchedTokens != 32000 || cfg.MaxRequestBodyBytes != 1048576 {
			t.Errorf("got %d %d %d", cfg.MaxModelLen, cfg.MaxNumBatchedTokens, cfg.MaxRequestBodyBytes)
		}
	})
	t.Run("HR flag value", func(t *testing.T) {
		cfg, _ := mustLoad(t, flagOptions(t, "--max-model-len", "32k"))
		if cfg.MaxModelLen != 32000 {
			t.Errorf("max_model_len = %d", cfg.MaxModelLen)
		}
	})
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "number " + v.(json.Number).String()
}

func TestLoad_InfiniteSpeedupRatio(t *testing.T) {
	for _, s := range []string{"inf", "+inf", "Infinity", "INF"} {
		t.Run(s, func(t *testing.T) {
			cfg, _ := mustLoad(t, overlay(map[string]any{"speedup_ratio": s, "decode_speedup_ratio": s}))
			if !math.IsInf(cfg.SpeedupRatio, 1) || !math.IsInf(cfg.DecodeSpeedupRatio, 1) || !engine.NoDelay(cfg.SpeedupRatio) {
				t.Errorf("speedups = %v %v", cfg.SpeedupRatio, cfg.DecodeSpeedupRatio)
			}
		})
	}
	t.Run("flag", func(t *testing.T) {
		cfg, _ := mustLoad(t, flagOptions(t, "--speedup-ratio", "inf"))
		if !math.IsInf(cfg.SpeedupRatio, 1) {
			t.Errorf("speedup_ratio = %v", cfg.SpeedupRatio)
		}
	})
	t.Run("marshals as the string inf and loads back", func(t *testing.T) {
		cfg, _ := mustLoad(t, overlay(map[string]any{"speedup_ratio": "inf"}))
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, _ := mustLoad(t, LoadOptions{ConfigPath: writeFile(t, "c.json", string(b))})
		if !math.IsInf(back.SpeedupRatio, 1) || back.DecodeSpeedupRatio != 1 {
			t.Errorf("round trip: %v %v", back.SpeedupRatio, back.DecodeSpeedupRatio)
		}
	})
}

func TestLoad_EnumsAreCaseInsensitiveAndAcceptDashes(t *testing.T) {
	cfg, _ := mustLoad(t, overlay(map[string]any{
		"kv_transfer_timing_mode":  "FULL-PROMPT",
		"engine_type":              "SGLang",
		"prefix_caching_hash_algo": "SHA256-CBOR",
		"dp_routing":               "Least-Loaded",
		"sglang":                   map[string]any{"schedule_policy": "FCFS"},
		"trtllm":                   map[string]any{"capacity_scheduler_policy": "Guaranteed-No-Evict"},
		"log_level":                "WARNING",
	}))
	got := []string{string(cfg.KVTransferTimingMode), string(cfg.EngineType), string(cfg.PrefixCachingHashAlgo), string(cfg.DPRouting),
		string(cfg.SGLang.SchedulePolicy), string(cfg.TRTLLM.CapacitySchedulerPolicy), string(cfg.LogLevel)}
	want := []string{"full_prompt", "sglang", "sha256_cbor", "least_loaded", "fifo", "guaranteed_no_evict", "warn"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoad_UnknownSGLangSchedulePolicyWarnsAndUsesFIFO(t *testing.T) {
	cfg, warns := mustLoad(t, overlay(map[string]any{"engine_type": "sglang", "max_model_len": "8192", "sglang": map[string]any{"schedule_policy": "cache-aware"}}))
	if cfg.SGLang.SchedulePolicy != "fifo" {
		t.Errorf("schedule_policy = %q", cfg.SGLang.SchedulePolicy)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "sglang.schedule_policy") {
		t.Errorf("warnings = %q", warns)
	}
}

func TestLoad_DerivedDefaults(t *testing.T) {
	tests := []struct {
		name  string
		opts  LoadOptions
		check func(t *testing.T, c *Config)
	}{
		{"served_model_name defaults to [model]", overlay(map[string]any{"model": "m1"}), func(t *testing.T, c *Config) {
			if !slices.Equal(c.ServedModelName, []string{"m1"}) || c.ServedName() != "m1" {
				t.Errorf("served = %q", c.ServedModelName)
			}
		}},
		{"worker_id is hostname:port", overlay(map[string]any{"port": json.Number("9001")}), func(t *testing.T, c *Config) {
			if c.WorkerID != "testhost:9001" {
				t.Errorf("worker_id = %q", c.WorkerID)
			}
		}},
		{"explicit worker_id kept", overlay(map[string]any{"worker_id": "w"}), func(t *testing.T, c *Config) {
			if c.WorkerID != "w" {
				t.Errorf("worker_id = %q", c.WorkerID)
			}
		}},
		{"planner_profile_data implies interpolated timing", overlay(map[string]any{"planner_profile_data": "p.npz"}), func(t *testing.T, c *Config) {
			if c.TimingModel != engine.TimingInterpolated {
				t.Errorf("timing_model = %q", c.TimingModel)
			}
		}},
		{"explicit timing_model wins over profile data", overlay(map[string]any{"planner_profile_data": "p.npz", "timing_model": "fixed"}), func(t *testing.T, c *Config) {
			if c.TimingModel != engine.TimingFixed {
				t.Errorf("timing_model = %q", c.TimingModel)
			}
		}},
		{"block size per engine: vllm", LoadOptions{}, func(t *testing.T, c *Config) {
			if c.BlockSize != 64 || c.SGLang.PageSize != 64 {
				t.Errorf("block_size = %d page_size = %d", c.BlockSize, c.SGLang.PageSize)
			}
		}},
		{"block size per engine: trtllm", overlay(map[string]any{"engine_type": "trtllm"}), func(t *testing.T, c *Config) {
			if c.BlockSize != 32 {
				t.Errorf("block_size = %d", c.BlockSize)
			}
		}},
		{"block size per engine: sglang", overlay(map[string]any{"engine_type": "sglang"}), func(t *testing.T, c *Config) {
			if c.BlockSize != 1 || c.ResolvedMetricsFamily() != "sglang" {
				t.Errorf("block_size = %d family = %q", c.BlockSize, c.ResolvedMetricsFamily())
			}
		}},
		{"sglang page_size gives the block size", overlay(map[string]any{"engine_type": "sglang", "sglang": map[string]any{"page_size": json.Number("16")}}), func(t *testing.T, c *Config) {
			if c.BlockSize != 16 {
				t.Errorf("block_size = %d", c.BlockSize)
			}
		}},
		{"metrics family auto resolves to vllm", LoadOptions{}, func(t *testing.T, c *Config) {
			if c.ResolvedMetricsFamily() != "vllm" {
				t.Errorf("family = %q", c.ResolvedMetricsFamily())
			}
		}},
		{"num_gpu_blocks not overridden by default", LoadOptions{}, func(t *testing.T, c *Config) {
			if c.NumGPUBlocksOverridden {
				t.Error("NumGPUBlocksOverridden = true")
			}
		}},
		{"num_gpu_blocks overridden even with the default value", overlay(map[string]any{"num_gpu_blocks": json.Number("16384")}), func(t *testing.T, c *Config) {
			if !c.NumGPUBlocksOverridden {
				t.Error("NumGPUBlocksOverridden = false")
			}
		}},
		{"advertise_host defaults to host", overlay(map[string]any{"host": "10.1.2.3"}), func(t *testing.T, c *Config) {
			if c.AdvertiseHost != "10.1.2.3" {
				t.Errorf("advertise_host = %q", c.AdvertiseHost)
			}
		}},
		{"advertise_host for a wildcard host is 127.0.0.1", overlay(map[string]any{"host": "0.0.0.0"}), func(t *testing.T, c *Config) {
			if c.AdvertiseHost != "127.0.0.1" {
				t.Errorf("advertise_host = %q", c.AdvertiseHost)
			}
		}},
		{"kv events publisher defaults to zmq when enabled", overlay(map[string]any{"kv_events_config": `{"enable_kv_cache_events": true}`}), func(t *testing.T, c *Config) {
			want := DefaultKVEventsConfig()
			want.EnableKVCacheEvents, want.Publisher = true, "zmq"
			if !reflect.DeepEqual(*c.KVEventsConfig, want) || !c.KVEventsEnabled() {
				t.Errorf("kv_events_config = %+v", *c.KVEventsConfig)
			}
		}},
		{"kv events publisher defaults to null when disabled", overlay(map[string]any{"kv_events_config": map[string]any{}}), func(t *testing.T, c *Config) {
			if c.KVEventsConfig.Publisher != "null" || c.KVEventsEnabled() {
				t.Errorf("publisher = %q", c.KVEventsConfig.Publisher)
			}
		}},
		{"legacy is_prefill selects the prefill worker", overlay(map[string]any{"is_prefill": true}), func(t *testing.T, c *Config) {
			if c.WorkerType != WorkerPrefill {
				t.Errorf("worker_type = %q", c.WorkerType)
			}
		}},
		{"worker_type wins over legacy is_decode", overlay(map[string]any{"is_decode": true, "worker_type": "prefill"}), func(t *testing.T, c *Config) {
			if c.WorkerType != WorkerPrefill {
				t.Errorf("worker_type = %q", c.WorkerType)
			}
		}},
		{"numeric hash_seed in a file", overlay(map[string]any{"hash_seed": json.Number("42")}), func(t *testing.T, c *Config) {
			if c.HashSeed != "42" {
				t.Errorf("hash_seed = %q", c.HashSeed)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, tt.opts)
			tt.check(t, cfg)
		})
	}
}

func TestLoad_EnvironmentFallbacks(t *testing.T) {
	t.Run("PYTHONHASHSEED fills an empty hash_seed", func(t *testing.T) {
		t.Setenv("PYTHONHASHSEED", "1234")
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: osLookupEnv})
		if cfg.HashSeed != "1234" {
			t.Errorf("hash_seed = %q", cfg.HashSeed)
		}
	})
	t.Run("explicit hash_seed wins over PYTHONHASHSEED", func(t *testing.T) {
		t.Setenv("PYTHONHASHSEED", "1234")
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: osLookupEnv, Overlay: map[string]any{"hash_seed": "7"}})
		if cfg.HashSeed != "7" {
			t.Errorf("hash_seed = %q", cfg.HashSeed)
		}
	})
	t.Run("hash_seed is 0 without PYTHONHASHSEED", func(t *testing.T) {
		t.Setenv("PYTHONHASHSEED", "")
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: osLookupEnv})
		if cfg.HashSeed != "0" {
			t.Errorf("hash_seed = %q", cfg.HashSeed)
		}
	})
	t.Run("VLLM_API_KEY when no source sets api_key", func(t *testing.T) {
		t.Setenv("VLLM_API_KEY", "envkey")
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: osLookupEnv})
		if !slices.Equal(cfg.APIKey, []string{"envkey"}) {
			t.Errorf("api_key = %q", cfg.APIKey)
		}
	})
	t.Run("--api-key wins over VLLM_API_KEY", func(t *testing.T) {
		t.Setenv("VLLM_API_KEY", "envkey")
		opts := flagOptions(t, "--api-key", "k1", "--api-key", "k2")
		opts.LookupEnv = osLookupEnv
		cfg, _ := mustLoad(t, opts)
		if !slices.Equal(cfg.APIKey, []string{"k1", "k2"}) {
			t.Errorf("api_key = %q", cfg.APIKey)
		}
	})
	t.Run("no api key without VLLM_API_KEY", func(t *testing.T) {
		t.Setenv("VLLM_API_KEY", "")
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: osLookupEnv})
		if len(cfg.APIKey) != 0 {
			t.Errorf("api_key = %q", cfg.APIKey)
		}
	})
}
