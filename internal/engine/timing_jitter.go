package engine

import (
	"fmt"
	"math"
)

// FixedJitter extends the fixed timing model with what
// llm-d-inference-sim's latency flags describe (docs/timing-model.md,
// docs/migrating-from-llm-d-inference-sim.md): a prefill term that grows
// per new prompt token, a seeded normal jitter on each term, and a load
// factor that stretches a pass with the number of sequences in it. The
// zero value adds nothing: FixedTiming stays as it was.
type FixedJitter struct {
	// PrefillPerTokenMs is added to the prefill term per new prompt token
	// of the pass (llm-d-inference-sim's prefill-time-per-token).
	PrefillPerTokenMs float64
	// PrefillStdMs and DecodeStdMs are the standard deviations of the
	// prefill and decode terms. A draw is clipped to [0.3, 1.7] × the
	// term, as llm-d-inference-sim clips its own.
	PrefillStdMs float64
	DecodeStdMs  float64
	// LoadFactor (≥ 1; 0 means 1) multiplies both terms by
	// 1 + (LoadFactor−1)·(n−1)/(MaxNumSeqs−1) for a pass of n sequences:
	// 1 for one sequence, LoadFactor for a full batch.
	LoadFactor float64
	MaxNumSeqs int
	// Seed makes the draws reproducible: a draw is a pure function of the
	// seed and the pass's contents.
	Seed uint64
}

// active reports whether j changes the fixed model at all.
func (j FixedJitter) active() bool {
	return j.PrefillPerTokenMs != 0 || j.PrefillStdMs != 0 || j.DecodeStdMs != 0 ||
		(j.LoadFactor != 0 && j.LoadFactor != 1)
}

func (j FixedJitter) validate() error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"fixed_prefill_ms_per_token", j.PrefillPerTokenMs}, {"fixed_prefill_std_ms", j.PrefillStdMs},
		{"fixed_decode_std_ms", j.DecodeStdMs}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("timing model fixed: %s must be finite and >= 0, got %v", f.key, f.v)
		}
	}
	if j.LoadFactor != 0 && !(j.LoadFactor >= 1) || math.IsInf(j.LoadFactor, 0) {
		return fmt.Errorf("timing model fixed: fixed_load_factor must be finite and >= 1, got %v", j.LoadFactor)
	}
	return nil
}

// JitteredFixedTiming is the fixed model with FixedJitter. It prices a
// pass by its contents (PassTimer), because a draw needs something that
// varies from pass to pass and the load factor needs the batch size. Only
// sequences that decode this pass cost a decode term: a prompt's last
// chunk produces the first token within its prefill term, so a lone
// request's first token takes the prefill term and each later token the
// decode term, which is what llm-d-inference-sim's time-to-first-token and
// inter-token-latency mean.
type JitteredFixedTiming struct {
	FixedTiming
	J FixedJitter
}

// PassMs returns the pass's prefill term (when it computes prompt
// tokens) plus its decode term (when sequences decode), each scaled by the
// load factor and drawn around its value.
func (t JitteredFixedTiming) PassMs(pc *PassContents) float64 {
	newTokens := 0
	for _, p := range pc.Prefills {
		newTokens += p.NewTokens
	}
	factor := t.loadFactor(len(pc.Prefills) + pc.Decodes)
	key := t.passKey(pc)
	ms := 0.0
	if newTokens > 0 {
		mean := (t.Prefill + t.J.PrefillPerTokenMs*float64(newTokens)) * factor
		ms += jitter(mean, t.J.PrefillStdMs, key)
	}
	if pc.Decodes > 0 {
		ms += jitter(t.Decode*factor, t.J.DecodeStdMs, mix64(key^0x5bd1e995))
	}
	return ms
}

// loadFactor is llm-d-inference-sim's getCurrLoadFactor for n sequences.
func (t JitteredFixedTiming) loadFactor(n int) float64 {
	f := t.J.LoadFactor
	if f <= 1 || t.J.MaxNumSeqs <= 1 || n <= 1 {
		return 1
	}
	n = min(n, t.J.MaxNumSeqs)
	return 1 + (f-1)*float64(n-1)/float64(t.J.MaxNumSeqs-1)
}

// passKey hashes the seed and what the pass computes.
func (t JitteredFixedTiming) passKey(pc *PassContents) uint64 {
	h := mix64(t.J.Seed)
	for _, p := range pc.Prefills {
		h = mix64(h ^ uint64(p.NewTokens)<<32 ^ uint64(p.CachedTokens))
	}
	h = mix64(h ^ uint64(pc.Decodes)<<32 ^ uint64(pc.DecodeCtxSum))
	return mix64(h ^ uint64(pc.DraftTokens))
}

// jitter draws a normal value of mean and standard deviation std from key
// (Box–Muller over two splitmix64 draws), clipped to [0.3, 1.7] × mean.
func jitter(mean, std float64, key uint64) float64 {
	if std <= 0 || mean <= 0 {
		return mean
	}
	u1 := (float64(mix64(key)>>11) + 0.5) * 0x1p-53 // (0, 1): log is finite
	u2 := float64(mix64(key^0x9e3779b97f4a7c15)>>11) * 0x1p-53
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return min(max(mean+z*std, 0.3*mean), 1.7*mean)
}
