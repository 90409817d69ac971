package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// e2eTally accumulates what the HTTP responses report.
type e2eTally struct {
	httpRequests   int            // HTTP requests (observations of per-request histograms)
	sequences      int            // engine sequences (Σ n)
	sumN           int            // Σ n
	promptPerSeq   int64          // Σ usage.prompt_tokens × n (see TestE2E_MetricsOverHTTP)
	completion     int64          // Σ usage.completion_tokens (= Σ g over sequences)
	cached         int64          // Σ cached_tokens (prefix-cache hits of first admissions)
	finish         map[string]int // finish_reason per choice
	seqWithTwoPlus int            // sequences with g ≥ 2 (TPOT observations)
	sumMaxTokens   int64          // Σ effective max_tokens (requests that set one)
	cachedHitSeen  bool
}

func (tl *e2eTally) add(n int, u openai.CompletionUsage, reasons []string, gPerChoice []int) {
	tl.httpRequests++
	tl.sequences += n
	tl.sumN += n
	tl.promptPerSeq += u.PromptTokens * int64(n)
	tl.completion += u.CompletionTokens
	tl.cached += u.PromptTokensDetails.CachedTokens
	if u.PromptTokensDetails.CachedTokens > 0 {
		tl.cachedHitSeen = true
	}
	for _, r := range reasons {
		tl.finish[r]++
	}
	for _, g := range gPerChoice {
		if g >= 2 {
			tl.seqWithTwoPlus++
		}
	}
}

// TestE2E_MetricsOverHTTP drives the real server (productionOptions wiring,
// so /metrics is the production registry) with a known mixed workload
// through the openai-go SDK and checks the exposition against
// docs/metrics.md.
//
// Counting rules used for the expected values (docs/metrics.md,
// docs/http-api.md):
//   - Every choice of an n > 1 request is its own engine sequence.
//   - usage.prompt_tokens reports the prompt p once per HTTP request (vLLM
//     style), while vllm:prompt_tokens_total adds p per engine sequence when
//     it emits its first token. Expected prompt_tokens_total is therefore
//     Σ usage.prompt_tokens × n.
//   - usage.completion_tokens is Σ g over the request's choices, and the
//     engine adds 1 per emitted token, so generation_tokens_total is
//     Σ usage.completion_tokens; inter-token-latency observations are
//     Σ (g − 1) = Σ completion_tokens − #sequences.
//   - cached_tokens reports choice 0's first-admission prefix hits only. The
//     n = 2 requests therefore use prompts shorter than one block (p < 16),
//     which can never hit the prefix cache, so Σ cached_tokens over all
//     responses is exactly the engine's Σ hits over all sequences. Nothing
//     is preempted (large cache), so every sequence is admitted once.
func TestE2E_MetricsOverHTTP(t *testing.T) {
	cfg := loadConfig(t, map[string]any{
		"block_size": 16, "dp_size": 2, "served_model_name": []string{"e2e-model", "alias"},
		"enable_prompt_tokens_details": true, "log_level": "error", "seed": 7,
	})
	srv := e2eStartProduction(t, cfg)
	const model = "e2e-model"
	c := openai.NewClient(option.WithBaseURL(srv.url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(srv.client), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rank := func(r int) option.RequestOption { return option.WithHeader("X-data-parallel-rank", fmt.Sprint(r)) }

	// Before any request: fixed-label counters already exist at 0.
	pre := srv.e2eScrape(t)
	for _, reason := range []string{"stop", "length", "abort", "error"} {
		for _, e := range []string{"0", "1"} {
			if v := pre.value("vllm:request_success_total", map[string]string{"finished_reason": reason, "engine": e}); v != 0 {
				t.Errorf("before requests: request_success_total{%s,engine=%s} = %v, want 0", reason, e, v)
			}
		}
	}

	tl := &e2eTally{finish: map[string]int{}}
	prefix := make([]int64, 100) // 6¼ blocks of 16 shared by the prefix group
	for i := range prefix {
		prefix[i] = int64(3000 + 7*i)
	}
	withSuffix := func(k int) []int64 {
		p := slices.Clone(prefix)
		for j := range 8 {
			p = append(p, int64(5000+100*k+j))
		}
		return p
	}

	// Group A: completions sharing the 100-token prefix, n = 1, rank 0,
	// sequential so later ones hit the cache; alternate streaming.
	for k := range 4 {
		params := openai.CompletionNewParams{Model: model, MaxTokens: openai.Int(int64(3 + k)),
			Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: withSuffix(k)}}
		tl.sumMaxTokens += int64(3 + k)
		if k%2 == 0 {
			resp, err := c.Completions.New(ctx, params, rank(0))
			if err != nil {
				t.Fatal(err)
			}
			tl.add(1, resp.Usage, []string{string(resp.Choices[0].FinishReason)}, []int{3 + k})
		} else {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			u, reasons, gs := e2eStreamCompletion(t, c.Completions.NewStreaming(ctx, params, rank(0)), 1)
			tl.add(1, u, reasons, gs)
		}
	}

	// Group B: chat sharing a long system prompt, no max_tokens (natural
	// end: finish "stop"), n = 1, rank 1, streamed and not.
	system := strings.Repeat("You are a careful assistant who answers in short sentences. ", 8)
	for k := range 3 {
		params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(system), openai.UserMessage(fmt.Sprintf("Question number %d?", k))}}
		if k != 1 {
			resp, err := c.Chat.Completions.New(ctx, params, rank(1))
			if err != nil {
				t.Fatal(err)
			}
			tl.add(1, resp.Usage, []string{string(resp.Choices[0].FinishReason)}, nil)
			tl.seqWithTwoPlus += e2eBoolInt(resp.Usage.CompletionTokens >= 2)
		} else {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			u, reasons := e2eStreamChat(t, c.Chat.Completions.NewStreaming(ctx, params, rank(1)), 1)
			tl.add(1, u, reasons, nil)
			tl.seqWithTwoPlus += e2eBoolInt(u.CompletionTokens >= 2)
		}
	}

	// Group C: n = 2 with prompts shorter than a block (no cache hits
	// possible), round-robin ranks, streamed and not; max_tokens set, so
	// every choice generates exactly max_tokens (finish "length").
	{
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, N: openai.Int(2),
			MaxTokens: openai.Int(4), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")}})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, ch := range resp.Choices {
			reasons = append(reasons, string(ch.FinishReason))
		}
		e2eRequireShortPrompt(t, resp.Usage)
		tl.add(2, resp.Usage, reasons, []int{4, 4})
		tl.sumMaxTokens += 4

		u, reasons := e2eStreamChat(t, c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
			N: openai.Int(2), MaxCompletionTokens: openai.Int(5),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")}}), 2)
		e2eRequireShortPrompt(t, u)
		tl.add(2, u, reasons, []int{5, 5})
		tl.sumMaxTokens += 5

		cu, creasons, gs := e2eStreamCompletion(t, c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: model,
			N: openai.Int(2), MaxTokens: openai.Int(3),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			Prompt:        openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{11, 12, 13, 14, 15}}}), 2)
		e2eRequireShortPrompt(t, cu)
		tl.add(2, cu, creasons, gs)
		tl.sumMaxTokens += 3

		resp2, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: model, N: openai.Int(2),
			MaxTokens: openai.Int(2), Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{21, 22, 23}}})
		if err != nil {
			t.Fatal(err)
		}
		reasons = nil
		for _, ch := range resp2.Choices {
			reasons = append(reasons, string(ch.FinishReason))
		}
		e2eRequireShortPrompt(t, resp2.Usage)
		tl.add(2, resp2.Usage, reasons, []int{2, 2})
		tl.sumMaxTokens += 2
	}

	if !tl.cachedHitSeen {
		t.Errorf("workload produced no prefix-cache hit (cached_tokens all 0); the hit checks are vacuous")
	}
	if tl.finish["stop"] == 0 || tl.finish["length"] == 0 {
		t.Errorf("finish reasons %v: want both stop and length", tl.finish)
	}

	// The responses may reach the client before the engine's finish
	// observations are recorded: wait (bounded) until the engine side has
	// caught up and both ranks are idle, then assert on that scrape.
	var s *e2eExposition
	testutil.WaitUntil(t, 5*time.Second, func() string {
		s = srv.e2eScrape(t)
		ttft, _ := s.hist("vllm:time_to_first_token_seconds", nil)
		e2e, _ := s.hist("vllm:e2e_request_latency_seconds", nil)
		running := s.value("vllm:num_requests_running", nil)
		waiting := s.value("vllm:num_requests_waiting", nil)
		usage := s.value("vllm:kv_cache_usage_perc", nil)
		// The per-HTTP-request histograms are observed when a handler
		// returns, which may be after its client has read the response.
		perRequest, _ := s.hist("vllm:request_max_num_generation_tokens", nil)
		if int(ttft) != tl.sequences || int(e2e) != tl.sequences || running != 0 || waiting != 0 || usage != 0 {
			return fmt.Sprintf("ttft count %d e2e count %d (want %d), running %v waiting %v kv usage %v (want 0)",
				ttft, e2e, tl.sequences, running, waiting, usage)
		}
		if int(perRequest) != tl.httpRequests {
			return fmt.Sprintf("per-request histogram count %d, want %d", perRequest, tl.httpRequests)
		}
		return ""
	})

	t.Logf("workload: %d HTTP requests, %d sequences, prompt tokens per sequence %d, completion %d, cached %d, finish %v",
		tl.httpRequests, tl.sequences, tl.promptPerSeq, tl.completion, tl.cached, tl.finish)
	e2eCheckCatalog(t, s, model)

	// Counters vs. the responses.
	eq := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got := s.value(name, labels); got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
	}
	eq("vllm:prompt_tokens_total", nil, float64(tl.promptPerSeq))
	eq("vllm:generation_tokens_total", nil, float64(tl.completion))
	eq("vllm:prefix_cache_queries_total", nil, float64(tl.promptPerSeq))
	eq("vllm:gpu_prefix_cache_queries_total", nil, float64(tl.promptPerSeq))
	eq("vllm:prefix_cache_hits_total", nil, float64(tl.cached))
	eq("vllm:gpu_prefix_cache_hits_total", nil, float64(tl.cached))
	eq("vllm:prompt_tokens_cached_total", nil, float64(tl.cached))
	eq("vllm:num_preemptions_total", nil, 0)
	for _, reason := range []string{"stop", "length", "abort", "error"} {
		eq("vllm:request_success_total", map[string]string{"finished_reason": reason}, float64(tl.finish[reason]))
	}
	eq("vllm:num_requests_running", nil, 0)
	eq("vllm:kv_cache_usage_perc", nil, 0)
	eq("vllm:gpu_cache_usage_perc", nil, 0)
	eq("mocker_requests_rejected_total", nil, 0)

	// Histogram counts (and exact sums where the sum is a token count).
	hc := func(name string, wantCount int, wantSum float64) {
		t.Helper()
		cnt, sum := s.hist(name, nil)
		if wantCount >= 0 && int(cnt) != wantCount {
			t.Errorf("%s_count = %d, want %d", name, cnt, wantCount)
		}
		if !math.IsNaN(wantSum) && sum != wantSum {
			t.Errorf("%s_sum = %v, want %v", name, sum, wantSum)
		}
	}
	nan := math.NaN()
	itl := int(tl.completion) - tl.sequences
	hc("vllm:time_to_first_token_seconds", tl.sequences, nan)
	hc("vllm:e2e_request_latency_seconds", tl.sequences, nan)
	hc("vllm:request_queue_time_seconds", tl.sequences, nan)
	hc("vllm:request_prefill_time_seconds", tl.sequences, nan)
	hc("vllm:request_decode_time_seconds", tl.sequences, nan)
	hc("vllm:request_inference_time_seconds", tl.sequences, nan)
	hc("vllm:inter_token_latency_seconds", itl, nan)
	hc("vllm:time_per_output_token_seconds", itl, nan)
	hc("vllm:request_time_per_output_token_seconds", tl.seqWithTwoPlus, nan)
	hc("vllm:request_prompt_tokens", tl.sequences, float64(tl.promptPerSeq))
	hc("vllm:request_generation_tokens", tl.sequences, float64(tl.completion))
	hc("vllm:request_prefill_kv_computed_tokens", tl.sequences, float64(tl.promptPerSeq-tl.cached))
	hc("vllm:request_num_preemptions", tl.sequences, 0)
	hc("vllm:request_params_n", tl.httpRequests, float64(tl.sumN))
	hc("vllm:request_params_max_tokens", tl.httpRequests, nan)
	hc("vllm:request_max_num_generation_tokens", tl.httpRequests, nan)
	// Every pass computes the uncached prompt tokens it admits plus one
	// token per decoding sequence: Σ(p − hits) + Σ(g − 1).
	// (Its count depends on batching: only the sum is exact.)
	hc("vllm:iteration_tokens_total", -1, float64(tl.promptPerSeq-tl.cached)+float64(itl))
	if cnt, _ := s.hist("vllm:iteration_tokens_total", nil); cnt == 0 {
		t.Errorf("vllm:iteration_tokens_total_count = 0")
	}
	if v := s.value("mocker_passes_total", nil); !(v > 0) {
		t.Errorf("mocker_passes_total = %v", v)
	}

	e2eLint(t, s.raw)
}

func e2eBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func e2eRequireShortPrompt(t *testing.T, u openai.CompletionUsage) {
	t.Helper()
	if u.PromptTokens >= 16 {
		t.Fatalf("n=2 prompt has %d tokens; must be < block size so it cannot hit the cache", u.PromptTokens)
	}
}

// e2eStreamChat reads a chat stream with n choices and returns its usage
// chunk and the finish reason of every choice.
func e2eStreamChat(t *testing.T, st interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
	Close() error
}, n int) (openai.CompletionUsage, []string) {
	t.Helper()
	defer st.Close()
	reasons := make([]string, n)
	var usage openai.CompletionUsage
	var gotUsage bool
	for st.Next() {
		ch := st.Current()
		for _, c := range ch.Choices {
			if c.FinishReason != "" {
				reasons[c.Index] = c.FinishReason
			}
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
			usage, gotUsage = ch.Usage, true
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !gotUsage || slices.Contains(reasons, "") {
		t.Fatalf("chat stream: usage %v, finish reasons %q", gotUsage, reasons)
	}
	return usage, reasons
}

// e2eStreamCompletion reads a completions stream with n choices and returns
// its usage chunk, the finish reasons and the number of text chunks per
// choice (one per generated token for these prompts).
func e2eStreamCompletion(t *testing.T, st interface {
	Next() bool
	Current() openai.Completion
	Err() error
	Close() error
}, n int) (openai.CompletionUsage, []string, []int) {
	t.Helper()
	defer st.Close()
	reasons := make([]string, n)
	tokens := make([]int, n)
	var usage openai.CompletionUsage
	var gotUsage bool
	for st.Next() {
		ch := st.Current()
		for _, c := range ch.Choices {
			tokens[c.Index]++
			if c.FinishReason != "" {
				reasons[c.Index] = string(c.FinishReason)
			}
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
			usage, gotUsage = ch.Usage, true
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !gotUsage || slices.Contains(reasons, "") {
		t.Fatalf("completion stream: usage %v, finish reasons %q", gotUsage, reasons)
	}
	return usage, reasons, tokens
}

type e2eFamSpec struct {
	typ    dto.MetricType
	labels string // sorted label names
	extra  map[string][]string
}

// e2eCheckCatalog asserts every metric of the vLLM family (with the
// deprecated names, the default) and every mocker_* metric exists with its type and label set,
// for both DP ranks.
func e2eCheckCatalog(t *testing.T, s *e2eExposition, model string) {
	t.Helper()
	C, G, H := dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM
	vl := "engine,model_name"
	vllm := map[string]e2eFamSpec{
		"vllm:num_requests_running":                  {G, vl, nil},
		"vllm:num_requests_waiting":                  {G, vl, nil},
		"vllm:num_requests_waiting_by_reason":        {G, "engine,model_name,reason", map[string][]string{"reason": {"capacity", "deferred"}}},
		"vllm:kv_cache_usage_perc":                   {G, vl, nil},
		"vllm:gpu_cache_usage_perc":                  {G, vl, nil},
		"vllm:num_preemptions_total":                 {C, vl, nil},
		"vllm:prompt_tokens_total":                   {C, vl, nil},
		"vllm:prompt_tokens_cached_total":            {C, vl, nil},
		"vllm:generation_tokens_total":               {C, vl, nil},
		"vllm:prefix_cache_queries_total":            {C, vl, nil},
		"vllm:prefix_cache_hits_total":               {C, vl, nil},
		"vllm:gpu_prefix_cache_queries_total":        {C, vl, nil},
		"vllm:gpu_prefix_cache_hits_total":           {C, vl, nil},
		"vllm:request_success_total":                 {C, "engine,finished_reason,model_name", map[string][]string{"finished_reason": {"stop", "length", "abort", "error"}}},
		"vllm:time_to_first_token_seconds":           {H, vl, nil},
		"vllm:inter_token_latency_seconds":           {H, vl, nil},
		"vllm:time_per_output_token_seconds":         {H, vl, nil},
		"vllm:request_time_per_output_token_seconds": {H, vl, nil},
		"vllm:e2e_request_latency_seconds":           {H, vl, nil},
		"vllm:request_queue_time_seconds":            {H, vl, nil},
		"vllm:request_prefill_time_seconds":          {H, vl, nil},
		"vllm:request_decode_time_seconds":           {H, vl, nil},
		"vllm:request_inference_time_seconds":        {H, vl, nil},
		"vllm:iteration_tokens_total":                {H, vl, nil},
		"vllm:request_prompt_tokens":                 {H, vl, nil},
		"vllm:request_generation_tokens":             {H, vl, nil},
		"vllm:request_prefill_kv_computed_tokens":    {H, vl, nil},
		"vllm:request_num_preemptions":               {H, vl, nil},
		"vllm:request_params_n":                      {H, vl, nil},
		"vllm:request_params_max_tokens":             {H, vl, nil},
		"vllm:request_max_num_generation_tokens":     {H, vl, nil},
	}
	engines := []string{"0", "1"}
	for name, spec := range vllm {
		e2eCheckFamily(t, s, name, spec, "engine", engines, map[string]string{"model_name": model})
	}
	// vllm:cache_config_info: no model_name.
	cci := s.families["vllm:cache_config_info"]
	if cci == nil || cci.GetType() != G {
		t.Errorf("vllm:cache_config_info missing or not a gauge")
	} else {
		want := "block_size,cache_dtype,enable_prefix_caching,engine,gpu_memory_utilization,kv_cache_max_concurrency,kv_cache_size_tokens,num_gpu_blocks,num_gpu_blocks_override,prefix_caching_hash_algo"
		var seen []string
		for _, m := range cci.GetMetric() {
			if e2eLabelNames(m) != want {
				t.Errorf("vllm:cache_config_info labels = %s, want %s", e2eLabelNames(m), want)
			}
			lm := e2eLabelMap(m)
			seen = append(seen, lm["engine"])
			if lm["block_size"] != "16" || m.GetGauge().GetValue() != 1 {
				t.Errorf("vllm:cache_config_info %v = %v", lm, m.GetGauge().GetValue())
			}
		}
		slices.Sort(seen)
		if !slices.Equal(seen, engines) {
			t.Errorf("vllm:cache_config_info engines = %v", seen)
		}
	}
	// No SGLang family for the vllm engine type (metrics_family auto).
	for name := range s.families {
		if strings.HasPrefix(name, "sglang:") {
			t.Errorf("unexpected SGLang metric %s", name)
		}
		if strings.HasSuffix(name, "_created") {
			t.Errorf("unexpected _created metric %s", name)
		}
	}

	mocker := map[string]e2eFamSpec{
		"mocker_passes_total":                   {C, "dp_rank", nil},
		"mocker_pass_seconds_total":             {C, "dp_rank", nil},
		"mocker_requests_rejected_total":        {C, "dp_rank", nil},
		"mocker_kv_events_total":                {C, "dp_rank,type", map[string][]string{"type": {"BlockStored", "BlockRemoved", "AllBlocksCleared"}}},
		"mocker_kv_event_batches_total":         {C, "dp_rank", nil},
		"mocker_kv_event_batches_dropped_total": {C, "dp_rank", nil},
		"mocker_fpm_messages_total":             {C, "dp_rank,kind", map[string][]string{"kind": {"pass", "heartbeat"}}},
	}
	for _, f := range e2eFPMFields {
		mocker["mocker_fpm_"+f] = e2eFamSpec{G, "dp_rank", nil}
	}
	for name, spec := range mocker {
		e2eCheckFamily(t, s, name, spec, "dp_rank", engines, nil)
	}
	info := s.families["mocker_info"]
	if info == nil || info.GetType() != G || len(info.GetMetric()) != 1 {
		t.Errorf("mocker_info missing, not a gauge or not one series: %v", info)
	} else {
		m := info.GetMetric()[0]
		lm := e2eLabelMap(m)
		if e2eLabelNames(m) != "engine_type,timing_model,version,worker_type" || m.GetGauge().GetValue() != 1 ||
			lm["engine_type"] != "vllm" || lm["worker_type"] == "" || lm["timing_model"] != "polynomial" {
			t.Errorf("mocker_info = %v %v", lm, m.GetGauge().GetValue())
		}
	}
	for _, pfx := range []string{"go_", "process_"} {
		found := false
		for name := range s.families {
			found = found || strings.HasPrefix(name, pfx)
		}
		if !found {
			t.Errorf("no %s* collector metrics", pfx)
		}
	}
}

// e2eCheckFamily asserts type, label names, and one series per rank (times
// each combination of the fixed extra label values).
func e2eCheckFamily(t *testing.T, s *e2eExposition, name string, spec e2eFamSpec, rankLabel string, ranks []string, fixed map[string]string) {
	t.Helper()
	f := s.families[name]
	if f == nil {
		t.Errorf("metric %s missing", name)
		return
	}
	if f.GetType() != spec.typ {
		t.Errorf("%s type = %v, want %v", name, f.GetType(), spec.typ)
	}
	seen := map[string]int{}
	for _, m := range f.GetMetric() {
		if e2eLabelNames(m) != spec.labels {
			t.Errorf("%s labels = {%s}, want {%s}", name, e2eLabelNames(m), spec.labels)
			continue
		}
		lm := e2eLabelMap(m)
		for k, v := range fixed {
			if lm[k] != v {
				t.Errorf("%s %s = %q, want %q", name, k, lm[k], v)
			}
		}
		key := lm[rankLabel]
		for _, k := range slices.Sorted(maps.Keys(spec.extra)) {
			if !slices.Contains(spec.extra[k], lm[k]) {
				t.Errorf("%s %s = %q, want one of %v", name, k, lm[k], spec.extra[k])
			}
			key += "/" + lm[k]
		}
		seen[key]++
	}
	want := len(ranks)
	for _, vals := range spec.extra {
		want *= len(vals)
	}
	if len(seen) != want || len(f.GetMetric()) != want {
		t.Errorf("%s: %d series (%d distinct), want %d: %v", name, len(f.GetMetric()), len(seen), want, seen)
	}
	for _, r := range ranks {
		found := false
		for k := range seen {
			found = found || k == r || strings.HasPrefix(k, r+"/")
		}
		if !found {
			t.Errorf("%s: no series for %s=%s", name, rankLabel, r)
		}
	}
}

// e2eFPMFields are the FPM snapshot fields (docs/metrics.md).
var e2eFPMFields = []string{
	"num_prefill_requests", "sum_prefill_tokens", "var_prefill_length", "sum_prefill_kv_tokens",
	"num_decode_requests", "sum_decode_kv_tokens", "var_decode_kv_tokens",
	"num_queued_prefill", "sum_queued_prefill_tokens", "var_queued_prefill_length",
	"num_queued_decode", "sum_queued_decode_kv_tokens", "var_queued_decode_kv_tokens",
	"wall_time_secs", "counter_id",
}

// e2eLint runs promlint over the live exposition. Allowed: the ':'
// in vLLM names, and "_total" on vllm:iteration_tokens_total (vLLM's real
// histogram name). Anything else fails.
func e2eLint(t *testing.T, raw []byte) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(raw)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	colons := 0
	for _, p := range problems {
		switch {
		case p.Text == "metric names should not contain ':'":
			colons++
		case p.Metric == "vllm:iteration_tokens_total" && p.Text == `non-counter metrics should not have "_total" suffix`:
		default:
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	if colons == 0 {
		t.Errorf("promlint reported no ':' names: did it see the vllm:* metrics?")
	}
}
