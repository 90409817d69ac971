package engine

import (
	"math/rand/v2"
	"slices"
	"time"
)

// sglangScheduler is SGLang's scheduler loop (scheduler.py
// get_next_batch_to_run with schedule_policy.py's PrefillAdder and
// schedule_batch.py's retract_decode), over the radix cache:
//
//   - A pass is either a prefill ("extend") batch or a decode batch, never
//     both: whenever a prefill batch can be formed it runs, and the running
//     requests wait (SGLang without --enable-mixed-chunk).
//   - A prefill batch continues the request whose prompt is being chunked,
//     then takes waiting requests in policy order while the memory estimate
//     (free + evictable tokens, minus new_token_ratio × the running
//     requests' remaining output), the prefill token budget, the chunk size
//     and max_running_requests allow.
//   - A decode batch advances every running request by one token. When the
//     pool cannot hold the next token of every request, requests are
//     retracted (fewest output tokens first, longest prompt among equals)
//     until 20 decode steps per remaining request fit; they go back to the
//     waiting queue and recompute everything past their cached prompt.
//   - new_token_ratio starts at 0.7 × conservativeness, decays linearly to
//     14 % of that over 600 decode passes, is re-estimated after a
//     retraction and reset when the engine goes idle.
type sglangScheduler struct {
	core *Core
	kv   *radixManager
	cfg  SGLangConfig

	ratio, initRatio, minRatio, decay float64

	// chunked is the request whose prompt is being prefilled in chunks; it
	// sits in the running list but is not decoded until its prefill ends.
	chunked *sequence
	// batchFull stops prefill attempts after the memory estimate or
	// max_running_requests said no, until a running request leaves
	// (fullRunning is the decode batch size at that moment).
	batchFull   bool
	fullRunning int

	rng *rand.Rand

	// Scratch.
	prefills []*sequence
	decodes  []*sequence
	order    []*sequence
}

func newSGLangScheduler(c *Core) *sglangScheduler {
	cfg := c.cfg.SGLang.resolved(c.cfg.MaxNumSeqs)
	g := &sglangScheduler{
		core: c,
		kv:   c.kv.radix,
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.RandomSeed, 0x5e1a)),
	}
	g.initRatio, g.minRatio, g.decay = newTokenRatios(cfg.ScheduleConservativeness)
	g.ratio = g.initRatio
	return g
}

// NewTokenRatio returns the SGLang scheduler's current new_token_ratio
// (0 for the other engines).
func (c *Core) NewTokenRatio() float64 {
	if g, ok := c.scheduler.(*sglangScheduler); ok {
		return g.ratio
	}
	return 0
}

// schedule runs one SGLang pass: a prefill batch if one can be formed,
// else a decode batch, else nothing.
func (g *sglangScheduler) schedule(start time.Time) {
	if len(g.core.running) == 0 {
		// SGLang resets the ratio whenever its loop finds nothing to run;
		// with no running request the ratio reserves nothing, so resetting
		// at the first pass after idling is the same.
		g.ratio = g.initRatio
	}
	if g.chunked != nil && g.chunked.status != statusRunning {
		g.chunked = nil // cancelled mid-prefill
	}
	if g.batchFull && g.numDecoding() < g.fullRunning {
		g.batchFull = false // a request left the running batch
	}
	if g.prefill(start) {
		return
	}
	g.decode(start)
}

// numDecoding counts the running requests past their prefill.
func (g *sglangScheduler) numDecoding() int {
	n := len(g.core.running)
	if g.chunked != nil {
		n--
	}
	return n
}

func (g *sglangScheduler) setFull() {
	g.batchFull = true
	g.fullRunning = g.numDecoding()
}

// addResult is PrefillAdder's verdict after adding a request.
type addResult uint8

const (
	addContinue addResult = iota
	addNoToken            // out of memory: the batch is full
	addOther              // out of prefill or chunk budget
)

// prefillBudget is PrefillAdder's accounting. Memory is what the radix
// cache could give (free + evictable, read live because locking a prefix
// moves its tokens out of the evictable count) minus the offsets the
// batch has claimed so far.
type prefillBudget struct {
	kv          *radixManager
	totalOffset float64 // rem_total_token_offset
	curOffset   int     // cur_rem_token_offset
	remInput    int     // rem_input_tokens
	remChunk    int     // rem_chunk_tokens, when chunking
	chunking    bool
}

func (b *prefillBudget) remTotal() float64 { return float64(b.kv.available()) - b.totalOffset }

// update is _update_prefill_budget: extend tokens (page-rounded) and the
// output reserved for a request that will decode.
func (b *prefillBudget) update(extend, reserve int) {
	b.totalOffset += float64(extend + reserve)
	b.curOffset += extend
	b.remInput -= extend
	b.remChunk -= extend
}

// state is budget_state.
func (b *prefillBudget) state() addResult {
	if b.remTotal() <= 0 || b.kv.available()-b.curOffset <= 0 {
		return addNoToken
	}
	if b.remInput <= 0 || (b.chunking && b.remChunk <= 0) {
		return addOther
	}
	return addContinue
}

// clippedOutput is min(max_new_tokens, CLIP_MAX_NEW_TOKENS).
func (g *sglangScheduler) clippedOutput(n int) int { return min(n, g.cfg.ClipMaxNewTokens) }

// prefill forms and schedules a prefill batch (get_new_batch_prefill);
// it reports whether one was formed.
func (g *sglangScheduler) prefill(start time.Time) bool {
	c := g.core
	if (g.batchFull || c.waiting.Len() == 0) && g.chunked == nil {
		return false
	}
	if g.numDecoding() >= g.cfg.MaxRunningRequests {
		g.setFull()
		return false
	}
	if c.waiting.Len() > 0 {
		g.orderWaiting()
	}
	b := prefillBudget{
		kv:       g.kv,
		remInput: g.cfg.MaxPrefillTokens,
		remChunk: g.cfg.ChunkedPrefillSize,
		chunking: g.cfg.ChunkedPrefillSize > 0,
	}
	for _, s := range c.running {
		if s != g.chunked {
			b.totalOffset += float64(g.clippedOutput(s.maxOutput-s.numGeneratedTokens)) * g.ratio
		}
	}
	g.prefills = g.prefills[:0]
	if s := g.chunked; s != nil {
		// add_chunked_req: the next chunk, as much as the chunk budget allows.
		extend := s.numTokens() - s.numComputedTokens
		chunk := extend
		if b.chunking {
			chunk = min(extend, b.remChunk)
		}
		reserve := 0
		if chunk == extend {
			reserve = g.clippedOutput(s.maxOutput)
			g.chunked = nil
		}
		g.schedulePrefill(s, chunk)
		c.report.PrefixQueries += chunk
		b.update(g.kv.paged(chunk), reserve)
	}
	allocatable := g.cfg.MaxRunningRequests - g.numDecoding()
	for i := 0; i < c.waiting.Len(); {
		if len(g.prefills) >= allocatable {
			g.setFull()
			break
		}
		s := c.waiting.At(i)
		if s.arrival.After(start) {
			i++ // arrived after this pass began: the next pass takes it
			continue
		}
		if s.status == statusWaiting {
			if r := c.kv.rejection(s.numPromptTokens, s.maxOutput); r != nil {
				c.waiting.RemoveAt(i)
				c.reject(s, r)
				continue
			}
		}
		g.kv.match(s)
		res, added := g.addOne(s, &b)
		if added {
			c.waiting.RemoveAt(i)
			g.admit(s, start)
		}
		if res != addContinue {
			if res == addNoToken {
				g.setFull()
			}
			break
		}
	}
	if len(g.prefills) == 0 {
		return false
	}
	g.allocatePrefills()
	return len(g.prefills) > 0
}

// addOne is PrefillAdder.add_one_req for a matched waiting sequence. It
// reports the budget state and whether the sequence joined the batch
// (possibly as the new chunked request).
func (g *sglangScheduler) addOne(s *sequence, b *prefillBudget) (addResult, bool) {
	prefix := s.radix.matchLen
	extend := s.numTokens() - prefix
	total := extend + g.clippedOutput(s.maxOutput)
	input := g.kv.paged(extend)
	if float64(total) >= b.remTotal() {
		return addNoToken, false
	}
	if input >= b.remInput && len(g.prefills) != 0 {
		return addOther, false
	}
	// Lock the prefix while checking: its tokens stop counting as
	// evictable, so the estimate may drop (SGLang's _lock_node).
	g.kv.tree.IncLock(s.radix.matchNode)
	defer g.kv.tree.DecLock(s.radix.matchNode)
	if float64(total) >= b.remTotal() {
		return addNoToken, false
	}
	chunk, reserve := extend, g.clippedOutput(s.maxOutput)
	if b.chunking && input > b.remChunk {
		chunk = b.remChunk / g.kv.pageSize * g.kv.pageSize
		if chunk <= 0 {
			return addOther, false
		}
		reserve = 0
		g.chunked = s
	}
	g.kv.lockMatch(s)
	s.numComputedTokens = prefix
	g.schedulePrefill(s, chunk)
	c := g.core
	c.report.PrefixQueries += prefix + chunk
	c.report.PrefixHits += prefix
	b.update(g.kv.paged(chunk), reserve)
	return b.state(), true
}

// admit moves a sequence that joined the prefill batch into the running
// list.
func (g *sglangScheduler) admit(s *sequence, start time.Time) {
	c := g.core
	s.status = statusRunning
	c.running = append(c.running, s)
	if !s.firstAdmitted {
		s.firstAdmitted = true
		s.firstScheduled = start
		s.cachedFirst = s.passPrefix
	}
}

// schedulePrefill marks chunk more tokens of s computed this pass.
func (g *sglangScheduler) schedulePrefill(s *sequence, chunk int) {
	s.scheduled = true
	s.passPrefill = true
	s.passPrefix = s.numComputedTokens
	s.passTokens = chunk
	s.numComputedTokens += chunk
	s.passCtx = s.numTokens()
	g.prefills = append(g.prefills, s)
}

// allocatePrefills allocates the batch's pages once it is formed
// (prepare_for_extend), then caches the computed prompt pages in the tree
// (cache_unfinished_req) so later batches can hit them. A request whose
// pages cannot be found after all (page rounding the estimate did not see)
// goes back to the head of the waiting queue.
func (g *sglangScheduler) allocatePrefills() {
	c := g.core
	kept := g.prefills[:0]
	for _, s := range g.prefills {
		have := s.radix.prefixLen/g.kv.pageSize + s.radix.privatePages
		if g.kv.allocate(s, g.kv.pages(s.numComputedTokens)-have) {
			kept = append(kept, s)
			continue
		}
		if g.chunked == s {
			g.chunked = nil
		}
		i := slices.Index(c.running, s)
		c.running = slices.Delete(c.running, i, i+1)
		g.kv.free(s)
		s.numComputedTokens = 0
		s.scheduled, s.passPrefill, s.passTokens = false, false, 0
		s.status = statusPreempted
		c.waiting.PushPreempted(s)
		g.setFull()
	}
	g.prefills = kept
	for _, s := range g.prefills {
		g.kv.cacheComputed(s)
	}
}

// decode schedules one decode step for every running request, retracting
// requests first when the pool cannot hold the step (update_running_batch);
// it reports whether anything was scheduled.
func (g *sglangScheduler) decode(start time.Time) bool {
	c := g.core
	if len(c.running) == 0 {
		return false
	}
	need := g.decodePages() * g.kv.pageSize
	if short := need - g.kv.tree.AvailableTokens(); short > 0 {
		g.kv.tree.Evict(short)
	}
	if g.kv.tree.AvailableTokens() < need {
		g.retract()
	} else {
		g.ratio = max(g.ratio-g.decay, g.minRatio)
	}
	for i := 0; i < len(c.running); i++ {
		s := c.running[i]
		if s == g.chunked {
			continue // prefilled by prefill batches only
		}
		if !g.kv.allocate(s, g.decodePagesOf(s)) {
			// Only one request is left and the pool cannot hold its next
			// token: SGLang gives up on it.
			c.log.Warn("sglang: no KV space left for the only running request", "request", s.req.ID)
			c.running = slices.Delete(c.running, i, i+1)
			i--
			c.finish(s, FinishAbort, start)
			continue
		}
		s.scheduled = true
		s.passTokens = 1
		s.numComputedTokens++
		s.passCtx = s.numTokens()
	}
	return len(c.running) > 0
}

// decodePagesOf is 1 when s's next token starts a new page.
func (g *sglangScheduler) decodePagesOf(s *sequence) int {
	if s.numComputedTokens >= s.radix.prefixLen+s.radix.privatePages*g.kv.pageSize {
		return 1
	}
	return 0
}

// decodePages is the pages the next decode step needs.
func (g *sglangScheduler) decodePages() int {
	n := 0
	for _, s := range g.core.running {
		if s != g.chunked {
			n += g.decodePagesOf(s)
		}
	}
	return n
}

// retract is retract_decode: running requests are ordered by (output
// tokens, −prompt tokens) descending and retracted from the end — the
// fewest output tokens first, the longest prompt among equals — at least
// one, until the free pool holds retract_decode_steps tokens per remaining
// request or one request is left. Each retracted request frees everything
// past its cached prefix and queues at the back. new_token_ratio becomes
// (tokens decoded + 20 × remaining) / Σ max_new_tokens over the remaining
// requests, capped at 1.
func (g *sglangScheduler) retract() {
	c := g.core
	order := g.decodes[:0]
	for _, s := range c.running {
		if s != g.chunked {
			order = append(order, s)
		}
	}
	order = retractOrder(order)
	for first := true; first || g.kv.tree.AvailableTokens() < sglangRetractDecodeSteps*len(order); first = false {
		if len(order) == 1 {
			break
		}
		victim := order[len(order)-1]
		order = order[:len(order)-1]
		c.preempt(victim)
		c.waiting.Remove(victim)
		c.waiting.PushBack(victim) // SGLang appends retracted requests
		if want := sglangRetractDecodeSteps * len(order); g.kv.tree.AvailableTokens() < want {
			g.kv.tree.Evict(want - g.kv.tree.AvailableTokens())
		}
	}
	decoded, maxNew := 0, 0
	for _, s := range order {
		decoded += s.numGeneratedTokens
		maxNew += s.maxOutput
	}
	if maxNew > 0 {
		g.ratio = min(1, float64(decoded+sglangRetractDecodeSteps*len(order))/float64(maxNew))
	}
	g.decodes = order[:0]
	c.log.Info("sglang: KV cache pool is full, retracted requests", "running", len(c.running), "new_token_ratio", g.ratio)
}

// retractOrder sorts running requests by (output tokens, −prompt tokens)
// descending, so that retract_decode pops its victims from the end: the
// fewest output tokens first, the longest prompt among equals. Python's
// reverse=True sort keeps equal keys in their original order, so of full
// ties the last admitted goes first; the stable sort does the same.
func retractOrder(order []*sequence) []*sequence {
	slices.SortStableFunc(order, func(a, b *sequence) int {
		if a.numGeneratedTokens != b.numGeneratedTokens {
			return b.numGeneratedTokens - a.numGeneratedTokens
		}
		return a.numPromptTokens - b.numPromptTokens
	})
	return order
}

// paged rounds n tokens up to whole pages (ceil_paged_tokens).
func (m *radixManager) paged(n int) int { return ceilDiv(n, m.pageSize) * m.pageSize }
