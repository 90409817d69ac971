package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// TestSGLangEngineMetricsFromRealState runs the engine's G2 scenario (two
// requests, 40 one-token pages, clip_max_new_tokens 4, fixed timing: a
// retraction in pass 12) with --engine-type sglang and scrapes the sglang:*
// family after every pass through a real HTTP server: the exposition
// parses, every family has its documented type, and the gauges follow the
// scheduler's state.
func TestSGLangEngineMetricsFromRealState(t *testing.T) {
	cfg := testConfig(func(c *config.Config) {
		c.EngineType = engine.EngineSGLang
		c.MetricsFamily = "auto"
		c.BlockSize = 1
		c.NumGPUBlocks = 40
		c.MaxModelLen = 1000
		c.SGLang.ClipMaxNewTokens = 4
		c.TimingModel = engine.TimingFixed
		c.FixedPrefillMs, c.FixedDecodeMs = 20, 10
	})
	r := newRun(t, cfg)
	out := tokens(100, 16)
	r.submit(0, tokens(1000, 10), out)
	r.submit(0, tokens(2000, 10), out)
	rk := []string{"dp_rank", "0"}
	type state struct{ running, queue, used, retracted float64 }
	var got []state
	r.sim.AfterPass = func(pass int) {
		f := scrape(t, r.reg)
		for _, s := range sglangSpecs() {
			checkSpec(t, f, s, 1)
		}
		got = append(got, state{
			f.value(t, "sglang:num_running_reqs", rk...),
			f.value(t, "sglang:num_queue_reqs", rk...),
			f.value(t, "sglang:num_used_tokens", rk...),
			f.value(t, "sglang:num_retracted_reqs", rk...),
		})
		if usage := f.value(t, "sglang:token_usage", rk...); !approx(usage*40, got[len(got)-1].used, 1e-9) {
			t.Errorf("pass %d: token_usage %v for %v used tokens of 40", pass, usage, got[len(got)-1].used)
		}
	}
	r.sim.Run(0)
	// Pass 1: both prompts (20 pages) locked in the tree. Pass 11: 10 + 10
	// decode pages each, the pool full. Pass 12: B retracted (its pages
	// freed, its prompt evicted), A holds 10 + 11. Pass 17: B re-prefills
	// its 21 tokens while A's finished tokens are evictable, not used.
	want := map[int]state{
		1:  {2, 0, 20, 0},
		11: {2, 0, 40, 0},
		12: {1, 1, 21, 1},
		13: {1, 1, 22, 0},
		17: {1, 0, 21, 0},
	}
	for pass, w := range want {
		if got[pass-1] != w {
			t.Errorf("after pass %d: running/queue/used/retracted = %v, want %v", pass, got[pass-1], w)
		}
	}
	f := scrape(t, r.reg)
	m := []string{"model_name", "mocker-model"}
	if v := f.value(t, "sglang:num_requests_total", m...); v != 2 {
		t.Errorf("num_requests_total %v", v)
	}
	if v := f.value(t, "sglang:generation_tokens_total", m...); v != 32 {
		t.Errorf("generation_tokens_total %v", v)
	}
	// Pass 17's prefill looked up 21 tokens and hit none.
	if v := f.value(t, "sglang:cache_hit_rate", rk...); v != 0 {
		t.Errorf("cache_hit_rate %v", v)
	}
}
