package plan

import (
	"math"
	"slices"
	"testing"
)

// The natural mode's lengths follow the configured log-normal
// distribution: over 10,000 seeds the median and p90 of the drawn lengths
// are within four standard errors of median·e^(σ·Φ⁻¹(q)) (the sample
// q-quantile's relative standard error is σ·√(q(1−q)/n)/φ(Φ⁻¹(q)): 1.3% for
// the median and 1.7% for p90 at σ 1), and the share of answers that end
// before a 4096 limit is within four standard errors (√(p(1−p)/n)) of
// P(L < 4096).
func TestNaturalLenFollowsTheLogNormal(t *testing.T) {
	for _, tc := range []struct {
		median int
		sigma  float64
	}{{128, 1.0}, {128, 0.5}, {300, 1.5}, {20, 0.8}} {
		const n, limit = 10000, 4096
		lens := make([]int, n)
		stops := 0
		for i := range lens {
			p := Params{Seed: Mix64(uint64(i) + 1), MaxTokens: limit, SetsMax: true, Chat: true,
				NaturalOutputLen: tc.median, NaturalSigma: tc.sigma}
			r := Plan(p)
			lens[i] = len(r.IDs)
			if r.NaturalEnd {
				stops++
			}
		}
		slices.Sort(lens)
		for _, q := range []float64{0.5, 0.9} {
			want := math.Min(LogNormalQuantile(tc.median, tc.sigma, q), limit)
			z := math.Sqrt2 * math.Erfinv(2*q-1)
			rse := tc.sigma * math.Sqrt(q*(1-q)/n) / (math.Exp(-z*z/2) / math.Sqrt(2*math.Pi))
			got := float64(lens[int(q*n)])
			// +0.5: lengths are rounded to whole tokens.
			if tol := 4*rse*want + 0.5; math.Abs(got-want) > tol {
				t.Errorf("median %d σ %v: p%.0f %v, want %.1f ± %.1f", tc.median, tc.sigma, 100*q, got, want, tol)
			}
		}
		// L < 4096 after rounding means x < 4095.5.
		wantStop := LogNormalCDF(tc.median, tc.sigma, limit-0.5)
		if got := float64(stops) / n; math.Abs(got-wantStop) > 4*math.Sqrt(wantStop*(1-wantStop)/n)+1e-4 {
			t.Errorf("median %d σ %v: stop share %.4f, want %.4f", tc.median, tc.sigma, got, wantStop)
		}
		// The docs' table row (go test -v -run TestNaturalLenFollowsTheLogNormal ./internal/plan).
		t.Logf("| %d | %.1f | %.2f%% | %.2f%% | %d | %.1f | %d | %.1f |", tc.median, tc.sigma,
			100*float64(stops)/n, 100*wantStop, lens[n/2], LogNormalQuantile(tc.median, tc.sigma, 0.5),
			lens[9*n/10], math.Min(LogNormalQuantile(tc.median, tc.sigma, 0.9), limit))
	}
}

// No answer that ends naturally is empty: at least one visible token
// precedes its EOS, and with reasoning at least one content token follows
// the reasoning, whatever the thinking ratio, limit and min_tokens.
func TestNaturalEndIsNeverEmpty(t *testing.T) {
	for _, mode := range []LenMode{ModeNatural, ModeRandom, ModeMax} {
		for _, ratio := range []float64{0, 0.3, 0.5, 0.9, 0.99, 1} {
			var rs *Reasoning
			if ratio > 0 {
				rs = &Reasoning{StartID: 3, EndID: 4, Ratio: ratio}
			}
			for seed := uint64(0); seed < 3000; seed++ {
				m := 1 + int(seed%40)
				p := Params{Seed: seed, MaxTokens: m, Chat: true, Mode: mode, NaturalOutputLen: 1 + int(seed%7),
					MinTokens: int(seed/40) % 3, Reasoning: rs}
				r := Plan(p)
				if !r.NaturalEnd {
					continue
				}
				_, content := r.Texts(len(r.IDs))
				if content == "" {
					t.Fatalf("%s ratio %v seed %d M %d: empty content, ids %v think %d", mode, ratio, seed, m, r.IDs, r.ThinkLen)
				}
				if len(r.IDs) < p.MinTokens+1 {
					t.Fatalf("%s seed %d: %d tokens < min_tokens+1", mode, seed, len(r.IDs))
				}
			}
		}
	}
	// max_tokens 1 cannot hold a word and an EOS: one word, finish length.
	r := Plan(Params{Seed: 1, MaxTokens: 1, Chat: true, NaturalOutputLen: 1})
	if _, c := r.Texts(1); r.NaturalEnd || c == "" {
		t.Errorf("max_tokens 1: %+v %q", r, c)
	}
}

// ignore_eos gives exactly the limit in every mode; min_tokens keeps the
// natural end at or after token min_tokens + 1.
func TestIgnoreEOSAndMinTokens(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		for _, mode := range []LenMode{ModeNatural, ModeRandom, ModeMax} {
			r := Plan(Params{Seed: seed, MaxTokens: 700, SetsMax: true, Chat: true, Mode: mode, IgnoreEOS: true, NaturalOutputLen: 5})
			if len(r.IDs) != 700 || r.NaturalEnd || r.FinishReason != "length" {
				t.Fatalf("%s seed %d ignore_eos: %d tokens %s", mode, seed, len(r.IDs), r.FinishReason)
			}
		}
		r := Plan(Params{Seed: seed, MaxTokens: 700, SetsMax: true, Chat: true, MinTokens: 300, NaturalOutputLen: 5})
		if len(r.IDs) < 301 || (r.NaturalEnd && len(r.IDs) != 301) {
			t.Fatalf("seed %d min_tokens 300, median 5: %d tokens", seed, len(r.IDs))
		}
	}
}

// The same seed, choice and settings give the same length; another choice
// of the same request draws its own.
func TestNaturalLenIsDeterministic(t *testing.T) {
	differ := 0
	for seed := uint64(0); seed < 500; seed++ {
		a := NaturalLen(ModeNatural, seed, 0, 128, 1)
		if b := NaturalLen(ModeNatural, seed, 0, 128, 1); a != b {
			t.Fatalf("seed %d: %d then %d", seed, a, b)
		}
		if NaturalLen(ModeNatural, seed, 1, 128, 1) != a {
			differ++
		}
	}
	if differ < 450 {
		t.Errorf("choice 1 drew choice 0's length %d times in 500", 500-differ)
	}
	// Pinned values: the draw is part of the output's definition.
	got := []int{NaturalLen(ModeNatural, 0, 0, 128, 1), NaturalLen(ModeNatural, 42, 0, 128, 1), NaturalLen(ModeRandom, 42, 0, 128, 1)}
	if !slices.Equal(got, []int{1, 190, 35}) {
		t.Errorf("pinned lengths %v, want [1 190 35]", got)
	}
}
