package engine

import (
	"math"
	"slices"
	"time"
)

// planPass turns the scheduling decisions of BeginPass into the pass's
// batches, modeled duration, KV event batch, FPM snapshot and gauges.
func (c *Core) planPass(start time.Time) time.Duration {
	var prefill, decode Welford
	prefillN, sumISL, sumPrefix, computed := 0, 0, 0, 0
	newTimesCached := 0.0 // Σ over prompt chunks of new × cached tokens
	sumReadyCtx := 0
	emitting := 0
	drafted, maxDrafts := 0, 0
	var spec FPMSpecDecode
	pt := c.passTimer
	if pt != nil {
		c.pc.reset()
		c.pcAdapters = c.pcAdapters[:0]
	}
	for _, s := range c.running {
		if !s.scheduled {
			continue
		}
		if pt != nil {
			c.describe(s)
		}
		if s.passPrefill {
			c.prefills = append(c.prefills, s)
			prefillN++
			sumISL += s.passPrefix + s.passTokens
			sumPrefix += s.passPrefix
			computed += s.passTokens
			newTimesCached += float64(s.passTokens) * float64(s.passPrefix)
			prefill.Add(s.numPromptTokens)
		} else {
			decode.Add(s.passCtx)
			drafted += s.passDrafts
			maxDrafts = max(maxDrafts, s.passDrafts)
			if s.passDrafts > 0 {
				spec.NumDrafts++
				spec.NumAccepted += s.passAccepted
			}
		}
		if s.numComputedTokens == s.numTokens() {
			c.ready = append(c.ready, s)
			// A disaggregated prefill's one token costs no decode term: it
			// is sampled at the end of the prompt's pass.
			if s.numGeneratedTokens < len(s.planned) && s.req.Handoff == nil {
				emitting++
				sumReadyCtx += s.passCtx
			}
		}
	}
	decodeTokens := decode.Count()

	var prefillMs, decodeMs float64
	if pt != nil {
		// One price for the whole pass: prefill and decode tokens share
		// its GEMMs. decode_speedup_ratio applies to passes without prompt
		// tokens, speedup_ratio to all.
		div := c.prefillDiv
		if prefillN == 0 {
			div = c.decodeDiv
		}
		if computed+decodeTokens > 0 && !math.IsInf(div, 1) {
			ms := pt.PassMs(&c.pc)
			if maxDrafts > 0 && c.pc.Decodes > 0 {
				// The drafter: draft_cost_ratio × the longest draft × the
				// price of the pass's decodes alone (the verified draft
				// tokens are already in the pass's own price).
				d := &c.pcDraft
				*d = PassContents{Prefills: d.Prefills[:0], Decodes: c.pc.Decodes,
					DecodeCtxSum: c.pc.DecodeCtxSum, DecodeCtxMax: c.pc.DecodeCtxMax}
				ms += c.cfg.Speculative.DraftCostRatio * float64(maxDrafts) * pt.PassMs(d)
			}
			prefillMs = ms / div
		}
	} else if prefillN > 0 {
		// The prefill term is charged for prefillN × (mean prompt length −
		// mean cached prefix), each mean truncated by integer division
		// before subtracting. That is Dynamo's mocker arithmetic, kept on
		// purpose so pass times match it to the nanosecond; it differs from
		// the exact new-token count (computed) by less than prefillN.
		T := prefillN * (sumISL/prefillN - sumPrefix/prefillN)
		if T > 0 {
			prefillMs = c.timing.PrefillMs(T) / c.prefillDiv
		}
		if c.cachedTimer != nil && newTimesCached > 0 {
			prefillMs += c.cachedTimer.CachedPrefillMs(newTimesCached) / c.prefillDiv
		}
	}
	if pt == nil && emitting > 0 && !math.IsInf(c.decodeDiv, 1) {
		decodeMs = c.timing.DecodeMs(c.kv.activeTokens(), c.kv.capacityTokens(), sumReadyCtx/emitting) / c.decodeDiv
		if maxDrafts > 0 {
			decodeMs *= c.draftFactor(maxDrafts)
		}
	}
	d := saturatingDuration((prefillMs + decodeMs) * float64(time.Millisecond))
	d += c.loraLoadTime()
	d += c.kv.takeLoadTime()
	d += c.takeEncoderTime()
	c.report.Transfers = c.kv.takeTransfers(c.report.Transfers)

	scheduled := prefillN+decodeTokens > 0
	active := scheduled || len(c.ready) > 0
	if active {
		d += c.extraPassDelay
	}
	c.cur = passState{active: active, start: start, duration: d}
	if !c.cur.active {
		c.FlushReport() // rejections at the queue head
		return 0
	}
	c.report.IsPass = true
	c.report.Duration = d
	c.report.IterationTokens = computed + decodeTokens + drafted

	// KV events of the scheduling decisions go out when the pass starts,
	// before its tokens, as vLLM publishes them at the start of a step.
	c.publishEvents(start)
	if c.fpmSink != nil || c.observer != nil {
		snap := ForwardPassSnapshot{
			Rank:               c.rank,
			NumPrefillRequests: prefillN,
			SumPrefillTokens:   computed,
			VarPrefillLength:   prefill.Variance(),
			SumPrefillKVTokens: sumPrefix,
			NumDecodeRequests:  decodeTokens,
			SumDecodeKVTokens:  decode.Sum(),
			VarDecodeKVTokens:  decode.Variance(),
			WallTimeSecs:       d.Seconds(),
			NumHeldBlocks:      c.NumHeldBlocks(),
		}
		c.queuedStats(&snap)
		if c.cfg.Speculative.Enabled() {
			spec.NumDraftTokens = drafted
			c.emitFPMSpec(snap, spec)
		} else {
			c.emitFPM(snap)
		}
	}
	if c.observer != nil {
		c.observer.ObserveGauges(c.gauges())
	}
	return d
}

// queuedStats fills the queued-request fields of an FPM snapshot.
func (c *Core) queuedStats(snap *ForwardPassSnapshot) {
	var fresh, preempted Welford
	for i := 0; i < c.waiting.Len(); i++ {
		s := c.waiting.At(i)
		if s.status == statusWaiting {
			fresh.Add(s.numPromptTokens)
		} else {
			preempted.Add(s.numTokens())
		}
	}
	snap.NumQueuedPrefill = fresh.Count()
	snap.SumQueuedPrefillTokens = fresh.Sum()
	snap.VarQueuedPrefillLength = fresh.Variance()
	for _, s := range c.arriving {
		preempted.Add(s.numTokens())
	}
	snap.NumQueuedDecode = preempted.Count()
	snap.SumQueuedDecodeKVTokens = preempted.Sum()
	snap.VarQueuedDecodeKVTokens = preempted.Variance()
}

// emitFPM numbers a snapshot and hands it to the FPM sink.
func (c *Core) emitFPM(snap ForwardPassSnapshot) {
	c.fpmCounter++
	snap.CounterID = c.fpmCounter
	if c.fpmSink != nil {
		c.fpmSink.PublishFPM(snap)
	}
}

// emitFPMSpec is emitFPM for a pass with speculative decoding: sinks that
// take the speculative figures get them with the snapshot.
func (c *Core) emitFPMSpec(snap ForwardPassSnapshot, spec FPMSpecDecode) {
	c.fpmCounter++
	snap.CounterID = c.fpmCounter
	switch sink := c.fpmSink.(type) {
	case nil:
	case FPMSpecSink:
		sink.PublishFPMSpec(snap, spec)
	default:
		sink.PublishFPM(snap)
	}
}

// Heartbeat emits an idle FPM heartbeat: a snapshot with no work that tells
// FPM consumers the rank is alive while idle.
func (c *Core) Heartbeat() {
	c.emitFPM(ForwardPassSnapshot{Rank: c.rank, Heartbeat: true})
}

// PassActive reports whether the pass begun last scheduled or finished
// anything; an inactive pass has nothing to sleep for or deliver.
func (c *Core) PassActive() bool { return c.cur.active }

// EndPass delivers the pass begun by BeginPass and settles it
// (DeliverPass, then SettlePass). deadline is the modeled delivery time
// stamped on outputs; now is the engine clock reading used for metrics
// (equal to deadline in virtual time).
func (c *Core) EndPass(deadline, now time.Time) {
	if c.DeliverPass(deadline, now) {
		c.SettlePass(now)
	}
}

// DeliverPass delivers the pass begun by BeginPass: one token per ready
// request whose planned output is not exhausted, then completions, then it
// signals the output groups the pass made ready. False means the pass was
// inactive and there is nothing to settle. SettlePass must follow before
// the next BeginPass; the live actor lets the goroutines that write the
// delivered tokens run in between, so the pass's bookkeeping does not
// delay its tokens on a busy core.
func (c *Core) DeliverPass(deadline, now time.Time) bool {
	if !c.cur.active {
		return false
	}
	c.captureSteps()
	c.passWakes = &c.wakes
	finished := false
	for _, s := range c.ready {
		if s.status != statusRunning {
			continue
		}
		if s.numGeneratedTokens >= len(s.planned) {
			// Zero-output request: completes with its prompt, no token.
			c.report.First = append(c.report.First, FirstTokenRecord{
				PromptTokens: s.numPromptTokens, CachedTokens: s.cachedFirst})
			s.status = statusFinished
			finished = true
			continue
		}
		if s.numGeneratedTokens == 0 {
			s.firstToken = now
			c.report.First = append(c.report.First, FirstTokenRecord{
				PromptTokens: s.numPromptTokens, CachedTokens: s.cachedFirst,
				TTFT: now.Sub(s.arrival).Seconds(), HasToken: true})
		} else if !c.skipGaps {
			// One gap per pass, however many tokens it brings (vLLM
			// observes inter-token latency per engine step).
			c.report.ITL = append(c.report.ITL, now.Sub(s.lastToken).Seconds())
		}
		s.lastToken = now
		// A pass brings one token, or with speculative decoding the
		// accepted drafts plus the bonus token, all at the deadline.
		n := 1
		if s.passDrafts > 0 {
			n += s.passAccepted
			c.report.Spec.observe(s.passDrafts, s.passAccepted)
		}
		emitted := 0
		run := c.outRun[:0]
		for emitted < n {
			id := s.planned[s.numGeneratedTokens]
			s.tokens = append(s.tokens, id)
			s.numGeneratedTokens++
			emitted++
			c.report.GenerationTokens++
			if out := s.req.Out; out != nil {
				if n == 1 {
					out.push(OutputItem{Choice: s.req.Choice, Token: id, Time: deadline}, c.passWakes)
				} else {
					run = append(run, OutputItem{Choice: s.req.Choice, Token: id, Time: deadline})
				}
			}
			if s.numGeneratedTokens == len(s.planned) || s.numTokens() >= c.cfg.MaxModelLen {
				// Accepted tokens beyond the end are dropped, as vLLM
				// truncates a step's output at the stop condition.
				s.status = statusFinished
				finished = true
				break
			}
		}
		if len(run) > 0 {
			s.req.Out.pushRun(run, c.passWakes)
			c.outRun = run
		}
		c.noteTokens(s, emitted)
		// The accepted drafts' KV was written by the verification; only
		// the last token delivered still needs computing.
		s.numComputedTokens += emitted - 1
		s.passDrafts, s.passAccepted = 0, 0
	}
	if finished {
		kept := c.running[:0]
		for _, s := range c.running {
			if s.status != statusFinished {
				kept = append(kept, s)
				continue
			}
			reason := s.finishReason
			if s.numGeneratedTokens < len(s.planned) {
				reason = FinishLength // cut short by the context limit
			}
			c.finish(s, reason, now)
		}
		for i := len(kept); i < len(c.running); i++ {
			c.running[i] = nil
		}
		c.running = kept
	}
	c.passWakes = nil
	c.wakes.signal()
	return true
}

// SettlePass does the bookkeeping of the pass DeliverPass delivered: the
// pass's KV events, the inspector's trace and the observer's report.
func (c *Core) SettlePass(now time.Time) {
	for _, s := range c.running {
		s.scheduled, s.passPrefill, s.passTokens = false, false, 0
		s.passAdmitted, s.inspStep = false, 0
	}
	// Completions may have cached blocks (SGLang inserts a finished
	// request's tokens into its radix tree); publish them with this pass,
	// as SGLang flushes its event queue after each iteration. The vLLM pool
	// records nothing here, so its batches are unchanged.
	c.publishEvents(now)
	c.advanceDrain(now) // a mode=wait sleep whose last running request just finished
	c.inspect(true, now)
	c.cur = passState{}
	c.report.Rank = c.rank
	if c.observer != nil {
		c.observer.ObservePass(&c.report)
		c.observer.ObserveGauges(c.gauges())
	}
	c.resetReport()
}

// describe adds a scheduled sequence's work to the pass description of a
// PassTimer.
func (c *Core) describe(s *sequence) {
	pc := &c.pc
	tokens := s.passTokens
	if s.passPrefill {
		pc.Prefills = append(pc.Prefills, PrefillChunk{NewTokens: s.passTokens, CachedTokens: s.passPrefix})
	} else {
		pc.Decodes++
		pc.DecodeCtxSum += s.passCtx
		pc.DecodeCtxMax = max(pc.DecodeCtxMax, s.passCtx)
		pc.DraftTokens += s.passDrafts
		tokens = 1 + s.passDrafts
	}
	if s.req.Adapter.ID != 0 {
		pc.LoRATokens += tokens
		if !slices.Contains(c.pcAdapters, s.req.Adapter.ID) {
			c.pcAdapters = append(c.pcAdapters, s.req.Adapter.ID)
			pc.LoRAs++
		}
	}
}
