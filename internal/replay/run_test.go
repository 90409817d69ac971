package replay

import (
	"io"
	"math"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// sliceSource replays a fixed list of requests.
type sliceSource struct {
	reqs []Request
	i    int
}

func (s *sliceSource) Next() (Request, error) {
	if s.i >= len(s.reqs) {
		return Request{}, io.EOF
	}
	s.i++
	return s.reqs[s.i-1], nil
}

// fixedTimingConfig is vLLM's scheduler with the fixed timing model:
// 20 ms for a pass that computes prompt tokens, plus 10 ms when a token is
// emitted; 16-token blocks.
func fixedTimingConfig() engine.Config {
	cfg := engine.DefaultConfig()
	cfg.BlockSize = 16
	cfg.NumBlocks = 256
	cfg.Timing = engine.TimingConfig{Model: engine.TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	return cfg
}

func seqPrompt(id uint64, n int) []uint32 { return blockTokens(nil, id, n) }

// TestRunThreeRequestsOneWorkerExactTimes checks a situation small enough to
// work out by hand with the fixed timing model:
//
//	A: arrives 0 ms, 32-token prompt, 3 tokens out.
//	   pass 1 [0,30): prefill 20 + decode 10, token 1 at 30.
//	B: arrives 5 ms (during pass 1), 32 tokens whose first block (16) equals A's.
//	   pass 2 [30,60): B's 16 uncached tokens + A's decode: A token 2 and B token 1 at 60.
//	   pass 3 [60,70): decode only: A token 3, B token 2 at 70; both finish.
//	C: arrives 100 ms on an idle worker, 16 tokens, 1 token out: pass [100,130).
func TestRunThreeRequestsOneWorkerExactTimes(t *testing.T) {
	a := append(seqPrompt(1, 16), seqPrompt(2, 16)...)
	b := append(seqPrompt(1, 16), seqPrompt(3, 16)...)
	c := seqPrompt(4, 16)
	src := &sliceSource{reqs: []Request{
		{Index: 0, Arrival: 0, Prompt: a, OutputTokens: 3},
		{Index: 1, Arrival: 5 * time.Millisecond, Prompt: b, OutputTokens: 2},
		{Index: 2, Arrival: 100 * time.Millisecond, Prompt: c, OutputTokens: 1},
	}}
	var rows []RequestRow
	rep, err := Run(src, Options{
		Workers: []WorkerSpec{{Name: "w0", Engine: fixedTimingConfig()}},
		Rows:    func(r *RequestRow) error { rows = append(rows, *r); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []RequestRow{
		{Index: 0, Arrival: 0, Worker: "w0", PromptTokens: 32, OutputTokens: 3, QueueMs: 0, TTFTMs: 30, E2EMs: 70,
			ITLMeanMs: 20, ITLMinMs: 10, ITLMaxMs: 30, FinishReason: "length"},
		{Index: 1, Arrival: 5, Worker: "w0", PromptTokens: 32, CachedTokens: 16, OutputTokens: 2, QueueMs: 25, TTFTMs: 55, E2EMs: 65,
			ITLMeanMs: 10, ITLMinMs: 10, ITLMaxMs: 10, FinishReason: "length"},
		{Index: 2, Arrival: 100, Worker: "w0", PromptTokens: 16, OutputTokens: 1, QueueMs: 0, TTFTMs: 30, E2EMs: 30, FinishReason: "length"},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, rows[i], want[i])
		}
	}
	s := rep.Summary
	checks := []struct {
		name      string
		got, want float64
	}{
		{"completed", float64(s.Completed), 3},
		{"duration_s", s.DurationS, 0.130},
		{"request_throughput", s.RequestThroughput, 3 / 0.130},
		{"output_token_throughput", s.OutputTokenThroughput, 6 / 0.130},
		{"prefix_cache_hit_rate", s.PrefixCacheHitRate, 16.0 / 80},
		{"ttft mean", s.TTFTMs.Mean, (30 + 55 + 30) / 3.0},
		{"ttft p50", s.TTFTMs.P50, 30},
		{"ttft p90", s.TTFTMs.P90, 50}, // sorted 30 30 55: rank 1.8 → 30 + 0.8×25
		{"ttft max", s.TTFTMs.Max, 55},
		{"e2e p50", s.E2EMs.P50, 65},
		{"itl mean", s.ITLMs.Mean, 15}, // requests with ≥ 2 tokens: 20 and 10
		{"itl p50", s.ITLMs.P50, 15},
		{"queue p99", s.QueueMs.P99, 24.5},                  // sorted 0 0 25: rank 1.98
		{"per-user p50", s.OutputThroughputPerUser.P50, 75}, // 1000/20 and 1000/10
		{"preemptions", float64(s.Preemptions), 0},
		{"token gap count", float64(s.InterTokenGapMs.Count), 3}, // A: 30, 10; B: 10
		{"token gap mean", s.InterTokenGapMs.Mean, 50.0 / 3},
		{"token gap max", s.InterTokenGapMs.Max, 30},
	}
	if p50 := s.InterTokenGapMs.P50; math.Abs(p50-10) > 0.005 { // histogram bucket centre
		t.Errorf("token gap p50 = %v, want 10 ± 0.05 %%", p50)
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if w := rep.Workers[0]; w.Routed != 3 || w.Completed != 3 || w.Passes != 4 {
		t.Errorf("worker = %+v, want 3 routed, 3 completed, 4 passes", w)
	}
}
