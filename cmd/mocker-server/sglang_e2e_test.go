package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestE2E_SGLangMode serves --engine-type sglang with the production wiring
// and checks, over real HTTP, that /generate answers, that /metrics parses
// with the Prometheus text parser, carries the sglang:* families with
// their documented types and no vllm:* family, and that the counters saw
// the request.
func TestE2E_SGLangMode(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"engine_type": "sglang", "max_model_len": 8192, "log_level": "error",
		"sglang": map[string]any{"schedule_policy": "lpm"}})
	srv := e2eStartProduction(t, cfg)
	resp, err := srv.client.Post(srv.url+"/generate", "application/json",
		strings.NewReader(`{"text":"hello sglang","sampling_params":{"max_new_tokens":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		OutputIDs []uint32 `json:"output_ids"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.OutputIDs) != 5 {
		t.Fatalf("/generate = %d %s", resp.StatusCode, body)
	}
	exp := srv.e2eScrape(t)
	want := map[string]dto.MetricType{
		"sglang:num_running_reqs":            dto.MetricType_GAUGE,
		"sglang:num_queue_reqs":              dto.MetricType_GAUGE,
		"sglang:num_used_tokens":             dto.MetricType_GAUGE,
		"sglang:token_usage":                 dto.MetricType_GAUGE,
		"sglang:max_total_num_tokens":        dto.MetricType_GAUGE,
		"sglang:cache_hit_rate":              dto.MetricType_GAUGE,
		"sglang:gen_throughput":              dto.MetricType_GAUGE,
		"sglang:num_retracted_reqs":          dto.MetricType_GAUGE,
		"sglang:prompt_tokens_total":         dto.MetricType_COUNTER,
		"sglang:generation_tokens_total":     dto.MetricType_COUNTER,
		"sglang:cached_tokens_total":         dto.MetricType_COUNTER,
		"sglang:num_requests_total":          dto.MetricType_COUNTER,
		"sglang:num_aborted_requests_total":  dto.MetricType_COUNTER,
		"sglang:time_to_first_token_seconds": dto.MetricType_HISTOGRAM,
		"sglang:inter_token_latency_seconds": dto.MetricType_HISTOGRAM,
		"sglang:e2e_request_latency_seconds": dto.MetricType_HISTOGRAM,
		"sglang:queue_time_seconds":          dto.MetricType_HISTOGRAM,
	}
	for name, typ := range want {
		f, ok := exp.families[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
	}
	for name := range exp.families {
		if strings.HasPrefix(name, "vllm:") {
			t.Errorf("vllm family %s exported in sglang mode", name)
		}
	}
	if got := exp.value("sglang:generation_tokens_total", nil); got != 5 {
		t.Errorf("sglang:generation_tokens_total = %v, want 5", got)
	}
	if got := exp.value("sglang:max_total_num_tokens", map[string]string{"dp_rank": "0"}); got != 16384 {
		t.Errorf("sglang:max_total_num_tokens = %v, want 16384 pages of 1 token", got)
	}
}
