package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
)

// TimingModel models the raw duration of one pass's two terms in
// milliseconds, before speedup ratios are applied. Implementations are
// immutable and safe for concurrent use.
type TimingModel interface {
	// PrefillMs returns the prefill term for T new prompt tokens in the pass
	// (0 when T == 0).
	PrefillMs(newTokens int) float64
	// DecodeMs returns the decode term given the active KV tokens, the total
	// KV capacity in tokens and the average context length of the requests
	// emitting a token. The caller only asks when at least one token is
	// emitted in the pass.
	DecodeMs(activeKVTokens, totalKVTokens, avgContext int) float64
}

// CachedPrefillTimer is implemented by a timing model whose prefill term
// also charges for attention over the prompt tokens already in the KV cache
// (the interpolated model with a profile's prefill_cached_ms_per_mtok).
// PrefillMs prices the new tokens only; planPass adds CachedPrefillMs of
// the pass's sum over prompt chunks of new × cached tokens.
type CachedPrefillTimer interface {
	CachedPrefillMs(newTimesCached float64) float64
}

// NewTimingModel builds the timing model tc selects. An empty kind means
// the default: interpolated when a profile is given, else polynomial.
func NewTimingModel(tc TimingConfig) (TimingModel, error) {
	kind := tc.Model
	if kind == "" {
		kind = TimingPolynomial
		if tc.Profile != nil {
			kind = TimingInterpolated
		}
	}
	switch kind {
	case TimingPolynomial:
		return PolynomialTiming{}, nil
	case TimingFixed:
		for _, f := range []struct {
			key string
			v   float64
		}{{"fixed_prefill_ms", tc.FixedPrefillMs}, {"fixed_decode_ms", tc.FixedDecodeMs}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				return nil, fmt.Errorf("timing model fixed: %s must be finite and >= 0, got %v", f.key, f.v)
			}
		}
		fixed := FixedTiming{Prefill: tc.FixedPrefillMs, Decode: tc.FixedDecodeMs}
		if !tc.Jitter.active() {
			return fixed, nil
		}
		if err := tc.Jitter.validate(); err != nil {
			return nil, err
		}
		return JitteredFixedTiming{FixedTiming: fixed, J: tc.Jitter}, nil
	case TimingInterpolated:
		if tc.Profile == nil {
			return nil, errors.New("timing model interpolated requires planner_profile_data")
		}
		return NewInterpolatedTiming(tc.Profile)
	default:
		return nil, fmt.Errorf("unknown timing model %q (want polynomial, fixed or interpolated)", kind)
	}
}

// PolynomialTiming is the default model (docs/timing-model.md): a quadratic in the
// new prompt tokens for prefill and a quadratic in the KV cache fill ratio
// for decode. Batch size does not enter it.
type PolynomialTiming struct{}

// warnZeroKVTotal logs once per process that the decode term was asked for
// with a zero KV capacity.
var warnZeroKVTotal sync.Once

// PrefillMs returns 4.209989e-07·T² + 1.518344e-02·T + 1.650142e+01 ms,
// 0 when T == 0, clamped ≥ 0.
func (PolynomialTiming) PrefillMs(newTokens int) float64 {
	if newTokens <= 0 {
		return 0
	}
	t := float64(newTokens)
	return math.Max(0, 4.209989e-07*t*t+1.518344e-02*t+1.650142e+01)
}

// DecodeMs returns max(1.0, −25.74·x² + 54.01·x + 5.74) ms with
// x = activeKVTokens / totalKVTokens (x = 1.0 if total is 0, with a warning).
func (PolynomialTiming) DecodeMs(activeKVTokens, totalKVTokens, _ int) float64 {
	x := 1.0
	if totalKVTokens > 0 {
		x = float64(activeKVTokens) / float64(totalKVTokens)
	} else {
		warnZeroKVTotal.Do(func() {
			slog.Warn("polynomial timing: total KV capacity is 0 tokens; using a full-cache decode time (x = 1.0)")
		})
	}
	return math.Max(1.0, -25.74*x*x+54.01*x+5.74)
}

// FixedTiming charges constant times: Prefill ms for a pass with new prompt
// tokens, Decode ms for a pass that emits tokens.
type FixedTiming struct {
	// Prefill is the prefill term in ms (fixed_prefill_ms).
	Prefill float64
	// Decode is the decode term in ms (fixed_decode_ms).
	Decode float64
}

// PrefillMs returns f.Prefill when newTokens > 0, else 0.
func (f FixedTiming) PrefillMs(newTokens int) float64 {
	if newTokens <= 0 {
		return 0
	}
	return f.Prefill
}

// DecodeMs returns f.Decode.
func (f FixedTiming) DecodeMs(_, _, _ int) float64 { return f.Decode }

// InterpolatedTiming interpolates measured profile data (docs/timing-model.md):
// prefill linearly on new prompt tokens, decode bilinearly on
// (active KV tokens, average context length), extrapolating linearly from
// the two nearest points/grid lines outside an axis.
type InterpolatedTiming struct {
	prefillISL  []float64
	prefillTTFT []float64
	decodeKV    []float64
	decodeCtx   []float64
	decodeITL   [][]float64 // [len(decodeKV)][len(decodeCtx)]
	cachedMs    float64     // per million new × cached token pairs
}

// NewInterpolatedTiming validates p and builds the model from a private copy
// of its arrays (later changes to p do not affect the model).
func NewInterpolatedTiming(p *Profile) (*InterpolatedTiming, error) {
	if p == nil {
		return nil, errors.New("interpolated timing: nil profile")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	itl := make([][]float64, len(p.DecodeITL))
	for i, row := range p.DecodeITL {
		itl[i] = append([]float64(nil), row...)
	}
	return &InterpolatedTiming{
		prefillISL:  append([]float64(nil), p.PrefillISL...),
		prefillTTFT: append([]float64(nil), p.PrefillTTFTMs...),
		decodeKV:    append([]float64(nil), p.DecodeActiveKVTokens...),
		decodeCtx:   append([]float64(nil), p.DecodeContextLength...),
		decodeITL:   itl,
		cachedMs:    p.PrefillCachedMsPerMTok,
	}, nil
}

// CachedPrefillMs returns the profile's prefill_cached_ms_per_mtok ×
// newTimesCached / 10⁶ (0 without that extension).
func (m *InterpolatedTiming) CachedPrefillMs(newTimesCached float64) float64 {
	return m.cachedMs * newTimesCached / 1e6
}

// PrefillMs interpolates prefill_ttft_ms at T (0 when T == 0), clamped ≥ 0.
func (m *InterpolatedTiming) PrefillMs(newTokens int) float64 {
	if newTokens <= 0 {
		return 0
	}
	i, t := segment(m.prefillISL, float64(newTokens))
	return math.Max(0, lerp(m.prefillTTFT[i], m.prefillTTFT[i+1], t))
}

// DecodeMs interpolates decode_itl at (activeKVTokens, avgContext), clamped
// ≥ 1.0 ms. totalKVTokens is not used.
func (m *InterpolatedTiming) DecodeMs(activeKVTokens, _, avgContext int) float64 {
	i, t := segment(m.decodeKV, float64(activeKVTokens))
	j, u := segment(m.decodeCtx, float64(avgContext))
	lo := lerp(m.decodeITL[i][j], m.decodeITL[i][j+1], u)
	hi := lerp(m.decodeITL[i+1][j], m.decodeITL[i+1][j+1], u)
	return math.Max(1.0, lerp(lo, hi, t))
}

// segment returns the index i of the axis segment [xs[i], xs[i+1]] used at x
// and x's position t in it: 0 ≤ t < 1 inside the axis (t == 0 exactly on a
// grid point, t == 1 on the last one), t < 0 or t > 1 when x lies outside
// the axis and is extrapolated from the two nearest points. xs is strictly
// increasing with at least 2 points.
func segment(xs []float64, x float64) (int, float64) {
	n := len(xs)
	i := sort.Search(n, func(k int) bool { return xs[k] > x }) - 1
	i = min(max(i, 0), n-2)
	return i, (x - xs[i]) / (xs[i+1] - xs[i])
}

// lerp interpolates (or, for t outside [0, 1], extrapolates) between a at
// t = 0 and b at t = 1; it returns a and b exactly at t = 0 and t = 1.
func lerp(a, b, t float64) float64 { return a*(1-t) + b*t }
