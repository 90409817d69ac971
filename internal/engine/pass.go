package engine

import (
	"math"
	"time"
)

// planPass turns the scheduling decisions of BeginPass into the pass's
// batches, modeled duration, KV event batch, FPM snapshot and gauges.
func (c *Core) planPass(start time.Time) time.Duration {
	var prefill, decode Welford
	prefillN, sumISL, sumPrefix, computed := 0, 0, 0, 0
	sumReadyCtx := 0
	emitting := 0
	for _, s := range c.running {
		if !s.scheduled {
			continue
		}
		if s.passPrefill {
			c.prefills = append(c.prefills, s)
			prefillN++
			sumISL += s.passPrefix + s.passTokens
			sumPrefix += s.passPrefix
			computed += s.passTokens
			prefill.Add(s.numPromptTokens)
		} else {
			decode.Add(s.passCtx)
		}
		if s.numComputedTokens == s.numTokens() {
			c.ready = append(c.ready, s)
			if s.numGeneratedTokens < len(s.planned) {
				emitting++
				sumReadyCtx += s.passCtx
			}
		}
	}
	decodeTokens := decode.Count()

	var prefillMs, decodeMs float64
	if prefillN > 0 {
		// The prefill term is charged for prefillN × (mean prompt length −
		// mean cached prefix), each mean truncated by integer division
		// before subtracting. That is Dynamo's mocker arithmetic, kept on
		// purpose so pass times match it to the nanosecond; it differs from
		// the exact new-token count (computed) by less than prefillN.
		T := prefillN * (sumISL/prefillN - sumPrefix/prefillN)
		if T > 0 {
			prefillMs = c.timing.PrefillMs(T) / c.prefillDiv
		}
	}
	if emitting > 0 && !math.IsInf(c.decodeDiv, 1) {
		decodeMs = c.timing.DecodeMs(c.kv.activeTokens(), c.kv.capacityTokens(), sumReadyCtx/emitting) / c.decodeDiv
	}
	d := time.Duration(math.Round((prefillMs + decodeMs) * float64(time.Millisecond)))
	d += c.loraLoadTime()

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
	c.report.IterationTokens = computed + decodeTokens

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
		}
		c.queuedStats(&snap)
		c.emitFPM(snap)
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

// Heartbeat emits an idle FPM heartbeat: a snapshot with no work that tells
// FPM consumers the rank is alive while idle.
func (c *Core) Heartbeat() {
	c.emitFPM(ForwardPassSnapshot{Rank: c.rank, Heartbeat: true})
}

// PassActive reports whether the pass begun last scheduled or finished
// anything; an inactive pass has nothing to sleep for or deliver.
func (c *Core) PassActive() bool { return c.cur.active }

// EndPass delivers the pass begun by BeginPass: one token per ready
// request whose planned output is not exhausted, then completions, then
// the observer's report. deadline is the modeled
// delivery time stamped on outputs; now is the engine clock reading used
// for metrics (equal to deadline in virtual time).
func (c *Core) EndPass(deadline, now time.Time) {
	if !c.cur.active {
		return
	}
	c.captureSteps()
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
		id := s.planned[s.numGeneratedTokens]
		s.tokens = append(s.tokens, id)
		s.numGeneratedTokens++
		c.report.GenerationTokens++
		if s.numGeneratedTokens == 1 {
			s.firstToken = now
			c.report.First = append(c.report.First, FirstTokenRecord{
				PromptTokens: s.numPromptTokens, CachedTokens: s.cachedFirst,
				TTFT: now.Sub(s.arrival).Seconds(), HasToken: true})
		} else if !c.skipGaps {
			c.report.ITL = append(c.report.ITL, now.Sub(s.lastToken).Seconds())
		}
		s.lastToken = now
		c.noteToken(s)
		if s.req.Out != nil {
			s.req.Out.push(OutputItem{Choice: s.req.Choice, Token: id, Time: deadline})
		}
		if s.numGeneratedTokens == len(s.planned) || s.numTokens() >= c.cfg.MaxModelLen {
			s.status = statusFinished
			finished = true
		}
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
	for _, s := range c.running {
		s.scheduled, s.passPrefill, s.passTokens = false, false, 0
		s.passAdmitted, s.inspStep = false, 0
	}
	c.inspect(true, now)
	c.cur = passState{}
	c.report.Rank = c.rank
	if c.observer != nil {
		c.observer.ObservePass(&c.report)
		c.observer.ObserveGauges(c.gauges())
	}
	c.resetReport()
}
