package engine

import (
	"slices"
	"testing"
)

// Speculative decoding scenarios (S23–S25) in virtual time with the fixed
// timing model: prefill 20 ms, decode 10 ms, and a draft cost of 0.1 decode
// steps per draft token, so a pass that verifies k = 3 drafts costs
// 10 × (1 + 0.1 × 3) = 13 ms.
//
// How many passes a 12-token output takes. The first token comes from the
// prefill pass (20 + 10 = 30 ms), which has nothing to verify yet: the
// drafter proposes after it. Each later pass verifies k = 3 drafts and
// delivers the accepted ones plus one bonus token, so 11 tokens remain for
// the decode passes:
//   - acceptance 1.0: 4 tokens per decode pass, 4 + 4 + 3 = 11 → 3 decode
//     passes (4 passes in all); the last pass accepts 3 drafts of which
//     only 2 are used, as vLLM truncates a step's tokens at max_tokens.
//   - acceptance 0.0: 1 token per decode pass → 11 decode passes, 12 passes
//     in all (the "12" of the issue counts every pass of the output).

func specHarness(t *testing.T, rates []float64) *harness {
	t.Helper()
	return newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Speculative = SpeculativeConfig{Method: "eagle", NumSpeculativeTokens: len(rates),
			AcceptanceRates: rates, DraftCostRatio: 0.1, Seed: 42}
	})
}

// specTotals sums the observer's speculative decoding counters.
func specTotals(h *harness) SpecDecodeStats {
	var tot SpecDecodeStats
	for i := range h.obs.passes {
		s := &h.obs.passes[i].Spec
		tot.Drafts += s.Drafts
		tot.DraftTokens += s.DraftTokens
		tot.AcceptedTokens += s.AcceptedTokens
		if tot.AcceptedPerPos == nil {
			tot.AcceptedPerPos = make([]int, len(s.AcceptedPerPos))
		}
		for j, n := range s.AcceptedPerPos {
			tot.AcceptedPerPos[j] += n
		}
	}
	return tot
}

// checkSpecRun checks a finished request's tokens (all planned, at the
// given ms), the number of passes and the speculative counters.
func checkSpecRun(t *testing.T, h *harness, r *Request, times []float64, passes int, want SpecDecodeStats) result {
	t.Helper()
	res := drain(r)
	if !slices.Equal(res.tokens, r.PlannedOutput) || len(res.times) != len(times) {
		t.Fatalf("tokens %v, want %v", res.tokens, r.PlannedOutput)
	}
	for i, w := range times {
		if !approx(res.times[i], w, msTolerance) {
			t.Errorf("token %d at %.6f ms, want %v", i+1, res.times[i], w)
		}
	}
	if n := len(h.obs.passes); n != passes {
		t.Errorf("%d passes, want %d", n, passes)
	}
	got := specTotals(h)
	if got.Drafts != want.Drafts || got.DraftTokens != want.DraftTokens || got.AcceptedTokens != want.AcceptedTokens ||
		!slices.Equal(got.AcceptedPerPos, want.AcceptedPerPos) {
		t.Errorf("spec counters %+v, want %+v", got, want)
	}
	return res
}

func TestScenarioS23SpeculativeFullAcceptanceTakesThreeDecodePasses(t *testing.T) {
	h := specHarness(t, []float64{1, 1, 1})
	r := h.submitAt(0, seqTokens(1000, 100), seqTokens(1, 12))
	h.sim.Run(0)
	// 1 prefill pass + 3 decode passes.
	res := checkSpecRun(t, h, r, []float64{30, 43, 43, 43, 43, 56, 56, 56, 56, 69, 69, 69}, 4,
		SpecDecodeStats{Drafts: 3, DraftTokens: 9, AcceptedTokens: 9, AcceptedPerPos: []int{3, 3, 3}})
	// The token budget counts the drafted tokens: 1 + 3 per decode pass.
	for i, want := range []int{100, 4, 4, 4} {
		if got := h.obs.passes[i].IterationTokens; got != want {
			t.Errorf("pass %d iteration tokens %d, want %d", i+1, got, want)
		}
	}
	// One inter-token gap per pass, not per token (vLLM observes ITL per step).
	itl := 0
	for _, p := range h.obs.passes {
		itl += len(p.ITL)
	}
	if gen := h.obs.total(func(p *PassReport) int { return p.GenerationTokens }); gen != 12 || itl != 3 {
		t.Errorf("generation tokens %d, ITL samples %d, want 12 and 3", gen, itl)
	}
	if res.fin == nil || res.fin.NumGenerated != 12 || h.core.Pool().NumActive() != 0 {
		t.Errorf("terminal %+v, active blocks %d", res.fin, h.core.Pool().NumActive())
	}
}

func TestScenarioS24SpeculativeZeroAcceptanceTakesElevenDecodePasses(t *testing.T) {
	h := specHarness(t, []float64{0, 0, 0})
	r := h.submitAt(0, seqTokens(1000, 100), seqTokens(1, 12))
	h.sim.Run(0)
	times := make([]float64, 12)
	for i := range times {
		times[i] = 30 + 13*float64(i) // each rejected draft still costs its 3 ms
	}
	// 1 prefill pass + 11 decode passes.
	checkSpecRun(t, h, r, times, 12, SpecDecodeStats{Drafts: 11, DraftTokens: 33, AcceptedPerPos: []int{0, 0, 0}})
}

// TestScenarioS25SeededPerPositionAcceptance checks the acceptance model
// against a hand computation. Rates [0.9, 0.6, 0.3], seed 42, prompt
// 1000..1099, choice 0: SequenceKey = 0x911550c1a95bbf9d. The draws
// AcceptanceDraw(42, key, step, pos) for the passes (step = tokens generated
// before the pass), computed with an independent Python transcription of
// the formula in docs/speculative-and-offload.md:
//
//	step  1: 0.7197 0.9019 0.4026 → pos0 < 0.9, pos1 ≥ 0.6: accepted 1, emits 2
//	step  3: 0.1179 0.9158 0.4069 → accepted 1, emits 2
//	step  5: 0.4277 0.3782 0.3362 → pos2 ≥ 0.3: accepted 2, emits 3
//	step  8: 0.3048 0.2401 0.5878 → accepted 2, emits 3
//	step 11: 0.5422 0.1630 0.5909 → accepted 2, emits 1 (12 reached)
//
// Totals: 5 drafts, 15 draft tokens, 8 accepted, per position [5, 3, 0].
func TestScenarioS25SeededPerPositionAcceptance(t *testing.T) {
	key := SequenceKey(seqTokens(1000, 100), 0)
	if key != 0x911550c1a95bbf9d {
		t.Fatalf("SequenceKey = %#x, want 0x911550c1a95bbf9d", key)
	}
	if d := AcceptanceDraw(42, key, 1, 1); !approx(d, 0.9019, 5e-5) {
		t.Errorf("draw(step 1, pos 1) = %.6f, want 0.9019", d)
	}
	h := specHarness(t, []float64{0.9, 0.6, 0.3})
	r := h.submitAt(0, seqTokens(1000, 100), seqTokens(1, 12))
	h.sim.Run(0)
	// Tokens arrive in groups of 1, 2, 2, 3, 3, 1 at 30, 43, 56, 69, 82, 95 ms.
	res := checkSpecRun(t, h, r, []float64{30, 43, 43, 56, 56, 69, 69, 69, 82, 82, 82, 95}, 6,
		SpecDecodeStats{Drafts: 5, DraftTokens: 15, AcceptedTokens: 8, AcceptedPerPos: []int{5, 3, 0}})
	// Same seed, same answer.
	h2 := specHarness(t, []float64{0.9, 0.6, 0.3})
	r2 := h2.submitAt(0, seqTokens(1000, 100), seqTokens(1, 12))
	h2.sim.Run(0)
	if got := drain(r2).times; !slices.Equal(got, res.times) {
		t.Errorf("rerun times %v, want %v", got, res.times)
	}
}

func TestSpeculativeDraftsAreTrimmedToTheBudgetAndContext(t *testing.T) {
	// max_model_len 105 with a 100-token prompt: after token 1 the sequence
	// has 101 tokens and may draft at most 105 − 1 − 101 = 3, then 0 once it
	// holds 104.
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.MaxModelLen = 105
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Speculative = SpeculativeConfig{NumSpeculativeTokens: 3, AcceptanceRates: []float64{1, 1, 1}}
	})
	r := h.submitAt(0, seqTokens(1000, 100), seqTokens(1, 12))
	h.sim.Run(0)
	res := drain(r)
	if len(res.tokens) != 5 || res.fin == nil || res.fin.Reason != FinishLength {
		t.Fatalf("tokens %v fin %+v, want 5 tokens cut by the context", res.tokens, res.fin)
	}
	if got := specTotals(h); got.Drafts != 1 || got.DraftTokens != 3 {
		t.Errorf("drafts %d draft tokens %d, want 1 and 3", got.Drafts, got.DraftTokens)
	}
}

func TestSpeculativeConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec SpeculativeConfig
		ok   bool
	}{
		{"off", SpeculativeConfig{}, true},
		{"k rates", SpeculativeConfig{NumSpeculativeTokens: 2, AcceptanceRates: []float64{0.5, 1}}, true},
		{"missing rates", SpeculativeConfig{NumSpeculativeTokens: 2, AcceptanceRates: []float64{0.5}}, false},
		{"rate above 1", SpeculativeConfig{NumSpeculativeTokens: 1, AcceptanceRates: []float64{1.5}}, false},
		{"negative draft cost", SpeculativeConfig{NumSpeculativeTokens: 1, AcceptanceRates: []float64{1}, DraftCostRatio: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Speculative = tc.spec
			_, err := NewCore(cfg, CoreOptions{})
			if (err == nil) != tc.ok {
				t.Errorf("NewCore error %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// specFPM records the speculative figures an FPMSpecSink receives.
type specFPM struct {
	plain int
	spec  []FPMSpecDecode
}

func (f *specFPM) PublishFPM(ForwardPassSnapshot) { f.plain++ }
func (f *specFPM) PublishFPMSpec(_ ForwardPassSnapshot, s FPMSpecDecode) {
	f.spec = append(f.spec, s)
}

// The FPM stream gains each pass's drafts and accepted tokens (S23: one
// prefill pass, then 3 passes of 1 draft of 3 tokens, all accepted).
func TestSpeculativeFiguresReachFPMSinks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 16
	cfg.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	cfg.Speculative = SpeculativeConfig{NumSpeculativeTokens: 3, AcceptanceRates: []float64{1, 1, 1}}
	rec := &specFPM{}
	core, err := NewCore(cfg, CoreOptions{FPMSink: rec})
	if err != nil {
		t.Fatal(err)
	}
	sim := NewSimulator(core)
	sim.SubmitAt(0, &Request{ID: NewRequestID(), Prompt: seqTokens(1000, 100), PlannedOutput: seqTokens(1, 12)})
	sim.Run(0)
	full := FPMSpecDecode{NumDrafts: 1, NumDraftTokens: 3, NumAccepted: 3}
	if want := []FPMSpecDecode{{}, full, full, full}; rec.plain != 0 || !slices.Equal(rec.spec, want) {
		t.Errorf("FPM spec figures %+v (plain snapshots %d), want %+v", rec.spec, rec.plain, want)
	}
}

// A request that exactly fits the pool decodes without drafts when their
// slots do not fit, instead of preempting itself for them.
func TestSpeculativeDraftsNeverPreemptForSlots(t *testing.T) {
	// 4 blocks of 16 = 64 tokens: a 50-token prompt and 14 outputs fill it.
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.NumBlocks = 4
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Speculative = SpeculativeConfig{NumSpeculativeTokens: 3, AcceptanceRates: []float64{0, 0, 0}}
	})
	r := h.submitAt(0, seqTokens(1000, 50), seqTokens(1, 14))
	if passes := h.sim.Run(100); passes >= 100 {
		t.Fatalf("still running after %d passes", passes)
	}
	res := drain(r)
	if len(res.tokens) != 14 || res.fin == nil || res.fin.Reason != FinishLength {
		t.Fatalf("tokens %v fin %+v", res.tokens, res.fin)
	}
	if p := h.obs.total(func(p *PassReport) int { return p.Preemptions }); p != 0 {
		t.Errorf("%d preemptions, want 0", p)
	}
	// Drafts while 3 slots fit (tokens 51..61 + 3 ≤ 64), none after.
	if got := specTotals(h); got.Drafts == 0 || got.Drafts == 13 {
		t.Errorf("%d passes with drafts, want some but not all 13 decode passes", got.Drafts)
	}
}
