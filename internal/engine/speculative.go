package engine

import (
	"fmt"
	"math"
)

// SpeculativeConfig is speculative decoding as a rank simulates it
// (docs/speculative-and-offload.md): every decode pass a sequence proposes
// NumSpeculativeTokens draft tokens, the pass verifies them, and a prefix of
// them plus one bonus token arrive together at the pass deadline. The zero
// value turns speculative decoding off.
type SpeculativeConfig struct {
	// Method is vLLM's "method" (eagle, ngram, mtp, draft_model, …); it
	// only selects the default DraftCostRatio.
	Method string
	// NumSpeculativeTokens is k, the draft tokens proposed per pass; 0 is off.
	NumSpeculativeTokens int
	// AcceptanceRates holds the probability that draft position i is
	// accepted given positions 0..i-1 were; exactly k entries in [0, 1].
	AcceptanceRates []float64
	// DraftCostRatio is the draft model's cost per proposed token as a
	// fraction of the pass's decode term.
	DraftCostRatio float64
	// Seed makes the acceptance draws reproducible.
	Seed uint64
}

// Enabled reports whether sequences draft tokens.
func (c SpeculativeConfig) Enabled() bool { return c.NumSpeculativeTokens > 0 }

// DefaultDraftCostRatio is the draft cost a method gets when the
// configuration names none: an n-gram lookup runs on the CPU and costs
// nothing on the GPU; EAGLE and MTP heads are one extra layer; a separate
// draft model is a small model of its own.
func DefaultDraftCostRatio(method string) float64 {
	switch method {
	case "ngram", "suffix":
		return 0
	case "draft_model":
		return 0.2
	default:
		return 0.1
	}
}

func (c SpeculativeConfig) validate() error {
	if !c.Enabled() {
		return nil
	}
	if len(c.AcceptanceRates) != c.NumSpeculativeTokens {
		return fmt.Errorf("speculative decoding: %d acceptance rates for %d speculative tokens",
			len(c.AcceptanceRates), c.NumSpeculativeTokens)
	}
	for i, p := range c.AcceptanceRates {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("speculative decoding: acceptance rate %d is %v, want a value in [0, 1]", i, p)
		}
	}
	if !(c.DraftCostRatio >= 0) || math.IsInf(c.DraftCostRatio, 1) {
		return fmt.Errorf("speculative decoding: draft cost ratio %v must be finite and >= 0", c.DraftCostRatio)
	}
	return nil
}

// acceptedDrafts returns how many of a pass's drafts the verification
// accepts: position i is accepted when its draw is below AcceptanceRates[i],
// and the first rejected position ends the accepted prefix. It is a pure
// function of the seed, the sequence's key, the number of tokens the
// sequence had generated before the pass (step) and the position, so a
// preempted sequence that recomputes draws the same again.
func (c SpeculativeConfig) acceptedDrafts(key uint64, step, drafts int) int {
	for pos := range drafts {
		if !(AcceptanceDraw(c.Seed, key, step, pos) < c.AcceptanceRates[pos]) {
			return pos
		}
	}
	return drafts
}

// AcceptanceDraw is the uniform number in [0, 1) that decides draft
// position pos of the pass where a sequence with key had generated step
// tokens: splitmix64's finaliser applied to seed ^ key, then xored with the
// step, then with the position; the top 53 bits scaled by 2^-53.
// docs/speculative-and-offload.md spells it out for other implementations.
func AcceptanceDraw(seed, key uint64, step, pos int) float64 {
	h := mix64(seed ^ key)
	h = mix64(h ^ uint64(step))
	h = mix64(h ^ uint64(pos))
	return float64(h>>11) * 0x1p-53
}

// mix64 is splitmix64's step: add the golden gamma, then its finaliser.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// SequenceKey is the acceptance model's key of a sequence: FNV-1a (64 bit)
// over its prompt token ids, each as 4 little-endian bytes, then its choice
// index as 8 little-endian bytes. Identical requests draw identically.
func SequenceKey(prompt []uint32, choice int) uint64 {
	const prime = 0x100000001b3
	h := uint64(0xcbf29ce484222325)
	for _, t := range prompt {
		for i := range 4 {
			h ^= uint64(byte(t >> (8 * i)))
			h *= prime
		}
	}
	for i := range 8 {
		h ^= uint64(byte(uint64(choice) >> (8 * i)))
		h *= prime
	}
	return h
}

// draftsFor returns how many draft tokens a decoding sequence proposes this
// pass, trimmed as vLLM trims scheduled spec tokens: to the token budget
// left after its one regular token, and so that the sequence never passes
// max_model_len.
func (c *Core) draftsFor(s *sequence, budgetLeft int) int {
	k := c.cfg.Speculative.NumSpeculativeTokens
	return max(0, min(k, budgetLeft, c.cfg.MaxModelLen-1-s.numTokens()))
}

// SpecDecodeStats is one pass's speculative decoding figures, in the shape
// of vLLM's SpecDecodingStats.
type SpecDecodeStats struct {
	// Drafts counts sequences that verified drafts this pass.
	Drafts int
	// DraftTokens and AcceptedTokens count proposed and accepted drafts
	// (the bonus token is not an accepted draft).
	DraftTokens, AcceptedTokens int
	// AcceptedPerPos[i] counts drafts accepted at position i; its length
	// is k (nil when speculative decoding is off).
	AcceptedPerPos []int
}

func (s *SpecDecodeStats) observe(drafts, accepted int) {
	s.Drafts++
	s.DraftTokens += drafts
	s.AcceptedTokens += accepted
	for i := range accepted {
		s.AcceptedPerPos[i]++
	}
}

func (s *SpecDecodeStats) reset() {
	per := s.AcceptedPerPos
	clear(per)
	*s = SpecDecodeStats{AcceptedPerPos: per}
}

// draftFactor is what the decode term is multiplied by when the pass's
// longest draft has maxDrafts tokens: the draft model runs maxDrafts
// sequential steps over the batch, each costing DraftCostRatio of a decode
// step. The verification of k+1 tokens per sequence is in the decode term
// itself, through the KV slots the drafts occupy.
func (c *Core) draftFactor(maxDrafts int) float64 {
	return 1 + c.cfg.Speculative.DraftCostRatio*float64(maxDrafts)
}
