package engine

import (
	"errors"
	"fmt"
	"math"
)

// Profile array names: the keys of a JSON profile, the member names (plus
// ".npy") of an NPZ profile, and the names validation errors report.
const (
	ProfilePrefillISL           = "prefill_isl"
	ProfilePrefillTTFTMs        = "prefill_ttft_ms"
	ProfileDecodeActiveKVTokens = "decode_active_kv_tokens"
	ProfileDecodeContextLength  = "decode_context_length"
	ProfileDecodeITL            = "decode_itl"
	// ProfilePrefillCachedMsPerMTok is this project's optional extension
	// (Profile.PrefillCachedMsPerMTok); Dynamo's profiles do not have it.
	ProfilePrefillCachedMsPerMTok = "prefill_cached_ms_per_mtok"
)

// Profile is measured timing data for the interpolated model (see
// docs/timing-model.md). A nil array means "missing". The engine never reads
// profile files: internal/profile loads them into this type.
type Profile struct {
	// PrefillISL is the prefill axis: new prompt tokens in a pass. Strictly
	// increasing, at least 2 points.
	PrefillISL []float64 `json:"prefill_isl"`
	// PrefillTTFTMs is the prefill time in ms at each PrefillISL point.
	PrefillTTFTMs []float64 `json:"prefill_ttft_ms"`
	// DecodeActiveKVTokens is decode axis 1 (active KV tokens). Strictly
	// increasing, at least 2 points.
	DecodeActiveKVTokens []float64 `json:"decode_active_kv_tokens"`
	// DecodeContextLength is decode axis 2 (average context length).
	// Strictly increasing, at least 2 points.
	DecodeContextLength []float64 `json:"decode_context_length"`
	// DecodeITL is the decode time in ms: row i ↔ DecodeActiveKVTokens[i],
	// column j ↔ DecodeContextLength[j].
	DecodeITL [][]float64 `json:"decode_itl"`
	// PrefillCachedMsPerMTok charges each prompt chunk for attending to the
	// tokens already in its KV cache (prefix-cache hits and earlier chunks):
	// milliseconds per million (new × cached) token pairs of the pass, on
	// top of the prefill curve, which prices new tokens only. Optional: 0
	// (absent, as in Dynamo's profiles) charges nothing, so such profiles
	// keep Dynamo's arithmetic exactly. mocker-server calibrate fits it
	// from its cached-prefix probes.
	PrefillCachedMsPerMTok float64 `json:"prefill_cached_ms_per_mtok,omitempty"`
}

// ProfileArrayError reports a problem with one named array of a profile.
type ProfileArrayError struct {
	// Array is the array's name, e.g. "decode_itl".
	Array string
	// Msg describes the problem.
	Msg string
}

func (e *ProfileArrayError) Error() string {
	return fmt.Sprintf("profile array %s: %s", e.Array, e.Msg)
}

func arrayErr(array, format string, args ...any) error {
	return &ProfileArrayError{Array: array, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the profile's shape and values: every array present, axes
// strictly increasing with at least 2 points, value arrays matching their
// axes, and no NaN or Inf anywhere. The error names the offending array.
func (p *Profile) Validate() error {
	if p == nil {
		return errors.New("profile: nil")
	}
	axes := []struct {
		name string
		v    []float64
	}{
		{ProfilePrefillISL, p.PrefillISL},
		{ProfileDecodeActiveKVTokens, p.DecodeActiveKVTokens},
		{ProfileDecodeContextLength, p.DecodeContextLength},
	}
	for _, a := range axes {
		if err := validateAxis(a.name, a.v); err != nil {
			return err
		}
	}
	if err := validateValues(ProfilePrefillTTFTMs, p.PrefillTTFTMs, len(p.PrefillISL), ProfilePrefillISL, ""); err != nil {
		return err
	}
	if p.DecodeITL == nil {
		return arrayErr(ProfileDecodeITL, "missing")
	}
	if len(p.DecodeITL) != len(p.DecodeActiveKVTokens) {
		return arrayErr(ProfileDecodeITL, "has %d rows, want %d (the length of %s)",
			len(p.DecodeITL), len(p.DecodeActiveKVTokens), ProfileDecodeActiveKVTokens)
	}
	for i, row := range p.DecodeITL {
		if err := validateValues(ProfileDecodeITL, row, len(p.DecodeContextLength), ProfileDecodeContextLength,
			fmt.Sprintf("row %d ", i)); err != nil {
			return err
		}
	}
	if c := p.PrefillCachedMsPerMTok; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return arrayErr(ProfilePrefillCachedMsPerMTok, "is %v (must be finite and >= 0)", c)
	}
	return nil
}

func validateAxis(name string, v []float64) error {
	if v == nil {
		return arrayErr(name, "missing")
	}
	if len(v) < 2 {
		return arrayErr(name, "has %d points, need at least 2", len(v))
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return arrayErr(name, "element %d is %v (must be finite)", i, x)
		}
		if i > 0 && !(x > v[i-1]) {
			return arrayErr(name, "not strictly increasing: element %d (%v) <= element %d (%v)", i, x, i-1, v[i-1])
		}
	}
	return nil
}

func validateValues(name string, v []float64, want int, axis, where string) error {
	if v == nil && where == "" {
		return arrayErr(name, "missing")
	}
	if len(v) != want {
		return arrayErr(name, "%shas %d values, want %d (the length of %s)", where, len(v), want, axis)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return arrayErr(name, "%selement %d is %v (must be finite)", where, i, x)
		}
	}
	return nil
}
