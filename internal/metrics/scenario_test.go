package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// rank0 are the label pairs of rank 0's vLLM children.
var rank0 = []string{"model_name", "mocker-model", "engine", "0"}

func withRank0(extra ...string) []string { return append(append([]string(nil), rank0...), extra...) }

// TestS1CheckValues drives engine scenario S1 (one completions request with
// a 100-token prompt and 3 output tokens; see the engine's
// TestScenarioS1SingleRequestPolynomial) and asserts the exact values the
// vLLM metrics must show afterwards.
func TestS1CheckValues(t *testing.T) {
	r := newRun(t, testConfig(nil))
	r.submit(0, tokens(1000, 100), []uint32{5, 6, 7})
	if passes := r.sim.Run(0); passes != 3 {
		t.Fatalf("%d passes, want 3", passes)
	}
	f := scrape(t, r.reg)

	// Counters and gauges after S1.
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vllm:prompt_tokens_total", rank0, 100},
		{"vllm:generation_tokens_total", rank0, 3},
		{"vllm:request_success_total", withRank0("finished_reason", "length"), 1},
		{"vllm:prefix_cache_queries_total", rank0, 100},
		{"vllm:prefix_cache_hits_total", rank0, 0},
		{"vllm:num_requests_running", rank0, 0},
		{"vllm:kv_cache_usage_perc", rank0, 0},
		// Consistent extras.
		{"vllm:request_success_total", withRank0("finished_reason", "stop"), 0},
		{"vllm:request_success_total", withRank0("finished_reason", "abort"), 0},
		{"vllm:request_success_total", withRank0("finished_reason", "error"), 0},
		{"vllm:prompt_tokens_cached_total", rank0, 0},
		{"vllm:num_preemptions_total", rank0, 0},
		{"vllm:num_requests_waiting", rank0, 0},
		{"vllm:num_requests_waiting_by_reason", withRank0("reason", "capacity"), 0},
		{"vllm:num_requests_waiting_by_reason", withRank0("reason", "deferred"), 0},
		{"vllm:gpu_cache_usage_perc", rank0, 0},
		{"vllm:gpu_prefix_cache_queries_total", rank0, 100},
		{"vllm:gpu_prefix_cache_hits_total", rank0, 0},
		{"mocker_passes_total", []string{"dp_rank", "0"}, 3},
		{"mocker_requests_rejected_total", []string{"dp_rank", "0"}, 0},
		{"mocker_kv_events_total", []string{"dp_rank", "0", "type", "BlockStored"}, 1},
		{"mocker_kv_events_total", []string{"dp_rank", "0", "type", "BlockRemoved"}, 0},
		{"mocker_kv_events_total", []string{"dp_rank", "0", "type", "AllBlocksCleared"}, 0},
		{"mocker_fpm_messages_total", []string{"dp_rank", "0", "kind", "pass"}, 3},
		{"mocker_fpm_messages_total", []string{"dp_rank", "0", "kind", "heartbeat"}, 0},
	}
	for _, c := range checks {
		if got := f.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := f.value(t, "mocker_pass_seconds_total", "dp_rank", "0"); !approx(got, 0.035263753, 1e-12) {
		t.Errorf("mocker_pass_seconds_total = %.9f", got)
	}

	// Pass durations rounded to the nanosecond: 23.770567 ms, then 5.746593 ms
	// twice (engine scenario S1), so the last token is at 35.263753 ms.
	const ttft, last = 0.023770567, 0.035263753
	hists := []struct {
		name  string
		count uint64
		sum   float64
	}{
		{"vllm:time_to_first_token_seconds", 1, ttft},
		{"vllm:inter_token_latency_seconds", 2, last - ttft},
		{"vllm:time_per_output_token_seconds", 2, last - ttft},
		{"vllm:iteration_tokens_total", 3, 102},
		{"vllm:e2e_request_latency_seconds", 1, last},
		{"vllm:request_queue_time_seconds", 1, 0},
		{"vllm:request_prefill_time_seconds", 1, ttft},
		{"vllm:request_decode_time_seconds", 1, last - ttft},
		{"vllm:request_inference_time_seconds", 1, last},
		{"vllm:request_time_per_output_token_seconds", 1, (last - ttft) / 2},
		{"vllm:request_prompt_tokens", 1, 100},
		{"vllm:request_generation_tokens", 1, 3},
		{"vllm:request_prefill_kv_computed_tokens", 1, 100},
		{"vllm:request_num_preemptions", 1, 0},
		{"vllm:request_params_n", 0, 0},
	}
	for _, h := range hists {
		count, sum := f.hist(t, h.name, rank0...)
		if count != h.count || !approx(sum, h.sum, 1e-9) {
			t.Errorf("%s count %d sum %.9f, want %d %.9f", h.name, count, sum, h.count, h.sum)
		}
	}

	// The FPM gauges hold the last pass's snapshot.
	if len(r.fpm.snaps) != 3 {
		t.Fatalf("%d FPM snapshots, want 3", len(r.fpm.snaps))
	}
	lastSnap := r.fpm.snaps[2]
	want := map[string]float64{
		"mocker_fpm_num_prefill_requests":        0,
		"mocker_fpm_sum_prefill_tokens":          0,
		"mocker_fpm_var_prefill_length":          0,
		"mocker_fpm_sum_prefill_kv_tokens":       0,
		"mocker_fpm_num_decode_requests":         1,
		"mocker_fpm_sum_decode_kv_tokens":        102,
		"mocker_fpm_var_decode_kv_tokens":        0,
		"mocker_fpm_num_queued_prefill":          0,
		"mocker_fpm_sum_queued_prefill_tokens":   0,
		"mocker_fpm_var_queued_prefill_length":   0,
		"mocker_fpm_num_queued_decode":           0,
		"mocker_fpm_sum_queued_decode_kv_tokens": 0,
		"mocker_fpm_var_queued_decode_kv_tokens": 0,
		"mocker_fpm_wall_time_secs":              lastSnap.WallTimeSecs,
		"mocker_fpm_counter_id":                  3,
	}
	for name, w := range want {
		if got := f.value(t, name, "dp_rank", "0"); got != w {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	if got := f.value(t, "mocker_fpm_wall_time_secs", "dp_rank", "0"); !approx(got, 0.005746593, 1e-9) {
		t.Errorf("mocker_fpm_wall_time_secs = %.9f, want 0.005746593", got)
	}
	if s := r.fpm.snaps[0]; s.NumPrefillRequests != 1 || s.SumPrefillTokens != 100 || s.WallTimeSecs != 0.023770567 {
		t.Errorf("pass 1 snapshot %+v", s)
	}
}

// TestS1FPMGaugesPerPass checks the gauges after every pass, not only the last.
func TestS1FPMGaugesPerPass(t *testing.T) {
	r := newRun(t, testConfig(nil))
	r.submit(0, tokens(1000, 100), []uint32{5, 6, 7})
	r.sim.AfterPass = func(pass int) {
		f := scrape(t, r.reg)
		s := r.fpm.snaps[len(r.fpm.snaps)-1]
		checks := map[string]float64{
			"mocker_fpm_num_prefill_requests":  float64(s.NumPrefillRequests),
			"mocker_fpm_sum_prefill_tokens":    float64(s.SumPrefillTokens),
			"mocker_fpm_num_decode_requests":   float64(s.NumDecodeRequests),
			"mocker_fpm_sum_decode_kv_tokens":  float64(s.SumDecodeKVTokens),
			"mocker_fpm_sum_prefill_kv_tokens": float64(s.SumPrefillKVTokens),
			"mocker_fpm_wall_time_secs":        s.WallTimeSecs,
			"mocker_fpm_counter_id":            float64(pass),
		}
		for name, w := range checks {
			if got := f.value(t, name, "dp_rank", "0"); got != w {
				t.Errorf("pass %d: %s = %v, want %v", pass, name, got, w)
			}
		}
		if pass == 2 && s.SumDecodeKVTokens != 101 {
			t.Errorf("pass 2 sum_decode_kv_tokens %d, want 101", s.SumDecodeKVTokens)
		}
	}
	r.sim.Run(0)
}

// TestPreemption runs S6 (bs 4, N 6, two requests of 8 + 8 tokens).
func TestPreemption(t *testing.T) {
	r := newRun(t, testConfig(func(c *config.Config) { c.BlockSize = 4; c.NumGPUBlocks = 6 }))
	r.submit(0, tokens(1, 8), tokens(2000, 8))
	r.submit(0, tokens(101, 8), tokens(3000, 8))
	r.sim.Run(0)
	f := scrape(t, r.reg)
	if got := f.value(t, "vllm:num_preemptions_total", rank0...); got != 1 {
		t.Errorf("num_preemptions_total = %v, want 1", got)
	}
	if count, sum := f.hist(t, "vllm:request_num_preemptions", rank0...); count != 2 || sum != 1 {
		t.Errorf("request_num_preemptions count %d sum %v, want 2 and 1", count, sum)
	}
	if got := f.value(t, "vllm:request_success_total", withRank0("finished_reason", "length")...); got != 2 {
		t.Errorf("request_success_total{length} = %v, want 2", got)
	}
	if got := f.value(t, "vllm:generation_tokens_total", rank0...); got != 16 {
		t.Errorf("generation_tokens_total = %v, want 16", got)
	}
	// Prompt tokens count once per sequence, at its first token.
	if got := f.value(t, "vllm:prompt_tokens_total", rank0...); got != 16 {
		t.Errorf("prompt_tokens_total = %v, want 16", got)
	}
	// Queries: 8 + 8 at the first admissions, then B's re-admission looks up
	// its 13-token context (8 prompt + 5 generated) and hits B0, B1.
	q := f.value(t, "vllm:prefix_cache_queries_total", rank0...)
	h := f.value(t, "vllm:prefix_cache_hits_total", rank0...)
	if q != 29 || h != 8 {
		t.Errorf("prefix cache queries %v hits %v, want 29 and 8", q, h)
	}
	// prompt_tokens_cached counts the first admission only.
	if got := f.value(t, "vllm:prompt_tokens_cached_total", rank0...); got != 0 {
		t.Errorf("prompt_tokens_cached_total = %v, want 0", got)
	}
	if count, _ := f.hist(t, "vllm:inter_token_latency_seconds", rank0...); count != 14 {
		t.Errorf("inter_token_latency count %d, want 14", count)
	}
	for _, name := range []string{"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting"} {
		if got := f.value(t, name, rank0...); got != 0 {
			t.Errorf("%s = %v when idle, want 0", name, got)
		}
	}
	if got := f.value(t, "mocker_kv_events_total", "dp_rank", "0", "type", "BlockRemoved"); got != 2 {
		t.Errorf("BlockRemoved events %v, want 2", got)
	}
}

// TestCancellation: one request aborted while decoding, one before it was
// ever scheduled.
func TestCancellation(t *testing.T) {
	r := newRun(t, testConfig(nil))
	a := r.submit(0, tokens(1000, 100), tokens(5000, 50))
	// Applied when the clock passes 29 ms: after pass 2 (tokens at 23.770567
	// and 29.517160 ms), before pass 3.
	r.sim.CancelAt(ms(29), a.ID)
	b := r.submit(0, tokens(9000, 100), tokens(6000, 5))
	r.sim.CancelAt(0, b.ID) // before the first pass
	usage := map[int]float64{}
	r.sim.BeforePass = func(pass int) {
		usage[pass] = scrape(t, r.reg).value(t, "vllm:kv_cache_usage_perc", rank0...)
	}
	r.sim.Run(0)
	if usage[2] == 0 || usage[3] != 0 {
		t.Errorf("kv_cache_usage_perc before passes: %v; want > 0 before pass 2 and 0 right after the cancellation", usage)
	}
	f := scrape(t, r.reg)
	if got := f.value(t, "vllm:kv_cache_usage_perc", rank0...); got != 0 {
		t.Errorf("kv_cache_usage_perc when idle = %v, want 0", got)
	}
	if got := f.value(t, "vllm:request_success_total", withRank0("finished_reason", "abort")...); got != 2 {
		t.Errorf("request_success_total{abort} = %v, want 2", got)
	}
	if got := f.value(t, "vllm:request_success_total", withRank0("finished_reason", "length")...); got != 0 {
		t.Errorf("request_success_total{length} = %v, want 0", got)
	}
	// Both finished: e2e twice; only A was scheduled and produced tokens.
	for name, want := range map[string]uint64{
		"vllm:e2e_request_latency_seconds":           2,
		"vllm:request_queue_time_seconds":            1,
		"vllm:request_prefill_time_seconds":          1,
		"vllm:request_decode_time_seconds":           1,
		"vllm:request_inference_time_seconds":        1,
		"vllm:request_time_per_output_token_seconds": 1,
		"vllm:time_to_first_token_seconds":           1,
		"vllm:inter_token_latency_seconds":           1,
		"vllm:request_prompt_tokens":                 2,
		"vllm:request_generation_tokens":             2,
	} {
		if count, _ := f.hist(t, name, rank0...); count != want {
			t.Errorf("%s count %d, want %d", name, count, want)
		}
	}
	if _, sum := f.hist(t, "vllm:e2e_request_latency_seconds", rank0...); !approx(sum, 0.029517160, 1e-9) {
		t.Errorf("e2e sum %.9f, want 0.029517160 (A cancelled after pass 2, B at 0)", sum)
	}
	if got := f.value(t, "vllm:generation_tokens_total", rank0...); got != 2 {
		t.Errorf("generation_tokens_total = %v, want 2", got)
	}
	if got := f.value(t, "vllm:prompt_tokens_total", rank0...); got != 100 {
		t.Errorf("prompt_tokens_total = %v, want 100 (B never emitted)", got)
	}
}

// TestSGLangFamilyS1 runs S1 with the sglang family exported (vllm engine).
func TestSGLangFamilyS1(t *testing.T) {
	cfg := testConfig(func(c *config.Config) { c.MetricsFamily = "sglang" })
	r := newRun(t, cfg)
	r.submit(0, tokens(1000, 100), []uint32{5, 6, 7})
	var tput []float64
	r.sim.AfterPass = func(pass int) {
		tput = append(tput, scrape(t, r.reg).value(t, "sglang:gen_throughput", "dp_rank", "0"))
	}
	r.sim.Run(0)
	f := scrape(t, r.reg)
	if _, ok := f["vllm:prompt_tokens_total"]; ok {
		t.Errorf("vllm family exported with metrics_family sglang")
	}
	rk := []string{"model_name", "mocker-model", "dp_rank", "0"}
	m := []string{"model_name", "mocker-model"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sglang:prompt_tokens_total", m, 100},
		{"sglang:generation_tokens_total", m, 3},
		{"sglang:cached_tokens_total", m, 0},
		{"sglang:num_requests_total", m, 1},
		{"sglang:num_aborted_requests_total", m, 0},
		{"sglang:num_running_reqs", rk, 0},
		{"sglang:num_queue_reqs", rk, 0},
		{"sglang:num_used_tokens", rk, 0},
		{"sglang:token_usage", rk, 0},
		{"sglang:max_total_num_tokens", rk, 16384 * 64},
		{"sglang:cache_hit_rate", rk, 0},
		{"sglang:gen_throughput", rk, 0},
		{"sglang:num_retracted_reqs", rk, 0},
	} {
		if got := f.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	for _, h := range []struct {
		name   string
		labels []string
		count  uint64
		sum    float64
	}{
		{"sglang:time_to_first_token_seconds", m, 1, 0.023770567},
		{"sglang:inter_token_latency_seconds", m, 2, 0.011493186},
		{"sglang:e2e_request_latency_seconds", m, 1, 0.035263753},
		{"sglang:queue_time_seconds", rk, 1, 0},
	} {
		count, sum := f.hist(t, h.name, h.labels...)
		if count != h.count || !approx(sum, h.sum, 1e-9) {
			t.Errorf("%s count %d sum %.9f, want %d %.9f", h.name, count, sum, h.count, h.sum)
		}
	}
	// gen_throughput: 1 token / 23.770567 ms after pass 1, 2 / 29.517160 ms
	// after pass 2, 0 once idle after pass 3.
	want := []float64{1 / 0.023770567, 2 / 0.029517160, 0}
	if len(tput) != 3 {
		t.Fatalf("gen_throughput samples %v", tput)
	}
	for i := range want {
		if !approx(tput[i], want[i], 1e-6) {
			t.Errorf("gen_throughput after pass %d = %v, want %v", i+1, tput[i], want[i])
		}
	}
}

// TestSGLangGaugesWhileBusy checks the derived scheduler gauges mid-run.
func TestSGLangGaugesWhileBusy(t *testing.T) {
	cfg := testConfig(func(c *config.Config) { c.MetricsFamily = "both" })
	r := newRun(t, cfg)
	r.submit(0, tokens(1000, 100), tokens(5000, 3))
	r.submit(0, tokens(1000, 100), tokens(6000, 3)) // same prompt: 64 cached tokens
	r.sim.AfterPass = func(pass int) {
		if pass != 1 {
			return
		}
		f := scrape(t, r.reg)
		rk := []string{"dp_rank", "0"}
		// Both admitted in pass 1; B's lookup hits A's first block (64 of
		// its 100 tokens), so the pass's hit rate is 64/200.
		usage := f.value(t, "vllm:kv_cache_usage_perc", rank0...)
		if got := f.value(t, "sglang:token_usage", rk...); got != usage {
			t.Errorf("token_usage %v != kv_cache_usage_perc %v", got, usage)
		}
		if got, want := f.value(t, "sglang:num_used_tokens", rk...), usage*16384*64; !approx(got, want, 0.5) {
			t.Errorf("num_used_tokens %v, want %v", got, want)
		}
		if got, want := f.value(t, "sglang:num_running_reqs", rk...), f.value(t, "vllm:num_requests_running", rank0...); got != want || got != 2 {
			t.Errorf("num_running_reqs %v, vllm running %v, want 2", got, want)
		}
		q := f.value(t, "vllm:prefix_cache_queries_total", rank0...)
		h := f.value(t, "vllm:prefix_cache_hits_total", rank0...)
		if q != 200 || h != 64 {
			t.Errorf("pass 1 prefix cache queries %v hits %v, want 200 and 64", q, h)
		}
		if got := f.value(t, "sglang:cache_hit_rate", rk...); got != 64.0/200 {
			t.Errorf("cache_hit_rate %v, want 0.32", got)
		}
	}
	r.sim.Run(0)
}

// TestHeartbeatAndTee checks heartbeat snapshots and the FPM fan-out.
func TestHeartbeatAndTee(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) { c.DPSize = 2 }), "test")
	a, b := &fpmRecorder{}, &fpmRecorder{}
	if TeeFPM() != nil || TeeFPM(nil, nil) != nil {
		t.Errorf("TeeFPM of no sink is not nil")
	}
	if s := TeeFPM(nil, a); s != engine.FPMSink(a) {
		t.Errorf("TeeFPM of one sink does not return it")
	}
	sink := TeeFPM(reg.FPMSink(1), nil, a, b)
	sink.PublishFPM(engine.ForwardPassSnapshot{Rank: 1, NumPrefillRequests: 4, VarPrefillLength: 6666.5, WallTimeSecs: 0.25, CounterID: 7})
	sink.PublishFPM(engine.ForwardPassSnapshot{Rank: 1, CounterID: 8, Heartbeat: true})
	if len(a.snaps) != 2 || len(b.snaps) != 2 {
		t.Fatalf("tee delivered %d and %d snapshots, want 2 each", len(a.snaps), len(b.snaps))
	}
	f := scrape(t, reg)
	r1 := []string{"dp_rank", "1"}
	for name, want := range map[string]float64{
		"mocker_fpm_num_prefill_requests": 0, // heartbeat resets every field
		"mocker_fpm_var_prefill_length":   0,
		"mocker_fpm_wall_time_secs":       0,
		"mocker_fpm_counter_id":           8,
	} {
		if got := f.value(t, name, r1...); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := f.value(t, "mocker_fpm_messages_total", "dp_rank", "1", "kind", "pass"); got != 1 {
		t.Errorf("pass messages %v", got)
	}
	if got := f.value(t, "mocker_fpm_messages_total", "dp_rank", "1", "kind", "heartbeat"); got != 1 {
		t.Errorf("heartbeat messages %v", got)
	}
	if got := f.value(t, "mocker_fpm_counter_id", "dp_rank", "0"); got != 0 {
		t.Errorf("rank 0 counter_id %v, want 0", got)
	}
}
