package engine

import (
	"slices"
	"testing"
)

// recordingPassTimer prices a pass at 1 ms per query token plus 0.01 ms per
// attended context token, and keeps a copy of every pass description.
type recordingPassTimer struct {
	passes []PassContents
}

func (r *recordingPassTimer) PassMs(pc *PassContents) float64 {
	cp := *pc
	cp.Prefills = slices.Clone(pc.Prefills)
	r.passes = append(r.passes, cp)
	ms := float64(pc.Tokens()) + 0.01*float64(pc.DecodeCtxSum)
	for _, p := range pc.Prefills {
		ms += 0.01 * float64(p.CachedTokens)
	}
	return ms
}

func (r *recordingPassTimer) PrefillMs(int) float64 { panic("PassTimer models are asked PassMs") }
func (r *recordingPassTimer) DecodeMs(int, int, int) float64 {
	panic("PassTimer models are asked PassMs")
}

// A timing model that implements PassTimer sees each pass's prompt chunks
// with their cached prefix and its decodes with their context lengths, and
// the pass lasts what it returns.
func TestPassTimer_SeesPassContents(t *testing.T) {
	rt := &recordingPassTimer{}
	h := newHarness(t, func(c *Config) { c.BlockSize = 16; c.TimingModel = rt })
	prefix := seqTokens(1000, 64)
	a := h.submitAt(0, append(slices.Clone(prefix), seqTokens(5000, 36)...), []uint32{1, 2, 3})
	// B arrives once A's prompt is cached and shares its first 64 tokens.
	b := h.submitAt(150, append(slices.Clone(prefix), seqTokens(7000, 20)...), []uint32{4, 5})
	h.sim.Run(0)

	want := []PassContents{
		{Prefills: []PrefillChunk{{NewTokens: 100}}},       // A's prompt: 100 ms
		{Decodes: 1, DecodeCtxSum: 101, DecodeCtxMax: 101}, // A's 2nd token
		{Decodes: 1, DecodeCtxSum: 102, DecodeCtxMax: 102}, // A's 3rd token
		{Prefills: []PrefillChunk{{NewTokens: 20, CachedTokens: 64}}},
		{Decodes: 1, DecodeCtxSum: 85, DecodeCtxMax: 85},
	}
	if len(rt.passes) != len(want) {
		t.Fatalf("passes %+v, want %+v", rt.passes, want)
	}
	for i := range want {
		g, w := rt.passes[i], want[i]
		if !slices.Equal(g.Prefills, w.Prefills) || g.Decodes != w.Decodes || g.DecodeCtxSum != w.DecodeCtxSum ||
			g.DecodeCtxMax != w.DecodeCtxMax || g.DraftTokens != 0 || g.LoRATokens != 0 {
			t.Errorf("pass %d: %+v, want %+v", i+1, g, w)
		}
	}
	ra, rb := drain(a), drain(b)
	// A: 100 ms, then 1 + 1.01 and 1 + 1.02 ms. B starts at 150 ms:
	// 20 + 0.64 ms, then 1 + 0.85 ms.
	for _, c := range []struct {
		got, want []float64
	}{{ra.times, []float64{100, 102.01, 104.03}}, {rb.times, []float64{170.64, 172.49}}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("times %v, want %v", c.got, c.want)
		}
		for i := range c.want {
			if !approx(c.got[i], c.want[i], msTolerance) {
				t.Errorf("token %d at %.6f ms, want %.6f", i, c.got[i], c.want[i])
			}
		}
	}
}

// The speedup ratios divide a PassTimer's price: speedup_ratio every pass,
// decode_speedup_ratio too when the pass computes no prompt tokens.
func TestPassTimer_SpeedupRatios(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.TimingModel = &recordingPassTimer{}
		c.SpeedupRatio = 2
		c.DecodeSpeedupRatio = 4
	})
	r := h.submitAt(0, seqTokens(1, 100), []uint32{1, 2})
	h.sim.Run(0)
	res := drain(r)
	want := []float64{50, 50 + (1+1.01)/8}
	for i := range want {
		if !approx(res.times[i], want[i], msTolerance) {
			t.Errorf("token %d at %.6f ms, want %.6f", i, res.times[i], want[i])
		}
	}
}

// constPassTimer prices every pass at 10 ms: what remains of a pass's cost
// is the Core filling the PassContents.
type constPassTimer struct{}

func (constPassTimer) PassMs(*PassContents) float64   { return 10 }
func (constPassTimer) PrefillMs(int) float64          { return 10 }
func (constPassTimer) DecodeMs(int, int, int) float64 { return 10 }

// BenchmarkDecodePass256PassTimer is BenchmarkDecodePass256 with a
// PassTimer: the difference is the cost of describing the pass (the
// hardware model's own price is internal/hardware's BenchmarkPassMs).
func BenchmarkDecodePass256PassTimer(b *testing.B) {
	benchDecodePasses(b, func(c *Config) { c.TimingModel = constPassTimer{} })
}

// BenchmarkDescribePass256 times what planPass adds for a PassTimer: the
// pass description of 256 decoding sequences.
func BenchmarkDescribePass256(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 256
	cfg.TimingModel = constPassTimer{}
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	out := NewOutput()
	planned := seqTokens(1000, 64)
	for i := 0; i < 256; i++ {
		core.Submit(&Request{ID: uint64(i + 1), Prompt: seqTokens(10_000+i*512, 512), PlannedOutput: planned, Out: out})
	}
	now := VirtualEpoch
	var buf []OutputItem
	for core.NumWaiting() > 0 || core.NumRunning() < 256 {
		d := core.BeginPass(now)
		now = now.Add(d)
		core.EndPass(now, now)
		buf = out.Drain(buf)
	}
	core.BeginPass(now) // every sequence scheduled for a decode
	b.ReportAllocs()
	for b.Loop() {
		core.pc.reset()
		core.pcAdapters = core.pcAdapters[:0]
		for _, s := range core.running {
			if s.scheduled {
				core.describe(s)
			}
		}
	}
	if core.pc.Decodes != 256 {
		b.Fatalf("described %d decodes", core.pc.Decodes)
	}
}

// Speculative decoding under a PassTimer: the verified draft tokens are in
// the pass's description, and the drafter costs draft_cost_ratio × the
// longest draft × the price of the decodes alone.
func TestPassTimer_SpeculativeDrafts(t *testing.T) {
	rt := &recordingPassTimer{}
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.TimingModel = rt
		c.Speculative = SpeculativeConfig{Method: "eagle", NumSpeculativeTokens: 3,
			AcceptanceRates: []float64{1, 1, 1}, DraftCostRatio: 0.5, Seed: 42}
	})
	r := h.submitAt(0, seqTokens(1000, 100), seqTokens(1, 9))
	h.sim.Run(0)
	// Pass 1: the prompt (100 ms) emits token 1. Pass 2 decodes with 3
	// drafts, all accepted: 4 tokens. Priced 4 query tokens + 0.01 × 101
	// context, plus the drafter 0.5 × 3 × (1 + 1.01): the timer's second
	// call of the pass prices its decodes alone.
	if len(rt.passes) < 3 || rt.passes[1].Decodes != 1 || rt.passes[1].DraftTokens != 3 || rt.passes[2].Decodes != 1 ||
		rt.passes[2].DraftTokens != 0 || rt.passes[2].DecodeCtxSum != 101 {
		t.Fatalf("passes %+v", rt.passes)
	}
	res := drain(r)
	want := 100 + 4 + 1.01 + 0.5*3*(1+1.01)
	if !approx(res.times[1], want, msTolerance) {
		t.Errorf("token 2 at %.6f ms, want %.6f", res.times[1], want)
	}
}
