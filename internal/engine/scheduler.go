package engine

import (
	"slices"
	"time"
)

// scheduler makes one pass's decisions over the Core's state: which running
// requests continue, which are preempted, which waiting ones are admitted.
// It is a synchronous function of state; timing, delivery and publication
// are the Core's. An engine with a different admission loop (SGLang's)
// implements this beside the vLLM scheduler instead of branching inside it.
type scheduler interface {
	schedule(start time.Time)
}

// vllmScheduler is vLLM v1's scheduler loop, also used for TensorRT-LLM
// with a different claim policy: running requests first, in running-list
// order, then the head of the waiting queue, all under one token budget.
type vllmScheduler struct {
	core   *Core
	victim victimPolicy
	// staticBatch is TensorRT-LLM's STATIC_BATCH: waiting requests are
	// admitted only into an empty batch.
	staticBatch bool
	// loras is scratch for the pass's distinct LoRA adapter ids.
	loras []int
}

// schedule runs the two steps of a vLLM pass.
func (v *vllmScheduler) schedule(start time.Time) {
	if v.core.enc != nil {
		// Items whose tokens last pass computed leave the encoder cache's
		// holds (vLLM frees them after each step).
		for _, s := range v.core.running {
			v.core.releaseConsumed(s)
		}
	}
	budget := v.core.cfg.MaxNumBatchedTokens
	budget, preempted := v.scheduleRunning(start, budget)
	if preempted {
		return // vLLM admits nothing in a pass that had to preempt.
	}
	if v.staticBatch && len(v.core.running) > 0 {
		return // no request joins a static batch in progress
	}
	v.admitWaiting(start, budget)
}

// scheduleRunning gives each running request its next tokens (a prefill
// chunk or one decode token), growing its blocks; when the pool is
// exhausted it preempts victims until the request fits or is itself the
// victim. It returns the budget left and whether anything was preempted.
func (v *vllmScheduler) scheduleRunning(start time.Time, budget int) (int, bool) {
	c := v.core
	preempted := false
	for i := 0; i < len(c.running) && budget > 0; i++ {
		s := c.running[i]
		computedBefore := s.numComputedTokens
		numNew := min(s.numTokens()-s.numComputedTokens, budget)
		var enc encodePlan
		if computedBefore < s.numPromptTokens {
			if numNew, enc = c.scheduleEncoder(s, computedBefore, numNew); numNew == 0 {
				continue // its next item cannot be encoded this pass
			}
		}
		drafts := 0
		if c.cfg.Speculative.Enabled() && numNew == 1 && computedBefore >= s.numPromptTokens && s.numGeneratedTokens > 0 {
			// A decoding sequence verifies its drafts: they take slots
			// and budget like the regular token (vLLM's scheduled spec
			// tokens).
			drafts = c.draftsFor(s, budget-numNew)
			if drafts > 0 && c.kv.allocateSlots(s, numNew+drafts) == allocNoFreeBlocks {
				// No room for the draft slots: decode without drafts
				// rather than preempt others for speculation (a request
				// alone on a pool it exactly fits would otherwise preempt
				// itself forever).
				drafts = 0
			}
		}
		scheduled := true
		for c.kv.allocateSlots(s, numNew+drafts) == allocNoFreeBlocks {
			if !v.core.kv.claims.preemptOnShortage() {
				// The claim policy reserved these blocks; running out is
				// an internal error that aborts the request.
				c.log.Error("allocation failed for a request with reserved blocks", "request", s.req.ID)
				c.running = append(c.running[:i], c.running[i+1:]...)
				i--
				c.finish(s, FinishAbort, start)
				scheduled = false
				break
			}
			victim := v.victim(c.running)
			budget += victim.passTokens // refund work scheduled earlier this pass
			victimIndex := c.preempt(victim)
			preempted = true
			if victim == s {
				scheduled = false
				i--
				break
			}
			if victimIndex < i {
				i--
			}
		}
		if !scheduled {
			continue
		}
		c.commitEncoder(s, enc)
		s.numComputedTokens += numNew
		budget -= numNew + drafts
		s.scheduled = true
		s.passTokens = numNew + drafts
		s.passCtx = s.numTokens()
		if drafts > 0 {
			s.passDrafts = drafts
			s.passAccepted = c.cfg.Speculative.acceptedDrafts(s.specKey, s.numGeneratedTokens, drafts)
		}
		if computedBefore < s.numPromptTokens {
			// Continuing a chunked prefill.
			s.passPrefill = true
			s.passPrefix = computedBefore
		}
		c.kv.cacheFullBlocks(s)
	}
	return budget, preempted
}

// admitWaiting admits requests from the head of the waiting queue while the
// budget, max_num_seqs and the pool allow. A head that does not fit blocks
// the queue (no skipping ahead), as in vLLM's FCFS scheduler. The one
// exception is vLLM's: a request whose LoRA adapter would make the pass's
// distinct adapters exceed max_loras is stepped over and keeps its place,
// and the requests behind it are considered.
func (v *vllmScheduler) admitWaiting(start time.Time, budget int) {
	c := v.core
	// claimed is the blocks the running requests still claim, computed once
	// and updated per admission, so admitting k requests costs
	// O(running + k), not O(running × k).
	claimed := -1
	loras := v.scheduledAdapters()
	next := 0      // index of the next waiting request to consider
	eligible := -1 // once max_loras adapters are in the pass: admissible requests left
	for next < c.waiting.Len() && budget > 0 && len(c.running) < c.cfg.MaxNumSeqs && !c.admitPaused() {
		full := len(loras) == c.cfg.LoRA.MaxLoRAs
		if full && eligible < 0 {
			// From now on only base-model requests and those of the pass's
			// adapters can be admitted; none was passed over before.
			eligible = c.waiting.numQueued(loras)
		}
		if eligible == 0 {
			break // every request left belongs to an adapter that cannot join
		}
		s := c.waiting.At(next)
		if s.arrival.After(start) {
			// It arrived after this pass began (the live actor starts a
			// back-to-back pass at the previous deadline): the next pass
			// takes it, so no request is scheduled before it arrived.
			next++
			continue
		}
		adapter := s.req.Adapter.ID
		if adapter != 0 && full && !slices.Contains(loras, adapter) {
			next++ // would exceed max_loras: wait, in place
			continue
		}
		if eligible > 0 {
			eligible-- // this one is now admitted, rejected, or blocks the queue
		}
		if s.status == statusWaiting {
			if r := c.kv.rejection(s.numPromptTokens, s.maxOutput); r != nil {
				c.waiting.RemoveAt(next)
				c.reject(s, r)
				continue
			}
		}
		if claimed < 0 {
			claimed = c.kv.claimedBlocks(c.running)
		}
		if out := c.admitRemote(s, start, budget, claimed); out != remoteNotRemote {
			if out == remoteMustWait {
				break
			}
			c.waiting.RemoveAt(next)
			if out == remotePromoted {
				claimed += c.kv.claimOf(s)
				budget--
			} else {
				claimed = -1 // the transfer's blocks are taken
			}
			continue
		}
		var enc encodePlan
		adm := c.kv.admit(s, budget, claimed, c.cfg.EnableChunkedPrefill, func(cached, chunk int) int {
			chunk, enc = c.scheduleEncoder(s, cached, chunk)
			return chunk
		})
		if adm.outcome != allocated {
			break
		}
		c.commitEncoder(s, enc)
		if adapter != 0 && !slices.Contains(loras, adapter) {
			loras = append(loras, adapter)
		}
		cachedTokens, chunk := adm.numCachedTokens, adm.numNewTokens
		c.waiting.RemoveAt(next)
		s.numComputedTokens = cachedTokens + chunk
		s.status = statusRunning
		c.running = append(c.running, s)
		claimed += c.kv.claimOf(s)
		budget -= chunk
		s.scheduled = true
		s.passTokens = chunk
		s.passPrefill = true
		s.passPrefix = cachedTokens
		s.passCtx = s.numTokens()
		s.passAdmitted = true
		if !s.firstAdmitted {
			s.firstAdmitted = true
			s.firstScheduled = start
			s.cachedFirst = cachedTokens
		}
		c.report.PrefixQueries += s.numTokens()
		c.report.PrefixHits += cachedTokens - adm.numLoadedTokens
		if c.kv.lower != nil {
			// vLLM asks its connector for the tokens the GPU cache missed.
			c.report.ExternalPrefixQueries += s.numTokens() - (cachedTokens - adm.numLoadedTokens)
			c.report.ExternalPrefixHits += adm.numLoadedTokens
		}
		c.kv.cacheFullBlocks(s)
	}
	v.loras = loras
}

// scheduledAdapters returns the distinct adapters of the running requests
// scheduled so far this pass (vLLM's scheduled_loras); empty without LoRA.
func (v *vllmScheduler) scheduledAdapters() []int {
	loras := v.loras[:0]
	for _, s := range v.core.running {
		if id := s.req.Adapter.ID; s.scheduled && id != 0 && !slices.Contains(loras, id) {
			loras = append(loras, id)
		}
	}
	return loras
}

// victimPolicy picks the running request to preempt.
type victimPolicy func(running []*sequence) *sequence

// newVictimPolicy returns the victim choice for a scheduling policy and
// preemption mode: under priority scheduling the lowest-priority request
// (largest value), latest arrival among equals; otherwise the last admitted
// (LIFO, vLLM's default) or the first (FIFO).
func newVictimPolicy(scheduling SchedulingPolicy, mode PreemptionMode) victimPolicy {
	switch {
	case scheduling == SchedulePriority:
		return lowestPriorityVictim
	case mode == PreemptFIFO:
		return func(running []*sequence) *sequence { return running[0] }
	default:
		return func(running []*sequence) *sequence { return running[len(running)-1] }
	}
}

func lowestPriorityVictim(running []*sequence) *sequence {
	victim := running[0]
	for _, r := range running[1:] {
		if r.req.Priority > victim.req.Priority ||
			(r.req.Priority == victim.req.Priority && !r.arrival.Before(victim.arrival)) {
			victim = r
		}
	}
	return victim
}
