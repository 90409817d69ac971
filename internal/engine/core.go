package engine

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Core is one DP rank's engine state and scheduler as a synchronous state
// machine: callers Submit and Cancel, then alternate BeginPass (schedule and
// model the duration) and EndPass (deliver tokens and completions). It does
// no I/O, reads no clock and never sleeps; the live actor (Engine) and the
// virtual-time Simulator drive it. Not safe for concurrent use.
type Core struct {
	cfg       *config.Config
	rank      int
	engine    string // engine type
	bs        int
	numBlocks int
	trtllm    bool
	lifo      bool
	priority  bool

	pool   *kv.Pool
	hasher *kv.Hasher
	timing TimingModel

	prefillDiv float64 // divisor of the prefill term; +Inf = no delay
	decodeDiv  float64 // divisor of the decode term; +Inf = no delay

	waiting waitQueue
	running []*sequence
	byID    map[uint64]*sequence

	kvSink   KVEventSink
	fpmSink  FPMSink
	observer Observer
	log      *slog.Logger

	fpmCounter uint64

	// Scratch reused across passes so steady-state passes do not allocate.
	hits     []kv.BlockID
	ready    []*sequence
	prefills []*sequence
	report   PassReport
	cur      passState
}

// passState is what BeginPass decided and EndPass carries out.
type passState struct {
	active   bool
	start    time.Time
	duration time.Duration
}

// CoreOptions are a Core's collaborators; every field may be nil.
type CoreOptions struct {
	Rank     int
	Timing   TimingModel // nil: built from the configuration
	KVSink   KVEventSink
	FPMSink  FPMSink
	Observer Observer
	Logger   *slog.Logger
}

// NewCore builds a rank's engine state from a validated configuration.
func NewCore(cfg *config.Config, opts CoreOptions) (*Core, error) {
	bs := cfg.EffectiveBlockSize()
	timing := opts.Timing
	if timing == nil {
		var err error
		if timing, err = NewTimingModel(cfg, nil); err != nil {
			return nil, fmt.Errorf("engine rank %d: %w", opts.Rank, err)
		}
	}
	var hasher *kv.Hasher
	if cfg.EnablePrefixCaching {
		var err error
		if hasher, err = kv.NewHasher(cfg.PrefixCachingHashAlgo, cfg.HashSeed, bs); err != nil {
			return nil, fmt.Errorf("engine rank %d: %w", opts.Rank, err)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Core{
		cfg:       cfg,
		rank:      opts.Rank,
		engine:    cfg.EngineType,
		bs:        bs,
		numBlocks: cfg.NumGPUBlocks,
		trtllm:    cfg.EngineType == config.EngineTRTLLM,
		lifo:      cfg.PreemptionMode != "fifo",
		priority:  cfg.SchedulingPolicy == "priority",
		pool:      kv.NewPool(cfg.NumGPUBlocks, bs, cfg.EnablePrefixCaching),
		hasher:    hasher,
		timing:    timing,
		byID:      make(map[uint64]*sequence),
		kvSink:    opts.KVSink,
		fpmSink:   opts.FPMSink,
		observer:  opts.Observer,
		log:       log,
	}
	if cfg.EngineType == config.EngineSGLang {
		// The SGLang scheduler and radix cache are a later milestone; say so
		// rather than pretend.
		log.Warn("engine_type sglang: the SGLang scheduler is not implemented yet; scheduling with the vLLM policy", "rank", opts.Rank)
	}
	c.waiting.byPriority = c.priority
	c.prefillDiv = divisor(cfg.SpeedupRatio)
	c.decodeDiv = c.prefillDiv * divisor(cfg.DecodeSpeedupRatio)
	return c, nil
}

// divisor maps a speedup ratio to the divisor applied to modeled times:
// 0 and +Inf mean "no delay" (an infinite divisor).
func divisor(ratio float64) float64 {
	if config.NoDelay(ratio) {
		return math.Inf(1)
	}
	return ratio
}

// Rank returns the DP rank.
func (c *Core) Rank() int { return c.rank }

// Pool exposes the rank's block pool for inspection (tests, invariants).
func (c *Core) Pool() *kv.Pool { return c.pool }

// NumRunning returns the length of the running list.
func (c *Core) NumRunning() int { return len(c.running) }

// NumWaiting returns the waiting queue length.
func (c *Core) NumWaiting() int { return c.waiting.Len() }

// Idle reports whether the rank has no waiting or running work.
func (c *Core) Idle() bool { return len(c.running) == 0 && c.waiting.Len() == 0 }

// Submit queues a request. Requests that can never run are rejected at once
// (their terminal signal is queued) — or, when they only fail the vLLM
// admission checks, when they reach the head of the queue (engine.md §4 B).
func (c *Core) Submit(r *Request) {
	s := &sequence{
		req:          r,
		planned:      r.PlannedOutput,
		p:            len(r.Prompt),
		maxOutput:    r.MaxOutputTokens,
		finishReason: r.FinishReason,
		arrival:      r.ArrivalTime,
	}
	if s.finishReason == "" {
		s.finishReason = FinishLength
	}
	if s.maxOutput < len(s.planned) {
		s.maxOutput = len(s.planned)
	}
	if s.p == 0 {
		c.reject(s)
		return
	}
	if c.trtllm {
		// TRT-LLM clamps the output to what the KV capacity and context can
		// hold, then reserves for it (engine.md §6).
		capacity := c.numBlocks * c.bs
		if s.p >= capacity {
			c.reject(s)
			return
		}
		limit := min(s.maxOutput, capacity-s.p, c.cfg.MaxModelLen-s.p)
		if limit < 0 {
			limit = 0
		}
		if limit < s.maxOutput {
			c.log.Debug("trtllm output clamped", "request", r.ID, "from", s.maxOutput, "to", limit)
			s.maxOutput = limit
		}
		if len(s.planned) > limit {
			s.planned = s.planned[:limit]
			s.finishReason = FinishLength
		}
	}
	s.tokens = make([]uint32, s.p, s.p+len(s.planned))
	copy(s.tokens, r.Prompt)
	if c.hasher != nil {
		s.chain = c.hasher.NewChain(r.CacheSalt)
	}
	c.byID[r.ID] = s
	c.waiting.PushBack(s)
}

// Cancel removes a request wherever it is, releases its blocks at once and
// queues its abort signal. Unknown or finished ids are ignored.
func (c *Core) Cancel(id uint64, now time.Time) {
	s, ok := c.byID[id]
	if !ok {
		return
	}
	if !c.waiting.Remove(s) {
		for i, r := range c.running {
			if r == s {
				c.running = append(c.running[:i], c.running[i+1:]...)
				break
			}
		}
	}
	c.finish(s, FinishAbort, now)
}

// reject ends a request that can never run (engine.md §8).
func (c *Core) reject(s *sequence) {
	delete(c.byID, s.req.ID)
	s.status = statusFinished
	c.report.Rejected++
	if s.req.Out != nil {
		s.req.Out.push(OutputItem{Choice: s.req.Choice, Final: true, Time: s.arrival,
			Finished: Finished{Reason: FinishAbort, Rejected: true}})
	}
}

// finish releases a sequence's blocks in reverse order and queues its
// terminal signal. The caller has already removed it from its queue.
func (c *Core) finish(s *sequence, reason string, now time.Time) {
	c.pool.Release(s.blocks)
	s.blocks = s.blocks[:0]
	s.status = statusFinished
	delete(c.byID, s.req.ID)
	c.report.Finished = append(c.report.Finished, FinishedRecord{
		Reason:         reason,
		Arrival:        s.arrival,
		FirstScheduled: s.firstScheduled,
		FirstToken:     s.firstToken,
		LastToken:      s.lastToken,
		Finished:       now,
		PromptTokens:   s.p,
		Generated:      s.g,
		CachedTokens:   s.cachedFirst,
		Preemptions:    s.numPreemptions,
	})
	if s.req.Out != nil {
		s.req.Out.push(OutputItem{Choice: s.req.Choice, Final: true, Time: now,
			Finished: Finished{Reason: reason, NumGenerated: s.g, CachedTokens: s.cachedFirst}})
	}
}

// FlushReport hands out-of-pass results (cancellations, rejections) to the
// observer. The live loop calls it after applying inbox messages.
func (c *Core) FlushReport() {
	r := &c.report
	if len(r.Finished) == 0 && r.Rejected == 0 {
		return
	}
	r.Rank = c.rank
	if c.observer != nil {
		c.observer.ObservePass(r)
		c.observer.ObserveGauges(c.gauges())
	}
	c.resetReport()
}

func (c *Core) resetReport() {
	r := &c.report
	*r = PassReport{First: r.First[:0], ITL: r.ITL[:0], Finished: r.Finished[:0]}
}

func (c *Core) gauges() Gauges {
	return Gauges{
		Rank:         c.rank,
		Running:      len(c.running),
		Waiting:      c.waiting.Len(),
		ActiveBlocks: c.pool.NumActive(),
		KVUsage:      c.pool.Usage(),
	}
}

// ResetPrefixCache clears the rank's prefix cache if no block is in use
// (kv-cache.md §3.6) and publishes AllBlocksCleared. It reports success.
func (c *Core) ResetPrefixCache(now time.Time) bool {
	if !c.pool.Reset() {
		return false
	}
	c.publishEvents(now)
	return true
}

// publishEvents hands the pool's pending events to the sink as one batch.
func (c *Core) publishEvents(now time.Time) {
	events := c.pool.TakeEvents()
	if len(events) == 0 {
		return
	}
	for _, e := range events {
		c.report.KVEvents[e.Kind]++
	}
	if c.kvSink != nil {
		c.kvSink.PublishKVEvents(KVEventBatch{Rank: c.rank, Time: now, Events: events})
	}
}

// CancelAll aborts every queued and running request.
func (c *Core) CancelAll(now time.Time) {
	for c.waiting.Len() > 0 {
		c.finish(c.waiting.PopFront(), FinishAbort, now)
	}
	for _, s := range c.running {
		c.finish(s, FinishAbort, now)
	}
	clear(c.running)
	c.running = c.running[:0]
}
