package config

import (
	"github.com/mocker-server/mocker-server/internal/engine"
)

// SpeculativeConfig is --speculative-config: vLLM's keys that matter to a
// simulation (method, model, num_speculative_tokens) plus the mock's own
// acceptance model (docs/speculative-and-offload.md). Other vLLM keys are
// refused as unknown rather than accepted and ignored.
type SpeculativeConfig struct {
	// Method is vLLM's method; empty means draft_model when Model is set.
	Method string `json:"method"`
	// Model names the draft model (vLLM's "model"); it selects the
	// draft_model method when no method is given.
	Model                string `json:"model"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// AcceptanceRate is one acceptance probability for every draft
	// position; AcceptanceRatePerPosition gives one per position instead
	// (exactly num_speculative_tokens of them). Neither: 0.7 everywhere.
	AcceptanceRate            *float64  `json:"acceptance_rate"`
	AcceptanceRatePerPosition []float64 `json:"acceptance_rate_per_position"`
	// DraftCostRatio is the cost of drafting one token as a fraction of
	// a decode step (default by method: ngram 0, draft_model 0.2, others 0.1).
	DraftCostRatio *float64 `json:"draft_cost_ratio"`
}

// specMethods are the vLLM speculative methods the configuration accepts.
var specMethods = []string{"ngram", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model", "mtp", "deepseek_mtp", "suffix"}

// defaultAcceptanceRate applies to every position when neither
// acceptance_rate nor acceptance_rate_per_position is given.
const defaultAcceptanceRate = 0.7

// resolvedMethod is the method with vLLM's inference from the draft model.
func (s *SpeculativeConfig) resolvedMethod() string {
	if s.Method == "" && s.Model != "" {
		return "draft_model"
	}
	return s.Method
}

// validateSpeculative checks speculative_config: a known method, k >= 1,
// and acceptance rates in [0, 1].
func (v *validator) validateSpeculative(c *Config) {
	s := c.SpeculativeConfig
	if s == nil {
		return
	}
	const key = "speculative_config"
	method := s.resolvedMethod()
	known := false
	for _, m := range specMethods {
		known = known || m == method
	}
	switch {
	case method == "":
		v.errorf([]string{key + ".method"}, "speculative_config needs a method (or a draft model)")
	case !known:
		v.errorf([]string{key + ".method"}, "speculative_config.method %q is not one of %v", method, specMethods)
	}
	if s.NumSpeculativeTokens < 1 {
		v.errorf([]string{key + ".num_speculative_tokens"},
			"speculative_config.num_speculative_tokens must be >= 1, got %d", s.NumSpeculativeTokens)
	}
	rate := func(path string, p float64) {
		if !(p >= 0 && p <= 1) {
			v.errorf([]string{path}, "%s must be in [0, 1], got %v", path, p)
		}
	}
	if s.AcceptanceRate != nil {
		rate(key+".acceptance_rate", *s.AcceptanceRate)
		if s.AcceptanceRatePerPosition != nil {
			v.errorf([]string{key + ".acceptance_rate", key + ".acceptance_rate_per_position"},
				"speculative_config: give acceptance_rate or acceptance_rate_per_position, not both")
		}
	}
	if per := s.AcceptanceRatePerPosition; per != nil {
		if s.NumSpeculativeTokens >= 1 && len(per) != s.NumSpeculativeTokens {
			v.errorf([]string{key + ".acceptance_rate_per_position"},
				"speculative_config.acceptance_rate_per_position has %d entries, want num_speculative_tokens (%d)",
				len(per), s.NumSpeculativeTokens)
		}
		for _, p := range per {
			rate(key+".acceptance_rate_per_position", p)
		}
	}
	if d := s.DraftCostRatio; d != nil {
		v.nonNegFinite(key+".draft_cost_ratio", *d)
	}
	if c.EngineType != engine.EngineVLLM {
		v.errorf([]string{key, "engine_type"}, "speculative_config is supported with engine_type vllm only, got %s", c.EngineType)
	}
}

// engineSpeculative converts speculative_config for the engine; the zero
// value (off) without one. The acceptance draws are seeded by --seed.
func (c *Config) engineSpeculative() engine.SpeculativeConfig {
	s := c.SpeculativeConfig
	if s == nil {
		return engine.SpeculativeConfig{}
	}
	method := s.resolvedMethod()
	rates := s.AcceptanceRatePerPosition
	if rates == nil {
		p := defaultAcceptanceRate
		if s.AcceptanceRate != nil {
			p = *s.AcceptanceRate
		}
		rates = make([]float64, s.NumSpeculativeTokens)
		for i := range rates {
			rates[i] = p
		}
	}
	cost := engine.DefaultDraftCostRatio(method)
	if s.DraftCostRatio != nil {
		cost = *s.DraftCostRatio
	}
	return engine.SpeculativeConfig{
		Method:               method,
		NumSpeculativeTokens: s.NumSpeculativeTokens,
		AcceptanceRates:      append([]float64(nil), rates...),
		DraftCostRatio:       cost,
		Seed:                 uint64(c.Seed),
	}
}
