package engine

// PassTimer is implemented by a timing model that needs to see what a pass
// computes rather than the two summary terms of TimingModel: the hardware
// model (internal/hardware) prices each operator of the pass. When the
// Core's timing model implements it, planPass calls PassMs instead of
// PrefillMs and DecodeMs.
type PassTimer interface {
	// PassMs returns the pass's raw duration in milliseconds, before
	// speedup ratios. pc is only valid during the call.
	PassMs(pc *PassContents) float64
}

// PassContents describes one pass for a PassTimer. The Core fills one value
// per pass and reuses its slice, so building it allocates nothing.
type PassContents struct {
	// Prefills are the prompt chunks computed this pass.
	Prefills []PrefillChunk
	// Decodes is the number of sequences generating this pass; DecodeCtxSum
	// the sum of their context lengths (tokens attended to, including the
	// new one) and DecodeCtxMax the longest.
	Decodes      int
	DecodeCtxSum int
	DecodeCtxMax int
	// DraftTokens are speculative tokens verified on top of the decodes'
	// one token each (they enter the GEMMs and attention as extra query
	// tokens).
	DraftTokens int
	// LoRATokens are the pass's tokens that belong to requests with a LoRA
	// adapter; LoRAs the distinct adapters among them.
	LoRATokens int
	LoRAs      int
}

// PrefillChunk is one request's prompt tokens computed in a pass.
type PrefillChunk struct {
	// NewTokens are computed this pass; CachedTokens were already in the
	// KV cache (prefix-cache hits or earlier chunks) and are attended to.
	NewTokens    int
	CachedTokens int
}

// Tokens is the number of query tokens of the pass: every prefill token,
// one per decode, and the draft tokens.
func (pc *PassContents) Tokens() int {
	n := pc.Decodes + pc.DraftTokens
	for _, p := range pc.Prefills {
		n += p.NewTokens
	}
	return n
}

// reset empties pc, keeping the Prefills array.
func (pc *PassContents) reset() {
	*pc = PassContents{Prefills: pc.Prefills[:0]}
}
