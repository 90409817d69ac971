package metrics

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// S25 (internal/engine/speculative_test.go) through the configuration and
// the exposition: 5 drafts, 15 draft tokens, 8 accepted, per position
// [5, 3, 0].
func TestS25SpecDecodeCounters(t *testing.T) {
	per := []float64{0.9, 0.6, 0.3}
	cost := 0.1
	cfg := testConfig(func(c *config.Config) {
		c.BlockSize = 16
		c.Seed = 42
		c.TimingModel = engine.TimingFixed
		c.SpeculativeConfig = &config.SpeculativeConfig{Method: "eagle", NumSpeculativeTokens: 3,
			AcceptanceRatePerPosition: per, DraftCostRatio: &cost}
	})
	r := newRun(t, cfg)
	r.submit(0, tokens(1000, 100), tokens(1, 12))
	if passes := r.sim.Run(0); passes != 6 {
		t.Fatalf("%d passes, want 6", passes)
	}
	f := scrape(t, r.reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vllm:spec_decode_num_drafts_total", rank0, 5},
		{"vllm:spec_decode_num_draft_tokens_total", rank0, 15},
		{"vllm:spec_decode_num_accepted_tokens_total", rank0, 8},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", withRank0("position", "0"), 5},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", withRank0("position", "1"), 3},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", withRank0("position", "2"), 0},
		{"vllm:generation_tokens_total", rank0, 12},
		// The last pass's FPM figures: one draft of 3, 2 accepted (step 11).
		{"mocker_fpm_spec_num_drafts", []string{"dp_rank", "0"}, 1},
		{"mocker_fpm_spec_num_draft_tokens", []string{"dp_rank", "0"}, 3},
		{"mocker_fpm_spec_num_accepted_tokens", []string{"dp_rank", "0"}, 2},
	} {
		if got := f.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Six passes, one inter-token gap per decode pass: 5.
	if n, _ := f.hist(t, "vllm:inter_token_latency_seconds", rank0...); n != 5 {
		t.Errorf("ITL observations %d, want 5", n)
	}
	if _, ok := f["mocker_kv_tier_blocks"]; ok {
		t.Errorf("tier gauges exported without offloading")
	}
}

// S26 through the configuration: --kv-offloading-size of 20 blocks of
// 2 MiB (kv_bytes_per_token 131072 × block_size 16) and a CPU bandwidth
// of 4.194304 GB/s (0.5 ms per block).
func TestS26TierMetrics(t *testing.T) {
	cfg := testConfig(func(c *config.Config) {
		c.BlockSize = 16
		c.NumGPUBlocks = 10
		c.TimingModel = engine.TimingFixed
		c.KVOffloadingSize = 20 * 2.0 / 1024 // GiB
		c.OffloadBandwidth = &config.OffloadBandwidth{CPU: 4.194304, Disk: 3}
	})
	r := newRun(t, cfg)
	r.submit(0, tokens(1000, 100), []uint32{1, 2})
	r.submit(100e6, tokens(5000, 150), []uint32{3})
	again := r.submit(200e6, tokens(1000, 100), []uint32{4})
	r.sim.Run(0)
	items := again.Out.Drain(nil)
	if ttft := items[0].Time.Sub(engine.VirtualEpoch).Seconds() - 0.2; !approx(ttft, 0.033, 1e-9) {
		t.Errorf("TTFT of the repeat %.9f s, want 0.033", ttft)
	}
	f := scrape(t, r.reg)
	e0 := []string{"engine", "0"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"vllm:external_prefix_cache_queries_total", rank0, 350},
		{"vllm:external_prefix_cache_hits_total", rank0, 96},
		{"vllm:prefix_cache_hits_total", rank0, 0},
		{"vllm:prompt_tokens_cached_total", rank0, 96},
		{"mocker_kv_tier_hits_total", append(e0, "medium", "CPU"), 6},
		{"mocker_kv_tier_hits_total", append(e0, "medium", "GPU"), 0},
		// B's 9 blocks, 6 of them evicted by the repeat, plus A's 6.
		{"mocker_kv_tier_blocks", append(e0, "medium", "GPU"), 9},
		{"mocker_kv_tier_blocks", append(e0, "medium", "CPU"), 12},
		// vLLM's connector transfer counters: 12 blocks of 2 MiB went down
		// (6 of A, 6 of B), 6 came back, at 0.5 ms per block.
		{"vllm:kv_offload_total_bytes_total", withRank0("transfer_type", "GPU_to_CPU"), 12 * 2 << 20},
		{"vllm:kv_offload_total_bytes_total", withRank0("transfer_type", "CPU_to_GPU"), 6 * 2 << 20},
		{"vllm:kv_offload_total_time_total", withRank0("transfer_type", "CPU_to_GPU"), 0.003},
	} {
		if got := f.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// The new families lint clean apart from vLLM's ':' names.
func TestPromlintSpecOffload(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) {
		c.SpeculativeConfig = &config.SpeculativeConfig{Method: "mtp", NumSpeculativeTokens: 2}
		c.KVOffloadingSize = 1
		c.KVOffloadingDiskSize = 2
	}), "test")
	r := reg.Observer(0)
	r.ObservePass(&engine.PassReport{IsPass: true, PrefixHits: 64, ExternalPrefixQueries: 10, ExternalPrefixHits: 64,
		TierHits: []int{1, 1}, Transfers: []engine.KVTransfer{{Type: "GPU_to_CPU", Bytes: 2 << 20, Seconds: 1e-4}}, Spec: engine.SpecDecodeStats{Drafts: 1, DraftTokens: 2, AcceptedTokens: 1, AcceptedPerPos: []int{1, 0}}})
	r.ObserveGauges(engine.Gauges{Tiers: []engine.TierGauge{{Medium: "GPU", Blocks: 3}, {Medium: "CPU", Blocks: 2}, {Medium: "DISK", Blocks: 1}}})
	body := scrapeText(t, reg).Raw
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		if p.Text != "metric names should not contain ':'" && specNameProblems[p.Metric] != p.Text {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	f := scrape(t, reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mocker_kv_tier_hits_total", []string{"engine", "0", "medium", "GPU"}, 1},
		{"mocker_kv_tier_hits_total", []string{"engine", "0", "medium", "DISK"}, 1},
		{"mocker_kv_tier_blocks", []string{"engine", "0", "medium", "DISK"}, 1},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", withRank0("position", "1"), 0},
	} {
		if got := f.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
