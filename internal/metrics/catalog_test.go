package metrics

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// spec is one exported metric (docs/metrics.md): its type, label names and
// the fixed label values whose children must exist for every rank.
type spec struct {
	name   string
	typ    dto.MetricType
	labels []string
	fixed  map[string][]string // label → values created at startup
	perDP  bool                // one child set per rank
	single bool                // one child (engine="0") although vLLM-family
}

const (
	gauge   = dto.MetricType_GAUGE
	counter = dto.MetricType_COUNTER
	hist    = dto.MetricType_HISTOGRAM
)

var (
	vl = []string{"engine", "model_name"}
	sl = []string{"dp_rank", "model_name"}
	ml = []string{"model_name"}
	dl = []string{"dp_rank"}
)

func vllmSpecs() []spec {
	s := []spec{
		{name: "vllm:num_requests_running", typ: gauge, labels: vl},
		{name: "vllm:num_requests_waiting", typ: gauge, labels: vl},
		{name: "vllm:num_requests_waiting_by_reason", typ: gauge, labels: []string{"engine", "model_name", "reason"},
			fixed: map[string][]string{"reason": {"capacity", "deferred"}}},
		{name: "vllm:kv_cache_usage_perc", typ: gauge, labels: vl},
		{name: "vllm:cache_config_info", typ: gauge, labels: []string{"block_size", "cache_dtype",
			"enable_prefix_caching", "engine", "gpu_memory_utilization", "kv_cache_max_concurrency",
			"kv_cache_size_tokens", "num_gpu_blocks", "num_gpu_blocks_override", "prefix_caching_hash_algo"}},
		{name: "vllm:num_preemptions_total", typ: counter, labels: vl},
		{name: "vllm:prompt_tokens_total", typ: counter, labels: vl},
		{name: "vllm:prompt_tokens_cached_total", typ: counter, labels: vl},
		{name: "vllm:generation_tokens_total", typ: counter, labels: vl},
		{name: "vllm:prefix_cache_queries_total", typ: counter, labels: vl},
		{name: "vllm:prefix_cache_hits_total", typ: counter, labels: vl},
		{name: "vllm:mm_cache_queries_total", typ: counter, labels: vl, single: true},
		{name: "vllm:mm_cache_hits_total", typ: counter, labels: vl, single: true},
		{name: "vllm:request_success_total", typ: counter, labels: []string{"engine", "finished_reason", "model_name"},
			fixed: map[string][]string{"finished_reason": {"stop", "length", "abort", "error"}}},
	}
	for _, h := range []string{"time_to_first_token_seconds", "inter_token_latency_seconds",
		"request_time_per_output_token_seconds", "e2e_request_latency_seconds", "request_queue_time_seconds",
		"request_prefill_time_seconds", "request_decode_time_seconds", "request_inference_time_seconds",
		"iteration_tokens_total", "request_prompt_tokens", "request_generation_tokens",
		"request_prefill_kv_computed_tokens", "request_num_preemptions", "request_params_n",
		"request_params_max_tokens", "request_max_num_generation_tokens"} {
		s = append(s, spec{name: "vllm:" + h, typ: hist, labels: vl})
	}
	for i := range s {
		s[i].perDP = !s[i].single
	}
	return s
}

func deprecatedSpecs() []spec {
	return []spec{
		{name: "vllm:gpu_cache_usage_perc", typ: gauge, labels: vl, perDP: true},
		{name: "vllm:gpu_prefix_cache_queries_total", typ: counter, labels: vl, perDP: true},
		{name: "vllm:gpu_prefix_cache_hits_total", typ: counter, labels: vl, perDP: true},
		{name: "vllm:time_per_output_token_seconds", typ: hist, labels: vl, perDP: true},
	}
}

func sglangSpecs() []spec {
	var s []spec
	for _, g := range []string{"num_running_reqs", "num_queue_reqs", "num_used_tokens", "token_usage",
		"max_total_num_tokens", "cache_hit_rate", "gen_throughput", "num_retracted_reqs"} {
		s = append(s, spec{name: "sglang:" + g, typ: gauge, labels: sl, perDP: true})
	}
	s = append(s, spec{name: "sglang:queue_time_seconds", typ: hist, labels: sl, perDP: true})
	for _, c := range []string{"prompt_tokens_total", "generation_tokens_total", "cached_tokens_total",
		"num_requests_total", "num_aborted_requests_total"} {
		s = append(s, spec{name: "sglang:" + c, typ: counter, labels: ml})
	}
	for _, h := range []string{"time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds"} {
		s = append(s, spec{name: "sglang:" + h, typ: hist, labels: ml})
	}
	return s
}

func mockerSpecs() []spec {
	s := []spec{
		{name: "mocker_info", typ: gauge, labels: []string{"engine_type", "timing_model", "version", "worker_type"}},
		{name: "mocker_passes_total", typ: counter, labels: dl, perDP: true},
		{name: "mocker_pass_seconds_total", typ: counter, labels: dl, perDP: true},
		{name: "mocker_requests_rejected_total", typ: counter, labels: dl, perDP: true},
		{name: "mocker_kv_events_total", typ: counter, labels: []string{"dp_rank", "type"}, perDP: true,
			fixed: map[string][]string{"type": {"BlockStored", "BlockRemoved", "AllBlocksCleared"}}},
		{name: "mocker_kv_event_batches_total", typ: counter, labels: dl, perDP: true},
		{name: "mocker_kv_event_batches_dropped_total", typ: counter, labels: dl, perDP: true},
		{name: "mocker_fpm_messages_total", typ: counter, labels: []string{"dp_rank", "kind"}, perDP: true,
			fixed: map[string][]string{"kind": {"pass", "heartbeat"}}},
		{name: "mocker_token_delivery_lag_seconds", typ: hist, labels: dl, perDP: true},
		{name: "mocker_kv_cache_blocks", typ: gauge, labels: []string{"dp_rank", "state"}, perDP: true,
			fixed: map[string][]string{"state": {"in_use", "cached", "free"}}},
		{name: "mocker_mm_unfetched_items_total", typ: counter, labels: []string{"modality"},
			fixed: map[string][]string{"modality": {"image", "audio", "video"}}},
		{name: "mocker_injected_faults_total", typ: counter, labels: []string{"type"},
			fixed: map[string][]string{"type": {"rate_limit", "server_error", "unavailable", "context_length", "timeout",
				"stall", "truncate", "stream_error", "slow_first_token", "reset",
				"limit_concurrency", "limit_rpm", "limit_tpm", "invalid_api_key", "invalid_request", "model_not_found"}}},
	}
	for _, f := range []string{"num_prefill_requests", "sum_prefill_tokens", "var_prefill_length",
		"sum_prefill_kv_tokens", "num_decode_requests", "sum_decode_kv_tokens", "var_decode_kv_tokens",
		"num_queued_prefill", "sum_queued_prefill_tokens", "var_queued_prefill_length", "num_queued_decode",
		"sum_queued_decode_kv_tokens", "var_queued_decode_kv_tokens", "wall_time_secs", "counter_id"} {
		s = append(s, spec{name: "mocker_fpm_" + f, typ: gauge, labels: dl, perDP: true})
	}
	return s
}

// checkSpec asserts one metric's presence, type, label names and fixed
// children for ranks 0..dp-1.
func checkSpec(t *testing.T, f families, s spec, dp int) {
	t.Helper()
	mf, ok := f[s.name]
	if !ok {
		t.Errorf("%s missing", s.name)
		return
	}
	if mf.GetType() != s.typ {
		t.Errorf("%s type %v, want %v", s.name, mf.GetType(), s.typ)
	}
	if mf.GetHelp() == "" {
		t.Errorf("%s has no help", s.name)
	}
	for _, m := range mf.Metric {
		if got := labelNames(m); !slices.Equal(got, s.labels) {
			t.Errorf("%s labels %v, want %v", s.name, got, s.labels)
		}
	}
	children := 1
	for _, vals := range s.fixed {
		children *= len(vals)
	}
	ranks := 1
	if s.perDP {
		ranks = dp
	}
	if len(mf.Metric) != children*ranks {
		t.Errorf("%s has %d samples, want %d", s.name, len(mf.Metric), children*ranks)
	}
	if !s.perDP {
		return
	}
	rankLabel := "dp_rank"
	if strings.HasPrefix(s.name, "vllm:") {
		rankLabel = "engine"
	}
	for rank := range dp {
		want := []string{rankLabel, fmt.Sprint(rank)}
		for label, vals := range s.fixed {
			for _, v := range vals {
				if !slices.ContainsFunc(mf.Metric, func(m *dto.Metric) bool {
					return hasLabels(m, append(want, label, v)...)
				}) {
					t.Errorf("%s{%s=%d,%s=%q} missing", s.name, rankLabel, rank, label, v)
				}
			}
		}
		if len(s.fixed) == 0 && !slices.ContainsFunc(mf.Metric, func(m *dto.Metric) bool { return hasLabels(m, want...) }) {
			t.Errorf("%s{%s=%d} missing", s.name, rankLabel, rank)
		}
	}
}

// TestCatalog checks every metric docs/metrics.md lists, and nothing else
// under the vllm:, sglang: and mocker_ prefixes, for each family and
// deprecation setting, with dp_size 2.
func TestCatalog(t *testing.T) {
	for _, tc := range []struct {
		family     string
		deprecated bool
		engine     engine.EngineType
		vllm, sgl  bool
	}{
		{"vllm", true, engine.EngineVLLM, true, false},
		{"vllm", false, engine.EngineVLLM, true, false},
		{"sglang", true, engine.EngineVLLM, false, true},
		{"both", true, engine.EngineVLLM, true, true},
		{"both", false, engine.EngineVLLM, true, true},
		{"auto", true, engine.EngineSGLang, false, true},
		{"auto", true, engine.EngineTRTLLM, true, false},
	} {
		t.Run(fmt.Sprintf("%s-%s-deprecated=%v", tc.family, tc.engine, tc.deprecated), func(t *testing.T) {
			cfg := testConfig(func(c *config.Config) {
				c.MetricsFamily = config.MetricsFamily(tc.family)
				c.DeprecatedMetrics = tc.deprecated
				c.EngineType = tc.engine
				c.DPSize = 2
			})
			f := scrape(t, newReg(cfg, "v1.2.3"))
			want := mockerSpecs()
			if tc.vllm {
				want = append(want, vllmSpecs()...)
				if tc.deprecated {
					want = append(want, deprecatedSpecs()...)
				}
			}
			if tc.sgl {
				want = append(want, sglangSpecs()...)
			}
			names := map[string]bool{}
			for _, s := range want {
				names[s.name] = true
				checkSpec(t, f, s, 2)
			}
			for name := range f {
				if (strings.HasPrefix(name, "vllm:") || strings.HasPrefix(name, "sglang:") ||
					strings.HasPrefix(name, "mocker_")) && !names[name] {
					t.Errorf("unexpected metric %s", name)
				}
			}
			if !tc.deprecated || !tc.vllm {
				for _, s := range deprecatedSpecs() {
					if _, ok := f[s.name]; ok {
						t.Errorf("deprecated %s exported", s.name)
					}
				}
			}
			for _, p := range []string{"go_goroutines", "process_cpu_seconds_total"} {
				if _, ok := f[p]; !ok {
					t.Errorf("%s missing (Go/process collectors)", p)
				}
			}
			if got := f.value(t, "mocker_info", "version", "v1.2.3", "engine_type", string(tc.engine),
				"worker_type", "aggregated", "timing_model", "polynomial"); got != 1 {
				t.Errorf("mocker_info = %v", got)
			}
		})
	}
}

func TestCacheConfigInfo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *config.Config)
		want   map[string]string
	}{
		{"defaults", nil, map[string]string{
			"engine": "0", "block_size": "64", "cache_dtype": "auto", "enable_prefix_caching": "True",
			"gpu_memory_utilization": "0.9", "num_gpu_blocks": "16384", "num_gpu_blocks_override": "None",
			"prefix_caching_hash_algo": "xxh3", "kv_cache_size_tokens": "1048576", "kv_cache_max_concurrency": "32.0",
		}},
		{"overridden", func(c *config.Config) {
			c.NumGPUBlocks, c.NumGPUBlocksOverridden, c.BlockSize = 1000, true, 16
			c.EnablePrefixCaching, c.PrefixCachingHashAlgo, c.MaxModelLen = false, "sha256_cbor", 10000
		}, map[string]string{
			"block_size": "16", "enable_prefix_caching": "False", "num_gpu_blocks": "1000",
			"num_gpu_blocks_override": "1000", "prefix_caching_hash_algo": "sha256_cbor",
			"kv_cache_size_tokens": "16000", "kv_cache_max_concurrency": "1.6",
		}},
		{"fraction", func(c *config.Config) { c.NumGPUBlocks, c.MaxModelLen = 6, 32768 },
			map[string]string{"kv_cache_size_tokens": "384", "kv_cache_max_concurrency": "0.01171875"}},
		{"engine default block size", func(c *config.Config) { c.BlockSize = 0; c.EngineType = engine.EngineTRTLLM },
			map[string]string{"block_size": "32", "kv_cache_max_concurrency": "16.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := scrape(t, newReg(testConfig(tc.mutate), "test"))
			mf := f["vllm:cache_config_info"]
			if mf == nil || len(mf.Metric) != 1 {
				t.Fatalf("cache_config_info: %v", mf)
			}
			m := mf.Metric[0]
			if m.Gauge.GetValue() != 1 {
				t.Errorf("value %v, want 1", m.Gauge.GetValue())
			}
			got := map[string]string{}
			for _, l := range m.Label {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if _, ok := got["model_name"]; ok {
				t.Errorf("cache_config_info has a model_name label")
			}
		})
	}
}

func TestBuckets(t *testing.T) {
	f := scrape(t, newReg(testConfig(func(c *config.Config) { c.MetricsFamily = "both" }), "test"))
	b125 := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
	ttft := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
		10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itl := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0}
	lat := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
		240.0, 480.0, 960.0, 1920.0, 7680.0}
	iter := []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	want := map[string][]float64{
		"vllm:time_to_first_token_seconds":           ttft,
		"vllm:inter_token_latency_seconds":           itl,
		"vllm:time_per_output_token_seconds":         itl,
		"vllm:request_time_per_output_token_seconds": itl,
		"vllm:e2e_request_latency_seconds":           lat,
		"vllm:request_queue_time_seconds":            lat,
		"vllm:request_prefill_time_seconds":          lat,
		"vllm:request_decode_time_seconds":           lat,
		"vllm:request_inference_time_seconds":        lat,
		"vllm:iteration_tokens_total":                iter,
		"vllm:request_prompt_tokens":                 b125,
		"vllm:request_generation_tokens":             b125,
		"vllm:request_prefill_kv_computed_tokens":    b125,
		"vllm:request_params_max_tokens":             b125,
		"vllm:request_max_num_generation_tokens":     b125,
		"vllm:request_num_preemptions":               {1, 2, 3, 4, 5, 10, 20},
		"vllm:request_params_n":                      {1, 2, 5, 10, 20},
		"sglang:queue_time_seconds": {0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80,
			90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000},
		"sglang:time_to_first_token_seconds": {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80,
			100, 200, 400},
		"sglang:inter_token_latency_seconds": {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030,
			0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0},
		"sglang:e2e_request_latency_seconds": {0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100,
			200, 400, 600, 1200, 1800, 2400},
		"mocker_token_delivery_lag_seconds": {0.0005, 0.00056, 0.00063, 0.00071, 0.0008, 0.0009,
			0.001, 0.00112, 0.00125, 0.0014, 0.0016, 0.0018, 0.002, 0.00224, 0.0025, 0.0028,
			0.00315, 0.00355, 0.004, 0.0045, 0.005, 0.0056, 0.0063, 0.0071, 0.008, 0.009,
			0.01, 0.0112, 0.0125, 0.014, 0.016, 0.018, 0.02, 0.0224, 0.025, 0.028,
			0.0315, 0.0355, 0.04, 0.045, 0.05, 0.056, 0.063, 0.071, 0.08, 0.09,
			0.1, 0.112, 0.125, 0.14, 0.16, 0.18, 0.2, 0.224, 0.25, 0.28,
			0.315, 0.355, 0.4, 0.45, 0.5, 0.56, 0.63, 0.71, 0.8, 0.9, 1},
	}
	for name, w := range want {
		if got := f.bounds(t, name); !slices.Equal(got, w) {
			t.Errorf("%s buckets %v, want %v", name, got, w)
		}
	}

	for maxLen, w := range map[int][]float64{
		32768: b125,
		100:   {1, 2, 5, 10, 20, 50, 100},
		8:     {1, 2, 5},
		1:     {1},
		0:     {1},
		50000: {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000},
	} {
		if got := Buckets125(maxLen); !slices.Equal(got, w) {
			t.Errorf("Buckets125(%d) = %v, want %v", maxLen, got, w)
		}
	}
	small := scrape(t, newReg(testConfig(func(c *config.Config) { c.MaxModelLen = 100 }), "test"))
	if got := small.bounds(t, "vllm:request_prompt_tokens"); !slices.Equal(got, []float64{1, 2, 5, 10, 20, 50, 100}) {
		t.Errorf("request_prompt_tokens buckets for max_model_len 100: %v", got)
	}
}

// specNameProblems are promlint findings caused by vLLM's own metric names,
// which clients expect and which therefore cannot be fixed here.
var specNameProblems = map[string]string{
	"vllm:iteration_tokens_total": `non-counter metrics should not have "_total" suffix`,
}

func TestPromlint(t *testing.T) {
	for _, family := range []string{"vllm", "sglang", "both"} {
		t.Run(family, func(t *testing.T) {
			reg := newReg(testConfig(func(c *config.Config) { c.MetricsFamily = config.MetricsFamily(family); c.DPSize = 2 }), "test")
			// Put data in every family first so nothing lints as empty.
			r := reg.Observer(0)
			r.ObservePass(&engine.PassReport{IsPass: true, IterationTokens: 3, GenerationTokens: 1,
				First: []engine.FirstTokenRecord{{PromptTokens: 2, TTFT: 0.01, HasToken: true}}, ITL: []float64{0.01}})
			body := scrapeText(t, reg).Raw
			problems, err := promlint.New(bytes.NewReader(body)).Lint()
			if err != nil {
				t.Fatalf("promlint: %v", err)
			}
			colon := 0
			for _, p := range problems {
				switch {
				case p.Text == "metric names should not contain ':'":
					colon++
				case specNameProblems[p.Metric] == p.Text:
					t.Logf("expected (spec name) %s: %s", p.Metric, p.Text)
				default:
					t.Errorf("promlint: %s: %s", p.Metric, p.Text)
				}
			}
			if colon == 0 {
				t.Errorf("no ':' problem reported; lint did not see the vllm:/sglang: names")
			}
		})
	}
}

func TestHandler(t *testing.T) {
	reg := newReg(testConfig(nil), "test")
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()

	for _, accept := range []string{"", "application/openmetrics-text; version=1.0.0",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		"text/plain;version=1.0.0;escaping=allow-utf-8"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != ContentType {
			t.Errorf("Accept %q: Content-Type %q", accept, ct)
		}
		if bytes.Contains(body, []byte("_created")) || bytes.Contains(body, []byte("# EOF")) {
			t.Errorf("Accept %q: OpenMetrics output", accept)
		}
		if !bytes.Contains(body, []byte("# TYPE vllm:num_requests_running gauge")) {
			t.Errorf("Accept %q: no vllm:num_requests_running", accept)
		}
	}

	// Gzip when asked for.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(body, []byte("vllm:kv_cache_usage_perc{")) {
		t.Errorf("gzip body: %v", err)
	}
	for h, want := range map[string]bool{"gzip": true, "gzip;q=0": false, "deflate, gzip;q=0.5": true, "br": false, "": false} {
		if acceptsGzip(h) != want {
			t.Errorf("acceptsGzip(%q) != %v", h, want)
		}
	}
}

func TestRequestDeliveryAndPublisherCounters(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) { c.DPSize = 2 }), "test")
	var sent, dropped atomic.Uint64
	reg.RegisterKVPublisherCounters(1, sent.Load, dropped.Load)
	sent.Store(7)
	dropped.Store(2)
	reg.ObserveRequest(0, 2, 100, 37)
	reg.ObserveRequest(1, 1, 16, 16)
	reg.ObserveRequest(9, 1, 16, 16) // out of range: rank 0
	reg.ObserveDeliveryLag(0, 0.003)
	reg.ObserveDeliveryLag(0, -1) // early: 0
	reg.ObserveDeliveryLag(5, 1)  // ignored

	f := scrape(t, reg)
	if got := f.value(t, "mocker_kv_event_batches_total", "dp_rank", "1"); got != 7 {
		t.Errorf("batches rank 1 = %v", got)
	}
	if got := f.value(t, "mocker_kv_event_batches_dropped_total", "dp_rank", "1"); got != 2 {
		t.Errorf("dropped rank 1 = %v", got)
	}
	if got := f.value(t, "mocker_kv_event_batches_total", "dp_rank", "0"); got != 0 {
		t.Errorf("batches rank 0 = %v", got)
	}
	e0 := []string{"engine", "0"}
	if c, s := f.hist(t, "vllm:request_params_n", e0...); c != 2 || s != 3 {
		t.Errorf("params_n rank 0: %d %v", c, s)
	}
	if c, s := f.hist(t, "vllm:request_params_max_tokens", e0...); c != 2 || s != 116 {
		t.Errorf("params_max_tokens rank 0: %d %v", c, s)
	}
	if c, s := f.hist(t, "vllm:request_max_num_generation_tokens", e0...); c != 2 || s != 53 {
		t.Errorf("max_num_generation_tokens rank 0: %d %v", c, s)
	}
	if c, s := f.hist(t, "vllm:request_params_n", "engine", "1"); c != 1 || s != 1 {
		t.Errorf("params_n rank 1: %d %v", c, s)
	}
	if c, s := f.hist(t, "mocker_token_delivery_lag_seconds", "dp_rank", "0"); c != 2 || s != 0.003 {
		t.Errorf("delivery lag rank 0: %d %v", c, s)
	}
	if c, _ := f.hist(t, "mocker_token_delivery_lag_seconds", "dp_rank", "1"); c != 0 {
		t.Errorf("delivery lag rank 1: %d", c)
	}

	// Replacing and clearing the hooks.
	reg.RegisterKVPublisherCounters(1, nil, nil)
	if got := scrape(t, reg).value(t, "mocker_kv_event_batches_total", "dp_rank", "1"); got != 0 {
		t.Errorf("batches after clearing = %v", got)
	}

	// sglang-only: the request histograms do not exist; ObserveRequest is a no-op.
	sg := newReg(testConfig(func(c *config.Config) { c.MetricsFamily = "sglang" }), "test")
	sg.ObserveRequest(0, 1, 2, 3)

	defer func() {
		if recover() == nil {
			t.Errorf("Observer(2) with dp_size 2 did not panic")
		}
	}()
	reg.Observer(2)
}

// TestRankIsolation: each rank's observer writes only its own children.
func TestRankIsolation(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) { c.DPSize = 3; c.MetricsFamily = "both" }), "test")
	reg.Observer(2).ObservePass(&engine.PassReport{IsPass: true, IterationTokens: 5, GenerationTokens: 2,
		Preemptions: 1, PrefixQueries: 10, PrefixHits: 4, Rejected: 1, KVEvents: [4]int{0, 2, 1, 1},
		ITL: []float64{0.02, 0.02}})
	reg.Observer(2).ObserveGauges(engine.Gauges{Rank: 2, Running: 3, Waiting: 2, WaitingDeferred: 1, KVUsage: 0.5})
	f := scrape(t, reg)
	for rank := range 3 {
		e := []string{"engine", fmt.Sprint(rank)}
		d := []string{"dp_rank", fmt.Sprint(rank)}
		want := func(v float64) float64 {
			if rank == 2 {
				return v
			}
			return 0
		}
		for _, c := range []struct {
			name   string
			labels []string
			v      float64
		}{
			{"vllm:num_preemptions_total", e, 1},
			{"vllm:prefix_cache_queries_total", e, 10},
			{"vllm:prefix_cache_hits_total", e, 4},
			{"vllm:generation_tokens_total", e, 2},
			{"vllm:num_requests_running", e, 3},
			{"vllm:num_requests_waiting", e, 3},
			{"vllm:num_requests_waiting_by_reason", append(e, "reason", "capacity"), 2},
			{"vllm:num_requests_waiting_by_reason", append(e, "reason", "deferred"), 1},
			{"vllm:kv_cache_usage_perc", e, 0.5},
			{"vllm:gpu_cache_usage_perc", e, 0.5},
			{"sglang:num_queue_reqs", d, 3},
			{"sglang:num_used_tokens", d, 0.5 * 16384 * 64},
			{"sglang:cache_hit_rate", d, 0.4},
			{"sglang:num_retracted_reqs", d, 1},
			{"mocker_requests_rejected_total", d, 1},
			{"mocker_kv_events_total", append(d, "type", "BlockStored"), 2},
			{"mocker_kv_events_total", append(d, "type", "BlockRemoved"), 1},
			{"mocker_kv_events_total", append(d, "type", "AllBlocksCleared"), 1},
		} {
			if got := f.value(t, c.name, c.labels...); got != want(c.v) {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, want(c.v))
			}
		}
		if c, s := f.hist(t, "vllm:inter_token_latency_seconds", e...); c != uint64(want(2)) || s != want(0.04) {
			t.Errorf("rank %d ITL %d %v", rank, c, s)
		}
	}
	// The sglang request ITL is summed over ranks.
	if c, _ := f.hist(t, "sglang:inter_token_latency_seconds"); c != 2 {
		t.Errorf("sglang ITL count %d", c)
	}
}

// TestSGLangEngineRetractions: with engine type sglang, preemptions reported
// by the engine are retractions and leave vllm:num_preemptions_total at 0.
func TestSGLangEngineRetractions(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) { c.EngineType = engine.EngineSGLang; c.MetricsFamily = "both" }), "test")
	reg.Observer(0).ObservePass(&engine.PassReport{IsPass: true, Preemptions: 2})
	f := scrape(t, reg)
	if got := f.value(t, "vllm:num_preemptions_total", rank0...); got != 0 {
		t.Errorf("vllm:num_preemptions_total = %v", got)
	}
	if got := f.value(t, "sglang:num_retracted_reqs", "dp_rank", "0"); got != 2 {
		t.Errorf("sglang:num_retracted_reqs = %v", got)
	}
}

// TestBatchHist compares the batch histogram with per-value observation,
// including bucket edges.
func TestBatchHist(t *testing.T) {
	h := newBatchHist([]float64{0.01, 0.1, 1})
	h.observeAll([]float64{0.01, 0.01, 0.02, 0.1, 0.100001, 5, 5, 0})
	h.observe(1)
	buckets, sum, count := h.snapshot()
	want := map[float64]uint64{0.01: 3, 0.1: 5, 1: 7}
	for k, v := range want {
		if buckets[k] != v {
			t.Errorf("bucket le=%v: %d, want %d", k, buckets[k], v)
		}
	}
	if count != 9 || !approx(sum, 0.01+0.01+0.02+0.1+0.100001+5+5+1, 1e-12) {
		t.Errorf("count %d sum %v", count, sum)
	}
	h.observeAll(nil)
	if _, _, c := h.snapshot(); c != 9 {
		t.Errorf("empty batch changed the count")
	}
}

// TestConcurrentScrape drives a workload on two ranks while scraping
// (run with -race).
func TestConcurrentScrape(t *testing.T) {
	cfg := testConfig(func(c *config.Config) {
		c.DPSize = 2
		c.MetricsFamily = "both"
		c.BlockSize = 16
		c.NumGPUBlocks = 64
	})
	reg := newReg(cfg, "test")
	var scraper, sims sync.WaitGroup
	stop := make(chan struct{})
	scrapes := 0
	scraper.Add(1)
	go func() {
		defer scraper.Done()
		for {
			scrapes++
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Errorf("Gather: %v", err)
				return
			}
		}
	}()
	var total atomic.Int64
	for rank := range 2 {
		sims.Add(1)
		go func() {
			defer sims.Done()
			core, err := engine.NewCore(cfg.EngineConfig(nil), engine.CoreOptions{Rank: rank, Observer: reg.Observer(rank), FPMSink: reg.FPMSink(rank)})
			if err != nil {
				t.Error(err)
				return
			}
			sim := engine.NewSimulator(core)
			sim.AfterPass = func(int) { runtime.Gosched() } // interleave with the scraper
			for i := range 40 {
				sim.SubmitAt(ms(float64(i)), &engine.Request{ID: engine.NewRequestID(),
					Prompt: tokens(1000*i+rank, 50), PlannedOutput: tokens(1, 20), Out: engine.NewOutput()})
			}
			sim.Run(0)
			total.Add(40 * 20)
		}()
	}
	for range 50 {
		reg.ObserveDeliveryLag(0, 0.001)
	}
	sims.Wait()
	close(stop)
	scraper.Wait()
	t.Logf("%d concurrent gathers", scrapes)
	f := scrape(t, reg)
	gen := f.value(t, "vllm:generation_tokens_total", rank0...) +
		f.value(t, "vllm:generation_tokens_total", "engine", "1")
	if int64(gen) != total.Load() {
		t.Errorf("generation tokens %v, want %d", gen, total.Load())
	}
	if got := f.value(t, "sglang:generation_tokens_total"); int64(got) != total.Load() {
		t.Errorf("sglang generation tokens %v, want %d", got, total.Load())
	}
	if got := f.value(t, "sglang:num_requests_total"); got != 80 {
		t.Errorf("sglang:num_requests_total %v, want 80", got)
	}
}
