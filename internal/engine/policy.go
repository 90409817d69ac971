package engine

import "log/slog"

// claimPolicy is how an engine decides how much of the KV pool a request
// must be able to hold. vLLM admits a request when its prompt fits and
// preempts later if decoding runs out of blocks; TensorRT-LLM's
// GUARANTEED_NO_EVICT reserves blocks up to the request's last token at
// admission, so running requests never run out. A new engine adds a value
// here rather than a branch in the pass.
type claimPolicy interface {
	// capacityTokens is the tokens a request must be able to hold at once
	// to run at all; more blocks than the pool has means rejection.
	capacityTokens(promptTokens, maxOutputTokens int) int
	// prepare adjusts a newly submitted sequence before it is queued; a
	// non-nil rejection ends it at once.
	prepare(s *sequence, m *kvManager, log *slog.Logger) *Rejection
	// admissionTokens is the tokens whose blocks must be free (beyond the
	// running requests' claims) to admit a waiting sequence.
	admissionTokens(s *sequence) int
	// claimTokens is the tokens whose blocks a running sequence has
	// claimed; blocks it still lacks stay reserved for it.
	claimTokens(s *sequence) int
	// preemptOnShortage says whether a running request that cannot grow
	// preempts another (vLLM) or is failed as an internal error (a
	// reservation was broken).
	preemptOnShortage() bool
}

// newClaimPolicy returns the claim policy of an engine type and, for
// TensorRT-LLM, its capacity scheduler policy: MAX_UTILIZATION claims like
// vLLM (and preempts, TensorRT-LLM's "pause"); GUARANTEED_NO_EVICT and
// STATIC_BATCH reserve to completion (STATIC_BATCH's admission rule is the
// scheduler's, vllmScheduler.staticBatch). SGLang's scheduler budgets memory
// itself (sglang_scheduler.go); its policy only clips max_new_tokens to the
// pool (clipToPool).
func newClaimPolicy(t EngineType, capacity CapacityPolicy) claimPolicy {
	switch t {
	case EngineTRTLLM:
		if capacity == CapacityMaxUtilization {
			return claimPrompt{}
		}
		return reserveToCompletion{}
	case EngineSGLang:
		return clipToPool{}
	}
	return claimPrompt{}
}

// claimPrompt is vLLM's policy: a request claims the blocks of its prompt
// (so a chunked prefill in progress is not starved by later admissions) and
// nothing for its output.
type claimPrompt struct{}

func (claimPrompt) capacityTokens(promptTokens, _ int) int { return promptTokens }

func (claimPrompt) prepare(*sequence, *kvManager, *slog.Logger) *Rejection { return nil }

func (claimPrompt) admissionTokens(s *sequence) int { return s.numTokens() }

func (claimPrompt) claimTokens(s *sequence) int {
	if s.prefillDone() {
		return 0
	}
	return s.numPromptTokens
}

func (claimPrompt) preemptOnShortage() bool { return true }

// reserveToCompletion is TensorRT-LLM's GUARANTEED_NO_EVICT: the output is
// first clamped to what the pool and the context can hold, then a request is
// admitted only when blocks for its prompt and whole output are available.
type reserveToCompletion struct{}

// capacityTokens is the prompt plus the first generated token: anything
// less cannot produce output, anything more is clamped away by prepare.
func (reserveToCompletion) capacityTokens(promptTokens, _ int) int { return promptTokens + 1 }

func (reserveToCompletion) prepare(s *sequence, m *kvManager, log *slog.Logger) *Rejection {
	if r := m.rejection(s.numPromptTokens, s.maxOutput); r != nil && r.Reason == RejectKVCapacity {
		return r
	}
	clampOutput(s, m.capacityTokens()-s.numPromptTokens, m, log, "trtllm output clamped")
	return nil
}

// clampOutput limits a sequence's output to poolRoom tokens and to what the
// context leaves, truncating its plan (which then ends by length).
func clampOutput(s *sequence, poolRoom int, m *kvManager, log *slog.Logger, msg string) {
	limit := max(min(s.maxOutput, poolRoom, m.maxModelLen-s.numPromptTokens), 0)
	if limit < s.maxOutput {
		log.Debug(msg, "request", s.req.ID, "from", s.maxOutput, "to", limit)
		s.maxOutput = limit
	}
	if len(s.planned) > limit {
		s.planned = s.planned[:limit]
		s.finishReason = FinishLength
	}
}

func (reserveToCompletion) admissionTokens(s *sequence) int { return s.numPromptTokens + s.maxOutput }

func (reserveToCompletion) claimTokens(s *sequence) int { return s.numPromptTokens + s.maxOutput }

func (reserveToCompletion) preemptOnShortage() bool { return false }

// clipToPool is SGLang's request validation: max_new_tokens is clipped so
// that the prompt and the whole output fit the pool with one token to spare
// (max_req_len − input_len − 1), so a request alone on the engine is always
// admissible; a prompt that leaves no room for one output token is
// rejected. Claims are claimPrompt's; the SGLang scheduler budgets memory
// with its own estimate.
type clipToPool struct{ claimPrompt }

func (clipToPool) capacityTokens(promptTokens, _ int) int { return promptTokens + 2 }

func (clipToPool) prepare(s *sequence, m *kvManager, log *slog.Logger) *Rejection {
	clampOutput(s, m.capacityTokens()-s.numPromptTokens-1, m, log, "sglang max_new_tokens clipped")
	return nil
}
