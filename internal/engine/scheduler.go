package engine

import (
	"time"
)

// BeginPass runs one scheduler pass at start (engine.md §4, §6): running
// requests first, then the waiting head, under the token budget. It models
// the pass duration, publishes the pass-start KV event batch, FPM snapshot
// and gauges, and returns the duration. A zero duration with Scheduled()
// false means the pass did nothing.
func (c *Core) BeginPass(start time.Time) time.Duration {
	c.ready = c.ready[:0]
	c.prefills = c.prefills[:0]
	budget := c.cfg.MaxNumBatchedTokens
	preempted := false

	// Step A: running requests, in running-list order.
	for i := 0; i < len(c.running) && budget > 0; i++ {
		s := c.running[i]
		before := s.c
		numNew := min(s.L()-s.c, budget)
		want := ceilDiv(s.c+numNew, c.bs)
		ok := true
		for want > len(s.blocks) {
			blocks, got := c.pool.Allocate(s.blocks, want-len(s.blocks))
			if got {
				s.blocks = blocks
				break
			}
			if c.trtllm {
				// GUARANTEED_NO_EVICT reserved these blocks; running out is
				// an internal error that aborts the request (engine.md §6).
				c.log.Error("trtllm allocation failed for a running request", "request", s.req.ID)
				c.running = append(c.running[:i], c.running[i+1:]...)
				i--
				c.finish(s, FinishAbort, start)
				ok = false
				break
			}
			victim := c.pickVictim()
			budget += victim.passTokens // refund work scheduled earlier this pass
			vi := c.preempt(victim)
			preempted = true
			if victim == s {
				ok = false
				i--
				break
			}
			if vi < i {
				i--
			}
		}
		if !ok {
			continue
		}
		s.c += numNew
		budget -= numNew
		s.scheduled = true
		s.passTokens = numNew
		s.passCtx = s.L()
		if before < s.p {
			// Continuing a chunked prefill.
			s.passPrefill = true
			s.passPrefix = before
		}
		c.cacheFull(s)
	}

	// Step B: the waiting head, unless this pass preempted. claimed is the
	// blocks the running requests still claim (reserved() or inflight()),
	// computed once and updated per admission, so admitting k requests
	// costs O(running + k), not O(running × k).
	claimed := -1
	for !preempted && c.waiting.Len() > 0 && budget > 0 && len(c.running) < c.cfg.MaxNumSeqs {
		s := c.waiting.Front()
		if s.status == statusWaiting && c.mustReject(s) {
			c.waiting.PopFront()
			c.reject(s)
			continue
		}
		L := s.L()
		c.hits = c.hits[:0]
		if c.hasher != nil {
			maxHit := (L - 1) / c.bs
			c.hasher.Extend(&s.chain, s.tokens, maxHit)
			c.hits = c.pool.Lookup(s.chain.Hashes(), maxHit, c.hits)
		}
		activeHits := 0
		for _, b := range c.hits {
			if c.pool.RefCount(b) > 0 {
				activeHits++
			}
		}
		if claimed < 0 {
			claimed = c.claimedBlocks()
		}
		var needed, available int
		if c.trtllm {
			needed = ceilDiv(s.p+s.maxOutput, c.bs) - activeHits
		} else {
			needed = ceilDiv(L, c.bs) - activeHits
		}
		available = c.pool.NumFree() - claimed
		if needed > available {
			break
		}
		cached := len(c.hits) * c.bs
		numNew := L - cached
		if !c.cfg.EnableChunkedPrefill && numNew > budget {
			break
		}
		chunk := min(numNew, budget)
		c.pool.Touch(c.hits)
		s.blocks = append(s.blocks[:0], c.hits...)
		blocks, ok := c.pool.Allocate(s.blocks, ceilDiv(cached+chunk, c.bs)-len(s.blocks))
		if !ok {
			// Unreachable after the capacity check; undo and wait.
			c.pool.Release(s.blocks)
			s.blocks = s.blocks[:0]
			break
		}
		s.blocks = blocks
		s.cachedBlocks = len(c.hits)
		c.waiting.PopFront()
		s.c = cached + chunk
		s.status = statusRunning
		c.running = append(c.running, s)
		claimed += c.claimOf(s)
		budget -= chunk
		s.scheduled = true
		s.passTokens = chunk
		s.passPrefill = true
		s.passPrefix = cached
		s.passCtx = L
		if !s.firstAdmitted {
			s.firstAdmitted = true
			s.firstScheduled = start
			s.cachedFirst = cached
		}
		c.report.PrefixQueries += L
		c.report.PrefixHits += cached
		c.cacheFull(s)
	}

	return c.planPass(start)
}

// mustReject applies the fresh-request rejection rules (engine.md §8).
func (c *Core) mustReject(s *sequence) bool {
	if s.p >= c.cfg.MaxModelLen {
		return true
	}
	if c.trtllm {
		return ceilDiv(s.p+s.maxOutput, c.bs) > c.numBlocks
	}
	return ceilDiv(s.p, c.bs) > c.numBlocks
}

// claimedBlocks is the blocks the running requests still claim: for vLLM
// the inflight blocks they need to finish their prompts (engine.md §4 B.4),
// for TRT-LLM the blocks reserved up to their completion (engine.md §6).
func (c *Core) claimedBlocks() int {
	n := 0
	for _, r := range c.running {
		n += c.claimOf(r)
	}
	return n
}

// claimOf is one running request's share of claimedBlocks.
func (c *Core) claimOf(r *sequence) int {
	if c.trtllm {
		return max(ceilDiv(r.p+r.maxOutput, c.bs)-len(r.blocks), 0)
	}
	if r.c < r.p {
		return ceilDiv(r.p, c.bs) - len(r.blocks)
	}
	return 0
}

// cacheFull hashes and caches the blocks the sequence's computed tokens
// have just filled (kv-cache.md §3.3).
func (c *Core) cacheFull(s *sequence) {
	if c.hasher == nil {
		return
	}
	full := s.c / c.bs
	if full <= s.cachedBlocks {
		return
	}
	c.hasher.Extend(&s.chain, s.tokens, full)
	c.pool.Cache(s.blocks, s.chain.Hashes(), s.tokens, s.cachedBlocks, full, s.req.CacheSalt)
	s.cachedBlocks = full
}

// pickVictim chooses the running request to preempt (engine.md §5).
func (c *Core) pickVictim() *sequence {
	if c.priority {
		v := c.running[0]
		for _, r := range c.running[1:] {
			if r.req.Priority > v.req.Priority ||
				(r.req.Priority == v.req.Priority && !r.arrival.Before(v.arrival)) {
				v = r
			}
		}
		return v
	}
	if c.lifo {
		return c.running[len(c.running)-1]
	}
	return c.running[0]
}

// preempt moves a running request back to the waiting queue for
// recomputation and returns its former index in the running list.
func (c *Core) preempt(v *sequence) int {
	idx := -1
	for i, r := range c.running {
		if r == v {
			idx = i
			break
		}
	}
	c.running = append(c.running[:idx], c.running[idx+1:]...)
	c.pool.Release(v.blocks)
	v.blocks = v.blocks[:0]
	v.c = 0
	v.cachedBlocks = 0
	v.status = statusPreempted
	v.numPreemptions++
	// Work scheduled for the victim earlier in this pass is undone.
	v.scheduled = false
	v.passTokens = 0
	v.passPrefill = false
	c.report.Preemptions++
	c.waiting.PushPreempted(v)
	return idx
}
