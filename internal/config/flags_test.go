package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFlagTable_EveryFlagMapsToAConfigKeyOfTheRightKind(t *testing.T) {
	def := Default()
	defV := reflect.ValueOf(&def).Elem()
	// Pointer-to-struct keys exist only once allocated.
	def.Reasoning, def.KVEventsConfig = &ReasoningConfig{}, &KVEventsConfig{}
	seen := map[string]bool{}
	for _, s := range flagTable {
		if seen[s.name] {
			t.Errorf("flag --%s listed twice", s.name)
		}
		seen[s.name] = true
		fv, ok := fieldAt(defV, s.key)
		if !ok {
			t.Errorf("flag --%s: no config key %q", s.name, s.key)
			continue
		}
		var kinds []reflect.Kind
		switch s.kind {
		case flagString:
			kinds = []reflect.Kind{reflect.String}
		case flagInt:
			kinds = []reflect.Kind{reflect.Int, reflect.Int64}
		case flagFloat:
			kinds = []reflect.Kind{reflect.Float64}
		case flagBool:
			kinds = []reflect.Kind{reflect.Bool}
		case flagList:
			kinds = []reflect.Kind{reflect.Slice}
		case flagJSON:
			kinds = []reflect.Kind{reflect.Pointer}
		}
		if !slices.Contains(kinds, fv.Kind()) {
			t.Errorf("flag --%s: kind %v does not fit %s (%v)", s.name, s.kind, s.key, fv.Kind())
		}
	}
}

func TestRewriteArgs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"-dp with a separate value", []string{"-dp", "4"}, []string{"--data-parallel-size", "4"}},
		{"-dp=N", []string{"--port", "1", "-dp=4"}, []string{"--port", "1", "--data-parallel-size=4"}},
		{"after -- nothing is rewritten", []string{"--", "-dp", "2"}, []string{"--", "-dp", "2"}},
		{"the value of a flag is not rewritten", []string{"--served-model-name", "-dp"}, []string{"--served-model-name", "-dp"}},
		{"a bool flag takes no value", []string{"--enable-prefix-caching", "-dp", "2"}, []string{"--enable-prefix-caching", "--data-parallel-size", "2"}},
		{"vLLM single-dash names", []string{"-tp", "2", "-pp=3", "-asc", "4", "-n", "2", "-q", "awq", "-ep"},
			[]string{"--tensor-parallel-size", "2", "--pipeline-parallel-size=3", "--api-server-count", "4", "--nnodes", "2", "--quantization", "awq", "--enable-expert-parallel"}},
		{"-O3 and -O=3", []string{"-O3", "-O=1"}, []string{"--optimization-level=3", "--optimization-level=1"}},
		{"-O followed by a level", []string{"-O", "2", "--port", "1"}, []string{"--optimization-level", "2", "--port", "1"}},
		{"-O alone stays", []string{"-O", "--port", "1"}, []string{"-O", "--port", "1"}},
		{"nargs+ takes values up to the next flag", []string{"--served-model-name", "a", "b", "c", "--port", "1"},
			[]string{"--served-model-name", "a", "--served-model-name", "b", "--served-model-name", "c", "--port", "1"}},
		{"nargs+ takes negative numbers", []string{"--cudagraph-capture-sizes", "1", "-2", "-tp", "2"},
			[]string{"--cudagraph-capture-sizes", "1", "--cudagraph-capture-sizes", "-2", "--tensor-parallel-size", "2"}},
		{"nargs+ with =VALUE takes one value", []string{"--api-key=k1", "m"}, []string{"--api-key=k1", "m"}},
		{"underscore spelling of nargs+", []string{"--served_model_name", "a", "b"}, []string{"--served_model_name", "a", "--served_model_name", "b"}},
		{"optional value given", []string{"--hf-token", "hf_x", "--port", "1"}, []string{"--hf-token=hf_x", "--port", "1"}},
		{"optional value absent", []string{"--hf-token", "--port", "1"}, []string{"--hf-token", "--port", "1"}},
		{"store_true takes no value", []string{"--trust-remote-code", "-tp", "2"}, []string{"--trust-remote-code", "--tensor-parallel-size", "2"}},
		{"value of a vLLM flag is not rewritten", []string{"--download-dir", "-tp"}, []string{"--download-dir", "-tp"}},
		{"unknown single-dash name stays", []string{"-xyz"}, []string{"-xyz"}},
		{"dotted JSON keys merge into one object after the other arguments",
			[]string{"--compilation-config.mode", "3", "--port", "1", "--compilation-config.pass_config.fuse=true",
				"--compilation_config.cache_dir", "/tmp/c d", "--compilation-config.sizes+", "1,2", "--compilation-config.sizes+=4"},
			[]string{"--port", "1", `--compilation-config={"cache_dir":"/tmp/c d","mode":3,"pass_config":{"fuse":true},"sizes":["1","2","4"]}`}},
		{"dotted values: JSON, human-readable integers, text", []string{"--kv-transfer-config.a", "80g", "--kv-transfer-config.b", "1.5K",
			"--kv-transfer-config.c", `{"x":[1]}`, "--kv-transfer-config.d", "null", "--kv-transfer-config.e", "12345678901234567890"},
			[]string{`--kv-transfer-config={"a":80000000000,"b":"1.5K","c":{"x":[1]},"d":null,"e":12345678901234567890}`}},
		{"dotted flags go before --", []string{"--kv-events-config.topic", "t", "--", "x"}, []string{`--kv-events-config={"topic":"t"}`, "--", "x"}},
		{"a dot in a value is not a dotted flag", []string{"--download-dir=a.b", "--host", "1.2.3.4"}, []string{"--download-dir=a.b", "--host", "1.2.3.4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RewriteArgs(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("RewriteArgs(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFlags_DecodeOntoConfig(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, c *Config)
	}{
		{"-dp", []string{"-dp", "2"}, func(t *testing.T, c *Config) { wantInt(t, "dp_size", c.DPSize, 2) }},
		{"--dp-size", []string{"--dp-size", "3"}, func(t *testing.T, c *Config) { wantInt(t, "dp_size", c.DPSize, 3) }},
		{"--data-parallel-size", []string{"--data-parallel-size=4"}, func(t *testing.T, c *Config) { wantInt(t, "dp_size", c.DPSize, 4) }},
		{"--num-gpu-blocks alias", []string{"--num-gpu-blocks", "100"}, func(t *testing.T, c *Config) {
			wantInt(t, "num_gpu_blocks", c.NumGPUBlocks, 100)
			if !c.NumGPUBlocksOverridden {
				t.Error("NumGPUBlocksOverridden = false")
			}
		}},
		{"--num-gpu-blocks-override", []string{"--num-gpu-blocks-override", "200"}, func(t *testing.T, c *Config) { wantInt(t, "num_gpu_blocks", c.NumGPUBlocks, 200) }},
		{"underscore spelling of a flag", []string{"--max_model_len", "1024"}, func(t *testing.T, c *Config) { wantInt(t, "max_model_len", c.MaxModelLen, 1024) }},
		{"--worker-type alias", []string{"--worker-type", "Prefill"}, func(t *testing.T, c *Config) { wantStr(t, "worker_type", c.WorkerType, "prefill") }},
		{"--disaggregation-mode", []string{"--disaggregation-mode", "decode"}, func(t *testing.T, c *Config) { wantStr(t, "worker_type", c.WorkerType, "decode") }},
		{"--no-enable-prefix-caching", []string{"--no-enable-prefix-caching"}, func(t *testing.T, c *Config) { wantBool(t, "enable_prefix_caching", c.EnablePrefixCaching, false) }},
		{"--enable-prefix-caching=false", []string{"--enable-prefix-caching=false"}, func(t *testing.T, c *Config) { wantBool(t, "enable_prefix_caching", c.EnablePrefixCaching, false) }},
		{"last of --no-x and --x wins", []string{"--no-enable-prefix-caching", "--enable-prefix-caching"}, func(t *testing.T, c *Config) {
			wantBool(t, "enable_prefix_caching", c.EnablePrefixCaching, true)
		}},
		{"--no-enable-chunked-prefill", []string{"--no-enable-chunked-prefill", "--max-num-batched-tokens", "32K"}, func(t *testing.T, c *Config) {
			wantBool(t, "enable_chunked_prefill", c.EnableChunkedPrefill, false)
		}},
		{"--no-deprecated-metrics", []string{"--no-deprecated-metrics"}, func(t *testing.T, c *Config) { wantBool(t, "deprecated_metrics", c.DeprecatedMetrics, false) }},
		{"--no-kv-events-replay-topic-frame", []string{"--no-kv-events-replay-topic-frame"}, func(t *testing.T, c *Config) {
			wantBool(t, "kv_events_replay_topic_frame", c.KVEventsReplayTopicFrame, false)
		}},
		{"--no-x=false means x", []string{"--no-deprecated-metrics=false"}, func(t *testing.T, c *Config) { wantBool(t, "deprecated_metrics", c.DeprecatedMetrics, true) }},
		{"plain bool flag", []string{"--enable-request-id-headers"}, func(t *testing.T, c *Config) {
			wantBool(t, "enable_request_id_headers", c.EnableRequestIDHeaders, true)
		}},
		{"comma-separated and repeated served names", []string{"--served-model-name", "a, b", "--served-model-name", "c"}, func(t *testing.T, c *Config) {
			if !slices.Equal(c.ServedModelName, []string{"a", "b", "c"}) {
				t.Errorf("served_model_name = %q", c.ServedModelName)
			}
		}},
		{"sglang flags map to nested keys", []string{"--sglang-page-size", "8", "--sglang-schedule-policy", "LPM", "--sglang-schedule-conservativeness", "0.5"}, func(t *testing.T, c *Config) {
			if c.SGLang.PageSize != 8 || c.SGLang.SchedulePolicy != "lpm" || c.SGLang.ScheduleConservativeness != 0.5 {
				t.Errorf("sglang = %+v", c.SGLang)
			}
		}},
		{"--trtllm-capacity-scheduler-policy", []string{"--trtllm-capacity-scheduler-policy", "GUARANTEED_NO_EVICT"}, func(t *testing.T, c *Config) {
			wantStr(t, "trtllm.capacity_scheduler_policy", c.TRTLLM.CapacitySchedulerPolicy, "guaranteed_no_evict")
		}},
		{"--kv-events-config keys one by one", []string{"--kv-events-config.enable_kv_cache_events", "true", "--kv-events-config.topic", "kv@pod@m"}, func(t *testing.T, c *Config) {
			if k := c.KVEventsConfig; k == nil || !k.EnableKVCacheEvents || k.Topic != "kv@pod@m" {
				t.Errorf("kv_events_config = %+v", k)
			}
		}},
		{"--kv-events-config JSON", []string{"--kv-events-config", `{"enable-kv-cache-events": true, "topic": "kv@pod@m", "replay_endpoint": "tcp://*:5600"}`}, func(t *testing.T, c *Config) {
			k := c.KVEventsConfig
			if k == nil || !k.EnableKVCacheEvents || k.Topic != "kv@pod@m" || k.ReplayEndpoint == nil || *k.ReplayEndpoint != "tcp://*:5600" {
				t.Errorf("kv_events_config = %+v", k)
			}
		}},
		{"disaggregation fields", []string{"--disaggregation-mode", "prefill", "--bootstrap-port", "7000", "--advertise-host", "h", "--kv-bytes-per-token", "1000000",
			"--kv-transfer-bandwidth", "1", "--kv-transfer-timing-mode", "destination-missing", "--handoff-session-timeout-ms", "5"}, func(t *testing.T, c *Config) {
			if c.BootstrapPort != 7000 || c.AdvertiseHost != "h" || c.KVBytesPerToken != 1000000 || c.KVTransferBandwidth != 1 ||
				c.KVTransferTimingMode != "destination_missing" || c.HandoffSessionTimeoutMs != 5 {
				t.Errorf("disaggregation = %+v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := mustLoad(t, flagOptions(t, tt.args...))
			tt.check(t, cfg)
		})
	}
}

func TestFlags_ValuesGetTheSameValidationAsFiles(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"non-numeric integer", []string{"--max-num-seqs", "abc"}, []string{`--max-num-seqs must be an integer, got string "abc"`}},
		{"fractional integer", []string{"--max-num-seqs", "2.5"}, []string{"--max-num-seqs must be an integer, got 2.5"}},
		{"engine_type text", []string{"--engine-type", "tensorrt"}, []string{"Invalid --engine-type 'tensorrt'. Must be 'vllm', 'sglang', or 'trtllm'."}},
		{"unknown field in --kv-events-config", []string{"--kv-events-config", `{"enable_kv_cache_events": true, "bogus": 1}`},
			[]string{`unknown field "kv_events_config.bogus"`}},
		{"invalid JSON in --kv-events-config", []string{"--kv-events-config", `{"enable_kv_cache_events": tru}`},
			[]string{"--kv-events-config: invalid JSON: invalid character '}' in literal true (expecting 'e')"}},
		{"trailing data in --reasoning", []string{"--reasoning", `{"thinking_ratio": 0.5} {}`},
			[]string{"--reasoning: trailing data after JSON value"}},
		{"--reasoning without thinking_ratio", []string{"--reasoning", `{}`}, []string{"reasoning.thinking_ratio is required"}},
		{"empty served name", []string{"--served-model-name", "a,,b"}, []string{"--served-model-name entries must not be empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadProblems(t, flagOptions(t, tt.args...))
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestFlags_BadBoolValueIsAParseError(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	RegisterFlags(fs)
	err := fs.Parse([]string{"--enable-prefix-caching=maybe"})
	if err == nil || !strings.Contains(err.Error(), "--enable-prefix-caching") {
		t.Errorf("Parse error = %v", err)
	}
}

func TestFlagOverlay_OnlyChangedFlags(t *testing.T) {
	opts := flagOptions(t, "--port", "9000", "--config", "c.yaml", "--sglang-page-size", "16", "--speedup-ratio", "inf")
	want := map[string]any{"port": n("9000"), "sglang": map[string]any{"page_size": n("16")}, "speedup_ratio": "inf"}
	if !reflect.DeepEqual(opts.Overlay, want) {
		t.Errorf("overlay = %#v, want %#v", opts.Overlay, want)
	}
	if opts.ConfigPath != "c.yaml" {
		t.Errorf("ConfigPath = %q", opts.ConfigPath)
	}
}

func TestLoad_MarshalledConfigLoadsBackUnchanged(t *testing.T) {
	cfg, _ := mustLoad(t, flagOptions(t, "--engine-type", "sglang", "--sglang-page-size", "16", "--speedup-ratio", "inf",
		"--reasoning", `{"thinking_ratio":0.25}`, "--kv-events-config", `{"enable_kv_cache_events":true}`, "--api-key", "k"))
	b, err := cfg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, _ := mustLoad(t, LoadOptions{ConfigPath: writeFile(t, "c.json", string(b))})
	back.NumGPUBlocksOverridden = cfg.NumGPUBlocksOverridden // not a JSON key
	if !reflect.DeepEqual(cfg, back) {
		t.Errorf("round trip changed the config:\n got  %+v\n want %+v", back, cfg)
	}
	if _, err := back.Validate(); err != nil {
		t.Errorf("Validate after Load: %v", err)
	}
}

func wantInt(t *testing.T, key string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", key, got, want)
	}
}

func wantStr[T ~string](t *testing.T, key string, got T, want string) {
	t.Helper()
	if string(got) != want {
		t.Errorf("%s = %q, want %q", key, got, want)
	}
}

func wantBool(t *testing.T, key string, got, want bool) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %t, want %t", key, got, want)
	}
}

// TestFlagTableGroups: every configuration flag has a --help section and a
// scope, so a flag added to the table must say where it belongs.
func TestFlagTableGroups(t *testing.T) {
	for _, s := range flagTable {
		if _, ok := groupTitles[s.group]; !ok {
			t.Errorf("--%s has no group: set flagSpec.group", s.name)
		}
		if s.scope == 0 || s.scope&^ScopeAll != 0 {
			t.Errorf("--%s has scope %b: set flagSpec.scope (ScopeServer or ScopeAll)", s.name, s.scope)
		}
	}
}
