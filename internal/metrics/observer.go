package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Indexes of PassReport.KVEvents (kv.EventKind).
const (
	kvStored     = int(kv.Stored)
	kvRemoved    = int(kv.Removed)
	kvAllCleared = int(kv.AllCleared)
)

// genWindow is the number of passes sglang:gen_throughput averages over.
const genWindow = 40

// rankObserver is one DP rank's engine.Observer and engine.FPMSink. Its
// methods run on the rank's engine goroutine; the children it updates are
// safe to scrape concurrently.
type rankObserver struct {
	rank         int
	sglangEngine bool

	v     *vllmRank        // nil unless the vLLM family is exported
	s     *sglangRank      // nil unless the SGLang family is exported
	lora  *loraInfo        // nil unless the vLLM family is exported with LoRA
	so    *specOffloadRank // nil unless speculative decoding or offload tiers are on
	pd    *pdRank          // nil unless the worker serves disaggregated requests
	sleep *sleepRank       // nil unless sleep mode is on with the vLLM family
	// blockSize converts the GPU prefix hits (tokens) into blocks.
	blockSize int

	passes, passSeconds, rejected prometheus.Counter
	kvEvents                      [4]prometheus.Counter // by kv.EventKind; [0] unused
	fpm                           [numFPMFields]prometheus.Gauge
	fpmPass, fpmHeartbeat         prometheus.Counter
	lag                           prometheus.Observer
	// kvBlocks are mocker_kv_cache_blocks by state (kvblocks.go).
	kvBlocks kvBlockGauges

	// sglang:gen_throughput window (engine goroutine only).
	totalKVTokens float64
	win           [genWindow]winPass
	winPos        int
	winLen        int
	winTokens     int
	winSecs       float64
}

type winPass struct {
	tokens int
	secs   float64
}

var (
	_ engine.Observer = (*rankObserver)(nil)
	_ engine.FPMSink  = (*rankObserver)(nil)
)

// ObserveGauges implements engine.Observer.
func (o *rankObserver) ObserveGauges(g engine.Gauges) {
	// Gauges.Waiting counts never-scheduled and preempted requests;
	// WaitingDeferred (remote KV) comes on top (engine/observer.go).
	waiting := g.Waiting + g.WaitingDeferred
	o.kvBlocks.observe(g)
	if o.pd != nil {
		o.pd.held.Set(float64(g.HeldBlocks))
	}
	if v := o.v; v != nil {
		v.running.Set(float64(g.Running))
		v.waiting.Set(float64(waiting))
		v.waitCapacity.Set(float64(g.Waiting))
		v.waitDeferred.Set(float64(g.WaitingDeferred))
		v.kvUsage.Set(g.KVUsage)
		if v.gpuCacheUsage != nil {
			v.gpuCacheUsage.Set(g.KVUsage)
		}
		if o.lora != nil {
			o.lora.observe(g)
		}
		if o.so != nil {
			o.so.observeGauges(g)
		}
		if o.sleep != nil {
			o.sleep.observe(g.Sleep)
		}
	}
	if s := o.s; s != nil {
		s.running.Set(float64(g.Running))
		s.queue.Set(float64(waiting))
		s.tokenUsage.Set(g.KVUsage)
		s.usedTokens.Set(float64(int64(g.KVUsage*o.totalKVTokens + 0.5)))
		if g.Running == 0 && waiting == 0 {
			o.winPos, o.winLen, o.winTokens, o.winSecs = 0, 0, 0, 0
			s.genThroughput.Set(0)
		}
	}
}

// ObservePass implements engine.Observer.
func (o *rankObserver) ObservePass(r *engine.PassReport) {
	if r.IsPass {
		o.passes.Inc()
		if r.Duration > 0 {
			o.passSeconds.Add(r.Duration.Seconds())
		}
	}
	if r.Rejected > 0 {
		o.rejected.Add(float64(r.Rejected))
	}
	for k := kvStored; k <= kvAllCleared; k++ {
		if n := r.KVEvents[k]; n > 0 {
			o.kvEvents[k].Add(float64(n))
		}
	}
	if o.v != nil {
		o.observeVLLM(r)
	}
	if o.so != nil {
		o.so.observePass(r, o.blockSize)
	}
	if o.pd != nil {
		o.pd.observe(r)
	}
	if o.s != nil {
		o.observeSGLang(r)
	}
}

func (o *rankObserver) observeVLLM(r *engine.PassReport) {
	v := o.v
	if r.IsPass && r.IterationTokens >= 1 {
		v.iter.Observe(float64(r.IterationTokens))
	}
	// SGLang never preempts in the vLLM sense: its retractions (reported as
	// preemptions by the engine) go to sglang:num_retracted_reqs only.
	if r.Preemptions > 0 && !o.sglangEngine {
		v.preemptions.Add(float64(r.Preemptions))
	}
	if r.PrefixQueries > 0 {
		v.pcQueries.Add(float64(r.PrefixQueries))
		if v.gpuPCQueries != nil {
			v.gpuPCQueries.Add(float64(r.PrefixQueries))
		}
	}
	if r.PrefixHits > 0 {
		v.pcHits.Add(float64(r.PrefixHits))
		if v.gpuPCHits != nil {
			v.gpuPCHits.Add(float64(r.PrefixHits))
		}
	}
	if len(r.First) > 0 {
		prompt, cached := 0, 0
		for i := range r.First {
			f := &r.First[i]
			prompt += f.PromptTokens
			cached += f.CachedTokens
			if f.HasToken {
				v.ttft.Observe(f.TTFT)
			}
		}
		if prompt > 0 {
			v.promptTokens.Add(float64(prompt))
		}
		if cached > 0 {
			v.promptCached.Add(float64(cached))
		}
	}
	if r.GenerationTokens > 0 {
		v.genTokens.Add(float64(r.GenerationTokens))
	}
	v.itl.observeAll(r.ITL)
	for i := range r.Finished {
		o.finishVLLM(&r.Finished[i])
	}
}

// finishVLLM makes the finish-time observations of one sequence (latency
// phases, token counts, preemptions), skipping intervals whose end never
// happened.
func (o *rankObserver) finishVLLM(f *engine.FinishedRecord) {
	v := o.v
	v.success[reasonIndex(f.Reason)].Inc()
	v.e2e.Observe(seconds(f.Finished, f.Arrival))
	scheduled := !f.FirstScheduled.IsZero()
	if scheduled {
		v.queue.Observe(seconds(f.FirstScheduled, f.Arrival))
	}
	if !f.FirstToken.IsZero() {
		if scheduled {
			v.prefill.Observe(seconds(f.FirstToken, f.FirstScheduled))
		}
		if !f.LastToken.IsZero() {
			decode := seconds(f.LastToken, f.FirstToken)
			v.decode.Observe(decode)
			if f.Generated >= 2 {
				v.tpotReq.Observe(decode / float64(f.Generated-1))
			}
		}
	}
	if scheduled && !f.LastToken.IsZero() {
		v.inference.Observe(seconds(f.LastToken, f.FirstScheduled))
	}
	v.reqPrompt.Observe(float64(f.PromptTokens))
	v.reqGen.Observe(float64(f.Generated))
	v.reqKVComputed.Observe(float64(max(f.PromptTokens-f.CachedTokens, 0)))
	v.reqPreempt.Observe(float64(f.Preemptions))
}

func (o *rankObserver) observeSGLang(r *engine.PassReport) {
	s := o.s
	if r.IsPass {
		// cache_hit_rate: the latest pass that looked up the prefix cache.
		if r.PrefixQueries > 0 {
			s.hitRate.Set(float64(r.PrefixHits) / float64(r.PrefixQueries))
		}
		s.retracted.Set(float64(r.Preemptions))
		o.addWindow(r.GenerationTokens, r.Duration.Seconds())
		if o.winSecs > 0 {
			s.genThroughput.Set(float64(o.winTokens) / o.winSecs)
		} else {
			s.genThroughput.Set(0)
		}
	}
	for i := range r.First {
		if f := &r.First[i]; f.HasToken {
			s.ttft.Observe(f.TTFT)
		}
	}
	s.itl.observeAll(r.ITL)
	for i := range r.Finished {
		f := &r.Finished[i]
		s.requests.Inc()
		if f.Reason == engine.FinishAbort {
			s.aborted.Inc()
		}
		if f.PromptTokens > 0 {
			s.prompt.Add(float64(f.PromptTokens))
		}
		if f.Generated > 0 {
			s.gen.Add(float64(f.Generated))
		}
		if f.CachedTokens > 0 {
			s.cached.Add(float64(f.CachedTokens))
		}
		s.e2e.Observe(seconds(f.Finished, f.Arrival))
		if !f.FirstScheduled.IsZero() {
			s.queueTime.Observe(seconds(f.FirstScheduled, f.Arrival))
		}
	}
}

// addWindow pushes one pass into the gen_throughput window and recomputes
// its totals (40 additions; no floating-point drift from subtraction).
func (o *rankObserver) addWindow(tokens int, secs float64) {
	o.win[o.winPos] = winPass{tokens: tokens, secs: secs}
	o.winPos = (o.winPos + 1) % genWindow
	if o.winLen < genWindow {
		o.winLen++
	}
	o.winTokens, o.winSecs = 0, 0
	for i := range o.winLen {
		o.winTokens += o.win[i].tokens
		o.winSecs += o.win[i].secs
	}
}

// reasonIndex maps a finish reason to its request_success child; unknown
// reasons count as "error".
func reasonIndex(reason engine.FinishReason) int {
	switch reason {
	case engine.FinishStop:
		return reasonStop
	case engine.FinishLength:
		return reasonLength
	case engine.FinishAbort:
		return reasonAbort
	default:
		return reasonError
	}
}

// seconds returns end − start in seconds.
func seconds(end, start time.Time) float64 { return end.Sub(start).Seconds() }

// PublishFPM implements engine.FPMSink: it sets every mocker_fpm_* gauge of
// the rank from the snapshot and counts it by kind.
func (o *rankObserver) PublishFPM(s engine.ForwardPassSnapshot) {
	g := &o.fpm
	g[fpmNumPrefillRequests].Set(float64(s.NumPrefillRequests))
	g[fpmSumPrefillTokens].Set(float64(s.SumPrefillTokens))
	g[fpmVarPrefillLength].Set(s.VarPrefillLength)
	g[fpmSumPrefillKVTokens].Set(float64(s.SumPrefillKVTokens))
	g[fpmNumDecodeRequests].Set(float64(s.NumDecodeRequests))
	g[fpmSumDecodeKVTokens].Set(float64(s.SumDecodeKVTokens))
	g[fpmVarDecodeKVTokens].Set(s.VarDecodeKVTokens)
	g[fpmNumQueuedPrefill].Set(float64(s.NumQueuedPrefill))
	g[fpmSumQueuedPrefillTokens].Set(float64(s.SumQueuedPrefillTokens))
	g[fpmVarQueuedPrefillLength].Set(s.VarQueuedPrefillLength)
	g[fpmNumQueuedDecode].Set(float64(s.NumQueuedDecode))
	g[fpmSumQueuedDecodeKVTokens].Set(float64(s.SumQueuedDecodeKVTokens))
	g[fpmVarQueuedDecodeKVTokens].Set(s.VarQueuedDecodeKVTokens)
	g[fpmWallTimeSecs].Set(s.WallTimeSecs)
	g[fpmCounterID].Set(float64(s.CounterID))
	if s.Heartbeat {
		o.fpmHeartbeat.Inc()
	} else {
		o.fpmPass.Inc()
	}
}

// FPMSink returns the sink that mirrors rank's forward-pass snapshots into
// the mocker_fpm_* gauges. It panics if rank is out of range.
func (r *Registry) FPMSink(rank int) engine.FPMSink { return r.rank(rank) }

// TeeFPM returns a sink that hands each snapshot to every non-nil sink in
// order (e.g. the metrics gauges and the ZMQ publisher). It returns nil when
// no sink is given and the sink itself when only one is.
func TeeFPM(sinks ...engine.FPMSink) engine.FPMSink {
	var out teeFPM
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type teeFPM []engine.FPMSink

func (t teeFPM) PublishFPM(s engine.ForwardPassSnapshot) {
	for _, sink := range t {
		sink.PublishFPM(s)
	}
}

// PublishFPMSpec hands the speculative figures to the sinks that take
// them and the bare snapshot to the others.
func (t teeFPM) PublishFPMSpec(s engine.ForwardPassSnapshot, spec engine.FPMSpecDecode) {
	for _, sink := range t {
		if ss, ok := sink.(engine.FPMSpecSink); ok {
			ss.PublishFPMSpec(s, spec)
		} else {
			sink.PublishFPM(s)
		}
	}
}
