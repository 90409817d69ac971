package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/loadgen"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// TestBenchSmoke drives the real server (serve on 127.0.0.1:0, paced by the
// fixed timing model) with internal/loadgen for ~2 s at concurrency 20 and
// checks that the run is clean and its numbers are sane, and that the
// server observed one delivery lag per streamed token.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("load smoke run skipped in -short mode")
	}
	const maxTokens = 20
	cfg := loadConfig(t, map[string]any{"speedup_ratio": 1, "timing_model": "fixed",
		"fixed_prefill_ms": 2, "fixed_decode_ms": 5, "max_num_seqs": 64})
	reg := metrics.New(worker.MetricsOptions(cfg), version)
	url := startWith(t, cfg, serverOptions{ShutdownGrace: 2 * time.Second,
		Engines: engineHooks{Observer: reg.Observer},
		Metrics: reg.Handler(), Requests: reg, DeliveryLag: reg}, nil).url

	lc := loadgen.Defaults()
	lc.URL, lc.Concurrency, lc.Duration, lc.MaxTokens, lc.PromptTokens = url, 20, 2*time.Second, maxTokens, 32
	res, err := loadgen.Run(context.Background(), lc, loadgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("errors = %d: %v", res.Errors, res.ErrorKinds)
	}
	if res.Requests < 20 || res.OutputTokensPerSec <= 0 || res.RequestsPerSecond <= 0 {
		t.Fatalf("implausible run: %d requests, %.1f tok/s, %.1f req/s", res.Requests, res.OutputTokensPerSec, res.RequestsPerSecond)
	}
	if res.MismatchedLengths != 0 || res.OutputTokens != int64(res.Requests*maxTokens) || res.TokenChunks != res.OutputTokens {
		t.Errorf("token counts: %d requests, %d tokens (usage), %d chunks, %d mismatched; want %d per request",
			res.Requests, res.OutputTokens, res.TokenChunks, res.MismatchedLengths, maxTokens)
	}
	for name, d := range map[string]loadgen.Dist{"ttft": res.TTFT, "itl": res.ITL, "e2e": res.E2E} {
		if !(d.P50 > 0 && d.P50 <= d.P90 && d.P90 <= d.P99 && d.P99 <= d.Max) {
			t.Errorf("%s distribution not ordered: %+v", name, d)
		}
	}
	// 20 tokens at 5 ms per decode pass (+2 ms prefill) take ≥ 100 ms.
	if res.E2E.P50 < 100 || res.E2E.Count != res.Requests || res.ITL.Count != res.Requests*(maxTokens-1) {
		t.Errorf("e2e %+v, itl count %d (requests %d)", res.E2E, res.ITL.Count, res.Requests)
	}

	// One delivery-lag observation per streamed token.
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := -1.0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mocker_token_delivery_lag_seconds_count{") {
			got, _ = strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		}
	}
	if int64(got) != res.OutputTokens {
		t.Errorf("mocker_token_delivery_lag_seconds_count = %v, want %d (one per token)", got, res.OutputTokens)
	}
}
