package engine

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Core is one DP rank's engine state and scheduler as a synchronous state
// machine: callers Submit and Cancel, then alternate BeginPass (schedule and
// model the duration) and EndPass (deliver tokens and completions). It does
// no I/O, reads no clock and never sleeps; the live actor (Engine) and the
// virtual-time Simulator drive it. Not safe for concurrent use.
type Core struct {
	cfg  Config
	rank int

	kv *kvManager
	// enc is the encoder cache of multimodal items (vLLM scheduler only).
	enc       *encoderCache
	encTimer  EncoderTimer     // prices encoder FLOPs (the hardware model); nil: per token
	workTimer EncoderWorkTimer // prices an encoder pass by its operators (the hardware model)
	scheduler scheduler
	timing    TimingModel
	// passTimer is timing when it prices passes by their contents
	// (PassTimer), else nil; pc is its reused pass description.
	passTimer  PassTimer
	pc         PassContents
	pcDraft    PassContents // the decodes alone, to price a drafter
	pcAdapters []int        // the pass's distinct adapter ids so far (scratch)
	// cachedTimer is timing when it charges prompt chunks for their cached
	// context (CachedPrefillTimer), else nil.
	cachedTimer CachedPrefillTimer

	prefillDiv float64 // divisor of the prefill term; +Inf = no delay
	decodeDiv  float64 // divisor of the decode term; +Inf = no delay
	// extraPassDelay is added to every active pass's modeled duration (an
	// operator slowing a worker down at run time; 0 normally).
	extraPassDelay time.Duration

	waiting waitQueue
	running []*sequence
	byID    map[uint64]*sequence

	kvSink   KVEventSink
	fpmSink  FPMSink
	observer Observer
	skipGaps bool // CoreOptions.SkipTokenGaps
	log      *slog.Logger

	// inspector (nil: none) and its scratch; see inspect.go.
	inspector Inspector
	insp      inspection

	fpmCounter uint64

	// Disaggregated serving (disagg.go): blocks held for handoffs, decode
	// requests whose KV is in transit, and their link.
	holds []*heldHandoff
	// holdByID finds a live hold in O(1); a dropped hold stays in holds,
	// marked, until AdvanceTimers compacts it (disagg.go).
	holdByID   map[uint64]*heldHandoff
	heldBlocks int
	arriving   []*sequence
	arrived    []*transferFlow
	link       transferLink
	// gaugesDirty: state the gauges show changed outside a pass (a hold
	// released); FlushReport reports the gauges.
	gaugesDirty bool

	// sleep is the sleep-mode state (sleep.go).
	sleep sleepState

	// LoRA state (unused when LoRA is off): GPU/CPU adapter slots, and the
	// order adapters got live requests in, for the adapter gauges.
	lora                       loraSlots
	adapterOrder               []string
	runningNames, waitingNames []string

	// Scratch reused across passes so steady-state passes do not allocate.
	ready    []*sequence
	prefills []*sequence
	report   PassReport
	cur      passState
	// tierScratch backs Gauges.Tiers; outRun collects the tokens one pass
	// delivers to one sequence.
	tierScratch []TierGauge
	outRun      []OutputItem
	// passWakes, non-nil only inside DeliverPass (it points at wakes),
	// collects the output groups the pass made ready; they are signalled
	// once it has delivered all.
	passWakes *wakeList
	wakes     wakeList
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
	KVSink   KVEventSink
	FPMSink  FPMSink
	Observer Observer
	// SkipTokenGaps leaves PassReport.ITL empty. A driver that measures
	// inter-token gaps from the outputs itself (replay) sets it: the gap
	// is a time subtraction per token, a tenth of the engine's per-token
	// work in virtual time.
	SkipTokenGaps bool
	Logger        *slog.Logger
	// Inspector, when set, gets per-sequence traces and state snapshots.
	Inspector Inspector
}

// NewCore builds a rank's engine state.
func NewCore(cfg Config, opts CoreOptions) (*Core, error) {
	cfg.BlockSize = cfg.resolvedBlockSize()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("engine rank %d: %w", opts.Rank, err)
	}
	timing := cfg.TimingModel
	if timing == nil {
		var err error
		if timing, err = NewTimingModel(cfg.Timing); err != nil {
			return nil, fmt.Errorf("engine rank %d: %w", opts.Rank, err)
		}
	}
	// The KV manager owns the claim policy; the scheduler and Submit reach
	// it through c.kv rather than keeping copies.
	kvm, err := newKVManager(&cfg, newClaimPolicy(cfg.Type, cfg.Capacity))
	if err != nil {
		return nil, fmt.Errorf("engine rank %d: %w", opts.Rank, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Core{
		cfg:      cfg,
		rank:     opts.Rank,
		kv:       kvm,
		timing:   timing,
		byID:     make(map[uint64]*sequence),
		kvSink:   opts.KVSink,
		fpmSink:  opts.FPMSink,
		observer: opts.Observer,
		skipGaps: opts.SkipTokenGaps,
		log:      log,

		inspector: opts.Inspector,
	}
	c.passTimer, _ = timing.(PassTimer)
	c.cachedTimer, _ = timing.(CachedPrefillTimer)
	c.encTimer, _ = timing.(EncoderTimer)
	c.workTimer, _ = timing.(EncoderWorkTimer)
	if opts.KVSink == nil && opts.Inspector == nil {
		// Nobody reads the events: count them for the metrics, and skip
		// copying every stored block's token ids into records.
		kvm.pool.CountEventsOnly()
	}
	if cfg.Type == EngineSGLang {
		// Like SGLang, the radix cache hashes pages and records events only
		// for a consumer.
		kvm.radix = newRadixManager(&cfg, opts.KVSink != nil)
		c.scheduler = newSGLangScheduler(c)
	} else {
		c.scheduler = &vllmScheduler{core: c, victim: newVictimPolicy(cfg.Scheduling, cfg.Preemption),
			staticBatch: cfg.Type == EngineTRTLLM && cfg.Capacity == CapacityStaticBatch}
		c.enc = newEncoderCache(cfg.MaxNumBatchedTokens)
	}
	c.lora.cfg = cfg.LoRA
	c.report.TierHits = kvm.tierHits
	c.waiting.byPriority = cfg.Scheduling == SchedulePriority
	if cfg.Speculative.Enabled() {
		c.report.Spec.AcceptedPerPos = make([]int, cfg.Speculative.NumSpeculativeTokens)
	}
	c.prefillDiv = divisor(cfg.SpeedupRatio)
	c.decodeDiv = c.prefillDiv * divisor(cfg.DecodeSpeedupRatio)
	c.link = newTransferLink(cfg.Transfer, cfg.SpeedupRatio)
	return c, nil
}

// divisor maps a speedup ratio to the divisor applied to modeled times:
// 0 and +Inf mean "no delay" (an infinite divisor).
func divisor(ratio float64) float64 {
	if NoDelay(ratio) {
		return math.Inf(1)
	}
	return ratio
}

// Rank returns the DP rank.
func (c *Core) Rank() int { return c.rank }

// Pool exposes the rank's block pool for inspection (tests, invariants).
func (c *Core) Pool() *kv.Pool { return c.kv.pool }

// NumRunning returns the length of the running list.
func (c *Core) NumRunning() int { return len(c.running) }

// NumWaiting returns the waiting queue length.
func (c *Core) NumWaiting() int { return c.waiting.Len() }

// Idle reports whether the rank has no waiting or running work.
func (c *Core) Idle() bool { return len(c.running) == 0 && c.waiting.Len() == 0 }

// Submit queues a request. A request that can never run is rejected: an
// empty prompt at once, one that fails the capacity rule when it reaches the
// head of the waiting queue (as vLLM does), or at once when the claim policy
// decides so (TensorRT-LLM).
func (c *Core) Submit(r *Request) {
	s := &sequence{
		req:             r,
		planned:         r.PlannedOutput,
		numPromptTokens: len(r.Prompt),
		maxOutput:       r.MaxOutputTokens,
		finishReason:    r.FinishReason,
		arrival:         r.ArrivalTime,
	}
	if s.finishReason == "" {
		s.finishReason = FinishLength
	}
	if s.maxOutput < len(s.planned) {
		s.maxOutput = len(s.planned)
	}
	if s.numPromptTokens == 0 {
		c.reject(s, c.kv.rejection(0, s.maxOutput))
		return
	}
	if !r.Adapter.IsBase() && !c.cfg.LoRA.Enabled() {
		c.reject(s, &Rejection{Reason: RejectLoRADisabled, Message: "LoRA is not enabled on this engine"})
		return
	}
	if rej := c.kv.claims.prepare(s, c.kv, c.log); rej != nil {
		c.reject(s, rej)
		return
	}
	s.tokens = make([]uint32, s.numPromptTokens, s.numPromptTokens+len(s.planned))
	copy(s.tokens, r.Prompt)
	if c.cfg.Type == EngineSGLang {
		kv.PadRadixKey(s.tokens, r.MMPads)
	}
	c.kv.startChain(s)
	if c.cfg.Speculative.Enabled() {
		s.specKey = SequenceKey(r.Prompt, r.Choice)
	}
	c.byID[r.ID] = s
	c.waiting.PushBack(s)
	c.noteAdapter(r.Adapter.Name)
	c.noteSubmit(s)
	if c.asleep() {
		// No pass will report the queue until the wake-up.
		c.gaugesDirty = true
	}
}

// CheckAdmissible applies the engine's capacity rule to a request before
// it is submitted: nil when it can run, else the rejection the engine would
// give it. Safe for concurrent use (it reads only immutable configuration).
func (c *Core) CheckAdmissible(promptTokens, maxOutputTokens int) *Rejection {
	return c.kv.rejection(promptTokens, maxOutputTokens)
}

// Cancel removes a request wherever it is, releases its blocks at once and
// queues its abort signal. Unknown or finished ids are ignored.
func (c *Core) Cancel(id uint64, now time.Time) {
	s, ok := c.byID[id]
	if !ok {
		return
	}
	if !c.waiting.Remove(s) && !c.cancelArriving(s, now) {
		for i, r := range c.running {
			if r == s {
				c.running = append(c.running[:i], c.running[i+1:]...)
				break
			}
		}
	}
	c.finish(s, FinishAbort, now)
}

// reject ends a request that can never run.
func (c *Core) reject(s *sequence, rej *Rejection) {
	notifyRemoteEnded(s)
	delete(c.byID, s.req.ID)
	s.status = statusFinished
	c.report.Rejected++
	c.noteReject(s)
	if s.req.Out != nil {
		s.req.Out.push(OutputItem{Choice: s.req.Choice, Final: true, Time: s.arrival,
			Finished: Finished{Reason: FinishAbort, Rejection: rej}}, c.passWakes)
	}
}

// finish releases a sequence's blocks in reverse order and queues its
// terminal signal. The caller has already removed it from its queue.
func (c *Core) finish(s *sequence, reason FinishReason, now time.Time) {
	held := c.holdOnFinish(s, reason, now)
	if held == nil {
		c.kv.free(s)
	}
	c.releaseEncoder(s)
	notifyRemoteEnded(s)
	s.status = statusFinished
	delete(c.byID, s.req.ID)
	c.report.Finished = append(c.report.Finished, FinishedRecord{
		ID:             s.req.ID,
		Reason:         reason,
		Arrival:        s.arrival,
		FirstScheduled: s.firstScheduled,
		FirstToken:     s.firstToken,
		LastToken:      s.lastToken,
		Finished:       now,
		PromptTokens:   s.numPromptTokens,
		Generated:      s.numGeneratedTokens,
		CachedTokens:   s.cachedFirst,
		Preemptions:    s.numPreemptions,
	})
	if s.req.Out != nil {
		s.req.Out.push(OutputItem{Choice: s.req.Choice, Final: true, Time: now,
			Finished: Finished{Reason: reason, NumGenerated: s.numGeneratedTokens, CachedTokens: s.cachedFirst,
				HeldBlocks: held}}, c.passWakes)
	}
}

// FlushReport hands out-of-pass results (cancellations, rejections) to the
// observer. The live loop calls it after applying inbox messages.
func (c *Core) FlushReport() {
	r := &c.report
	c.inspect(false, time.Time{})
	if len(r.Finished) == 0 && r.Rejected == 0 && len(r.Handoffs) == 0 {
		if c.gaugesDirty && c.observer != nil {
			c.observer.ObserveGauges(c.gauges())
		}
		c.gaugesDirty = false
		return
	}
	c.gaugesDirty = false
	r.Rank = c.rank
	if c.observer != nil {
		c.observer.ObservePass(r)
		c.observer.ObserveGauges(c.gauges())
	}
	c.resetReport()
}

func (c *Core) resetReport() {
	r := &c.report
	spec := r.Spec
	spec.reset()
	clear(c.kv.tierHits)
	*r = PassReport{First: r.First[:0], ITL: r.ITL[:0], Finished: r.Finished[:0], Spec: spec,
		TierHits: c.kv.tierHits, Transfers: r.Transfers[:0], Handoffs: r.Handoffs[:0]}
}

func (c *Core) gauges() Gauges {
	g := Gauges{
		Rank:         c.rank,
		Running:      len(c.running),
		Waiting:      c.waiting.Len(),
		ActiveBlocks: c.kv.numActiveBlocks(),
		KVUsage:      c.kv.usage(),
		CachedBlocks: c.kv.pool.NumCachedFree(),
	}
	c.adapterGauges(&g)
	g.Tiers = c.kv.tierGauges(c.tierScratch[:0])
	c.tierScratch = g.Tiers
	g.WaitingDeferred += len(c.arriving)
	g.HeldBlocks = c.NumHeldBlocks()
	g.Sleep = c.sleep.status
	return g
}

// ResetPrefixCache clears the rank's prefix cache if no block is in use and
// publishes AllBlocksCleared. It reports success; vLLM refuses a reset
// while requests hold blocks, and so does the mock.
func (c *Core) ResetPrefixCache(now time.Time) bool {
	if !c.kv.resetPrefixCache() {
		return false
	}
	c.publishEvents(now)
	return true
}

// publishEvents hands the pool's pending events to the sink as one batch.
func (c *Core) publishEvents(now time.Time) {
	for kind, n := range c.kv.takeEventCounts() {
		c.report.KVEvents[kind] += n
	}
	if c.kvSink == nil && c.inspector == nil {
		return // the pool only counts (see NewCore)
	}
	events := c.kv.takeEvents()
	if len(events) == 0 {
		return
	}
	c.noteEvents(events)
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
	c.abortDisaggregated(now)
}

// BeginPass runs one scheduler pass at start, models its duration,
// publishes the pass-start KV event batch, FPM snapshot and gauges, and
// returns the duration. A zero duration with PassActive false means the
// pass did nothing.
func (c *Core) BeginPass(start time.Time) time.Duration {
	c.ready = c.ready[:0]
	c.prefills = c.prefills[:0]
	c.AdvanceTimers(start)
	if c.asleep() {
		// A sleeping rank runs no pass: PassActive stays false.
		c.cur = passState{}
		return 0
	}
	c.scheduler.schedule(start)
	return c.planPass(start)
}

// preempt moves a running request back to the waiting queue for
// recomputation (its blocks are freed, its prefix may still be cached) and
// returns its former index in the running list.
func (c *Core) preempt(victim *sequence) int {
	idx := -1
	for i, r := range c.running {
		if r == victim {
			idx = i
			break
		}
	}
	c.running = append(c.running[:idx], c.running[idx+1:]...)
	c.kv.free(victim)
	c.releaseEncoder(victim)
	victim.numComputedTokens = 0
	victim.status = statusPreempted
	victim.numPreemptions++
	// Work scheduled for the victim earlier in this pass is undone.
	victim.scheduled = false
	victim.passTokens = 0
	victim.passPrefill = false
	victim.passDrafts, victim.passAccepted = 0, 0
	c.report.Preemptions++
	c.notePreempt(victim)
	c.waiting.PushPreempted(victim)
	return idx
}
