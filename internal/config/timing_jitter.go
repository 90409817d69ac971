package config

import (
	"math"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// fixedJitter checks the fixed timing model's extensions
// (engine.FixedJitter): non-negative terms, a load factor of at least 1,
// and, as llm-d-inference-sim requires of its own flags, a standard
// deviation of at most 30% of a constant term (with a per-token prefill
// cost the term varies, so its deviation is not bounded by it).
func (v *validator) fixedJitter(c *Config) {
	v.nonNegFinite("fixed_prefill_ms_per_token", c.FixedPrefillMsPerToken)
	v.nonNegFinite("fixed_prefill_std_ms", c.FixedPrefillStdMs)
	v.nonNegFinite("fixed_decode_std_ms", c.FixedDecodeStdMs)
	if math.IsNaN(c.FixedLoadFactor) || math.IsInf(c.FixedLoadFactor, 0) || c.FixedLoadFactor < 1 {
		v.errorf([]string{"fixed_load_factor"}, "fixed_load_factor must be a finite number >= 1, got %s", fmtFloat(c.FixedLoadFactor))
	}
	if c.FixedPrefillMsPerToken == 0 && c.FixedPrefillMs >= 0 && c.FixedPrefillStdMs > 0.3*c.FixedPrefillMs {
		v.errorf([]string{"fixed_prefill_std_ms", "fixed_prefill_ms"},
			"fixed_prefill_std_ms (%s) must be at most 30%% of fixed_prefill_ms (%s)", fmtFloat(c.FixedPrefillStdMs), fmtFloat(c.FixedPrefillMs))
	}
	if c.FixedDecodeMs >= 0 && c.FixedDecodeStdMs > 0.3*c.FixedDecodeMs {
		v.errorf([]string{"fixed_decode_std_ms", "fixed_decode_ms"},
			"fixed_decode_std_ms (%s) must be at most 30%% of fixed_decode_ms (%s)", fmtFloat(c.FixedDecodeStdMs), fmtFloat(c.FixedDecodeMs))
	}
	extended := c.FixedPrefillMsPerToken != 0 || c.FixedPrefillStdMs != 0 || c.FixedDecodeStdMs != 0 || c.FixedLoadFactor != 1
	if extended && c.TimingModel != engine.TimingFixed {
		v.warns = append(v.warns, "fixed_prefill_ms_per_token, fixed_prefill_std_ms, fixed_decode_std_ms and fixed_load_factor have no effect unless timing_model is fixed")
	}
}
