package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/testutil"
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
	if got := exp.value("sglang:max_total_num_tokens", map[string]string{"dp_rank": "0"}); got != 262144 {
		t.Errorf("sglang:max_total_num_tokens = %v, want 262144 pages of 1 token (vllm's default pool in tokens)", got)
	}
}

// TestE2E_SGLangKVEventsOverZMQ subscribes to a live sglang server's KV
// events and checks that a prompt's pages are announced one BlockStored per
// page (page size 1), each chained to the page before it, with the hashes a
// consumer recomputes from the token ids (kv.RadixPageHashes), sent as
// signed integers.
func TestE2E_SGLangKVEventsOverZMQ(t *testing.T) {
	var port int
	var srv *running
	testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
		port = bases[0]
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
			"engine_type": "sglang", "max_model_len": 8192, "log_level": "error", "zmq_kv_events_port": port,
		}))
		return err
	})
	sub := testutil.NewZMQSocket(t, nil, zmq4.SUB, fmt.Sprintf("tcp://127.0.0.1:%d", port), false,
		func(s *zmq4.Socket) error { return s.SetSubscribe("") })
	generate := func(ids []int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 2}})
		resp, err := srv.client.Post(srv.url+"/generate", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/generate = %d", resp.StatusCode)
		}
	}
	ids := func(base, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = base + i
		}
		return out
	}
	// Probe until the SUB is joined (slow joiner), then drain.
	deadline := time.Now().Add(5 * time.Second)
	for k := 0; sub.Recv(150*time.Millisecond) == nil; k++ {
		if time.Now().After(deadline) {
			t.Fatal("no KV event within 5 s of probing")
		}
		generate(ids(50_000+100*k, 4))
	}
	for sub.Recv(100*time.Millisecond) != nil {
	}

	prompt := ids(1000, 20)
	generate(prompt)
	tokens := make([]uint32, len(prompt))
	for i, v := range prompt {
		tokens[i] = uint32(v)
	}
	want := kv.RadixPageHashes(tokens, 1)
	type stored struct {
		hash, parent int64
		hasParent    bool
	}
	var got []stored
	for len(got) < len(want) {
		frames := sub.Recv(2 * time.Second)
		if frames == nil {
			t.Fatalf("got %d of %d BlockStored events", len(got), len(want))
		}
		dec := msgpack.NewDecoder(bytes.NewReader(frames[2]))
		dec.UseLooseInterfaceDecoding(true)
		v, err := dec.DecodeInterfaceLoose()
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range v.([]any)[1].([]any) {
			ev := raw.(map[string]any)
			if ev["type"] != "BlockStored" {
				continue
			}
			hs := ev["block_hashes"].([]any)
			if len(hs) != 1 || ev["block_size"] != int64(1) {
				t.Fatalf("BlockStored %v: want one hash per 1-token page", ev)
			}
			s := stored{hash: asInt64(t, hs[0])}
			if p := ev["parent_block_hash"]; p != nil {
				s.parent, s.hasParent = asInt64(t, p), true
			}
			got = append(got, s)
		}
	}
	for i, h := range want {
		if got[i].hash != int64(h) || got[i].hasParent != (i > 0) || (i > 0 && got[i].parent != int64(want[i-1])) {
			t.Errorf("page %d: %+v, want hash %d after %d", i, got[i], int64(h), int64(want[max(i-1, 0)]))
		}
	}
}

// asInt64 reads a msgpack integer: SGLang's hashes are signed, and the
// non-negative ones use msgpack's unsigned forms (the smallest encoding).
func asInt64(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		if x > 1<<63-1 {
			t.Fatalf("hash %d does not fit a signed 64-bit integer", x)
		}
		return int64(x)
	}
	t.Fatalf("hash %#v is not an integer", v)
	return 0
}
