package replay

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// WorkerSpec is one worker of the fleet: its engine configuration (built
// from the same configuration files and flags as serve) and its number of
// DP ranks. Every rank is a routing target, as in Dynamo, whose KV router
// addresses (worker, dp_rank) pairs.
type WorkerSpec struct {
	Name   string
	Engine engine.Config
	DPSize int // 0 means 1
	// GPUsPerRank is the number of GPUs behind each DP rank: its tensor-
	// parallel size (0 means 1). It only scales the report's per-GPU
	// throughput.
	GPUsPerRank int
}

// Options configure a run. The zero value of each field is its default.
type Options struct {
	Workers []WorkerSpec
	// Router is the routing policy (default round_robin).
	Router RouterKind
	// OverlapWeight is kv_aware's overlap_score_weight (default 1, as in
	// Dynamo; set NoOverlapWeight for 0).
	OverlapWeight float64
	// PrefixHashBlocks is how many leading blocks prefix_hash hashes
	// (default 4).
	PrefixHashBlocks int
	// Seed drives every random choice of the run (random and tie-breaking
	// routers).
	Seed uint64
	// Rows, when set, receives each request's row as it completes or is
	// rejected, in completion order. The row is reused for the next
	// request: copy it to keep it past the call.
	Rows func(*RequestRow) error
	// Progress, when set, is called every ProgressEvery arrivals and once
	// at the end.
	Progress      func(Progress)
	ProgressEvery int
}

// NoOverlapWeight is an OverlapWeight of 0 (pure load balancing), since 0
// itself means "the default".
const NoOverlapWeight = -1

// Progress is a run's progress.
type Progress struct {
	SimTime  time.Duration
	Arrived  int
	Finished int
	Done     bool
}

// target is one DP rank of one worker with its engine.
type target struct {
	index   int
	name    string
	worker  int
	core    *engine.Core
	out     *engine.Output
	obs     *targetObserver
	pending []*engine.Request // arrived during a pass, submitted before the next
	busy    bool
	passEnd time.Duration
	touched bool
	stats   *targetStats
}

// flight is the state of a request between arrival and completion.
type flight struct {
	index     int
	arrival   time.Duration
	target    int
	prompt    int
	newTokens int // prompt tokens the router expects to compute (kv_aware)
	blocks    int
	tokens    int
	first     time.Duration
	last      time.Duration
	itlMin    time.Duration
	itlMax    time.Duration
}

type runner struct {
	opts    Options
	targets []*target
	router  router
	load    *fleetLoad
	index   *kvIndex
	hasher  *kv.Hasher
	block   int
	// radix: the fleet runs SGLang's radix cache, whose events carry its
	// page hashes rather than the block hasher's.
	radix bool

	now     time.Duration
	passes  eventQueue[int] // busy targets by pass end, then index
	touched []*target
	flights []flight
	free    []int
	drained []engine.OutputItem
	row     RequestRow // the row being reported, reused: one a request would be garbage
	arrived int
	report  *reportBuilder
	// feedback is the source when its arrivals wait for completions (a
	// closed loop); release tells it each request that finished.
	feedback FeedbackSource
}

// Run replays src on the fleet of opts and returns the report. The run is
// deterministic: the same source, options and seed give the same report.
func Run(src Source, opts Options) (*Report, error) {
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	if err := r.loop(src); err != nil {
		return nil, err
	}
	return r.report.build(r), nil
}

func newRunner(opts Options) (*runner, error) {
	if len(opts.Workers) == 0 {
		return nil, errors.New("replay: the fleet has no workers")
	}
	if opts.Router == "" {
		opts.Router = RoundRobin
	}
	if _, err := ParseRouterKind(string(opts.Router)); err != nil {
		return nil, err
	}
	switch {
	case opts.OverlapWeight == 0:
		opts.OverlapWeight = 1
	case opts.OverlapWeight == NoOverlapWeight:
		opts.OverlapWeight = 0
	case opts.OverlapWeight < 0:
		return nil, fmt.Errorf("replay: overlap weight must be ≥ 0, got %g", opts.OverlapWeight)
	}
	if opts.PrefixHashBlocks == 0 {
		opts.PrefixHashBlocks = 4
	}
	if opts.PrefixHashBlocks < 0 {
		return nil, fmt.Errorf("replay: prefix-hash blocks must be ≥ 1, got %d", opts.PrefixHashBlocks)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 10_000
	}
	r := &runner{opts: opts}
	r.report = newReportBuilder()
	for w, spec := range opts.Workers {
		for rank := 0; rank < max(1, spec.DPSize); rank++ {
			r.targets = append(r.targets, &target{index: len(r.targets), name: targetName(spec, rank), worker: w})
		}
	}
	n := len(r.targets)
	if opts.Router.needsHashes() {
		if err := r.setupHashing(); err != nil {
			return nil, err
		}
	}
	if opts.Router == KVAware {
		if n > maxIndexedTargets {
			return nil, fmt.Errorf("replay: kv_aware routes at most %d targets, the fleet has %d", maxIndexedTargets, n)
		}
		r.index = newKVIndex(n)
	}
	for _, t := range r.targets {
		spec := opts.Workers[t.worker]
		t.out = engine.NewUnsyncedOutput()
		t.stats = r.report.newTarget(t.name)
		t.obs = &targetObserver{r: r, t: t}
		co := engine.CoreOptions{Rank: t.index, Observer: t.obs, SkipTokenGaps: true}
		if r.index != nil {
			co.KVSink = indexSink{index: r.index, target: t.index}
		}
		core, err := engine.NewCore(spec.Engine, co)
		if err != nil {
			return nil, fmt.Errorf("replay: worker %s: %w", t.name, err)
		}
		t.core = core
	}
	r.load = newFleetLoad(n)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x726f75746572))
	switch opts.Router {
	case RoundRobin:
		r.router = &roundRobinRouter{n: n}
	case Random:
		r.router = &randomRouter{n: n, rng: rng}
	case LeastLoaded:
		r.router = &leastLoadedRouter{load: r.load, rng: rng, costs: make([]float64, n)}
	case KVAware:
		r.router = &kvAwareRouter{index: r.index, load: r.load, weight: opts.OverlapWeight, blockSize: r.block,
			rng: rng, overlap: make([]int, n), costs: make([]float64, n)}
	case PrefixHash:
		r.router = newPrefixHashRouter(n, opts.PrefixHashBlocks)
	}
	return r, nil
}

// setupHashing prepares the block hasher of hash-based routers. A router
// hashes a prompt once for the whole fleet, so every worker must agree on
// block size and hash function.
func (r *runner) setupHashing() error {
	first := r.opts.Workers[0].Engine
	for _, w := range r.opts.Workers[1:] {
		e := w.Engine
		if e.BlockSize != first.BlockSize || e.HashAlgo != first.HashAlgo || e.HashSeed != first.HashSeed ||
			(e.Type == engine.EngineSGLang) != (first.Type == engine.EngineSGLang) {
			return fmt.Errorf("replay: router %s needs one block size and hash for the whole fleet; worker %s differs from worker %s",
				r.opts.Router, w.Name, r.opts.Workers[0].Name)
		}
	}
	r.block = first.BlockSize
	if r.block == 0 {
		r.block = first.Type.DefaultBlockSize()
	}
	h, err := kv.NewHasher(first.HashAlgo, first.HashSeed, r.block)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	r.hasher = h
	r.radix = first.Type == engine.EngineSGLang
	return nil
}

func targetName(spec WorkerSpec, rank int) string {
	if max(1, spec.DPSize) == 1 {
		return spec.Name
	}
	return fmt.Sprintf("%s/dp%d", spec.Name, rank)
}

// loop is the event loop: at each step the clock jumps to the earliest of
// the next arrival and the earliest pass end. At one instant, passes end
// first, then arrivals are routed, then idle targets with work start their
// next pass — the order engine.Simulator uses for one core.
func (r *runner) loop(src Source) error {
	r.feedback, _ = src.(FeedbackSource)
	var next Request
	haveNext, exhausted := false, false
	// peek returns the next arrival instant without taking the request. A
	// plain source's next request is read ahead and held; a feedback
	// source is only asked, since a completion can still bring an earlier
	// one.
	peek := func() (time.Duration, bool, error) {
		if r.feedback != nil {
			at, ok := r.feedback.NextArrival()
			return at, ok, nil
		}
		if !haveNext && !exhausted {
			req, err := src.Next()
			switch {
			case err == nil:
				next, haveNext = req, true
			case errors.Is(err, io.EOF):
				exhausted = true
			default:
				return 0, false, err
			}
		}
		return next.Arrival, haveNext, nil
	}
	take := func() (Request, error) {
		if r.feedback != nil {
			return src.Next()
		}
		haveNext = false
		return next, nil
	}
	for {
		at, arriving, err := peek()
		if err != nil {
			return err
		}
		t, ok := at, arriving
		if end, busy := r.passes.peek(); busy && (!ok || end <= t) {
			t, ok = end, true
		}
		if !ok {
			break
		}
		if t < r.now {
			if r.feedback != nil {
				return fmt.Errorf("replay: a request arrives at %v, before the previous one", at)
			}
			return fmt.Errorf("replay: request %d arrives at %v, before the previous one", next.Index, next.Arrival)
		}
		r.now = t
		for end, busy := r.passes.peek(); busy && end == t; end, busy = r.passes.peek() {
			tg := r.targets[r.passes.pop().value]
			tg.busy = false
			tg.core.EndPass(engine.VirtualEpoch.Add(t), engine.VirtualEpoch.Add(t))
			if err := r.collect(tg); err != nil {
				return err
			}
			r.touch(tg)
		}
		// Arrivals at t, including a closed loop's clients sending again
		// the instant their requests finished, before the idle targets
		// start their next passes.
		for {
			at, arriving, err := peek()
			if err != nil {
				return err
			}
			if !arriving || at != t {
				break
			}
			req, err := take()
			if err != nil {
				return err
			}
			r.arrive(req)
		}
		for _, tg := range r.touched {
			tg.touched = false
			if err := r.startPass(tg); err != nil {
				return err
			}
		}
		r.touched = r.touched[:0]
	}
	r.report.unfinished = len(r.flights) - len(r.free)
	r.progress(true)
	return nil
}

func (r *runner) touch(t *target) {
	if !t.touched && !t.busy {
		t.touched = true
		r.touched = append(r.touched, t)
	}
}

// arrive routes one request and queues it on its target.
func (r *runner) arrive(req Request) {
	in := routeInput{promptTokens: len(req.Prompt)}
	if r.hasher != nil {
		chain := r.hasher.NewChain("")
		full := len(req.Prompt) / r.block
		if r.opts.Router == PrefixHash {
			full = min(full, r.opts.PrefixHashBlocks)
		}
		if r.radix {
			in.hashes = kv.RadixPageHashes(req.Prompt[:full*r.block], r.block)
		} else {
			r.hasher.Extend(&chain, req.Prompt, full)
			in.hashes = chain.Hashes()
		}
	}
	ti := r.router.pick(&in)
	t := r.targets[ti]

	slot := len(r.flights)
	if n := len(r.free); n > 0 {
		slot = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		r.flights = append(r.flights, flight{})
	}
	f := &r.flights[slot]
	*f = flight{index: req.Index, arrival: req.Arrival, target: ti, prompt: len(req.Prompt)}
	f.newTokens = len(req.Prompt)
	if kr, ok := r.router.(*kvAwareRouter); ok {
		f.newTokens -= kr.overlap[ti] * r.block
	}
	if r.block > 0 {
		f.blocks = (len(req.Prompt) + r.block - 1) / r.block
	}
	r.load.active[ti]++
	r.load.prefillTokens[ti] += f.newTokens
	r.load.blocks[ti] += f.blocks
	t.stats.routed++

	planned := req.Output
	if planned == nil {
		planned = outputTokens(req.OutputTokens)
	}
	t.pending = append(t.pending, &engine.Request{
		ID:            uint64(slot) + 1,
		Prompt:        req.Prompt,
		PlannedOutput: planned,
		FinishReason:  engine.FinishLength,
		ArrivalTime:   engine.VirtualEpoch.Add(req.Arrival),
		Choice:        slot,
		Out:           t.out,
	})
	r.touch(t)
	r.arrived++
	if r.opts.Progress != nil && r.arrived%r.opts.ProgressEvery == 0 {
		r.progress(false)
	}
}

func (r *runner) progress(done bool) {
	if r.opts.Progress != nil {
		r.opts.Progress(Progress{SimTime: r.now, Arrived: r.arrived, Finished: r.report.finished, Done: done})
	}
}

// startPass submits what arrived during the last pass and begins the next.
func (r *runner) startPass(t *target) error {
	start := engine.VirtualEpoch.Add(r.now)
	for i, req := range t.pending {
		t.core.Submit(req)
		t.pending[i] = nil
	}
	t.pending = t.pending[:0]
	t.core.FlushReport()
	if t.core.Idle() {
		return r.collect(t) // rejections at submission
	}
	d := t.core.BeginPass(start)
	if err := r.collect(t); err != nil {
		return err
	}
	if !t.core.PassActive() {
		// Blocked: nothing fits until something changes on this target,
		// which only an arrival can do now; it touches the target again.
		return nil
	}
	t.busy = true
	t.passEnd = r.now + d
	r.passes.push(t.passEnd, t.index, t.index)
	return nil
}

// collect takes the target's delivered tokens, then the finished records
// its observer buffered, and turns completed requests into rows.
func (r *runner) collect(t *target) error {
	r.drained = t.out.Drain(r.drained)
	// The tokens of one pass share its deadline: convert it to a run time
	// once, not once per token.
	var lastTime time.Time
	var lastAt time.Duration
	for i := range r.drained {
		it := &r.drained[i] // items are large: read in place, not copied
		f := &r.flights[it.Choice]
		if it.Final {
			if rej := it.Finished.Rejection; rej != nil {
				if err := r.reject(t, it.Choice, rej); err != nil {
					return err
				}
			}
			continue
		}
		if it.Time != lastTime { // equal fields are the same instant; a miss only recomputes
			lastTime, lastAt = it.Time, it.Time.Sub(engine.VirtualEpoch)
		}
		at := lastAt
		f.tokens++
		if f.tokens == 1 {
			f.first = at
			r.load.prefillTokens[f.target] -= f.newTokens
		} else {
			gap := at - f.last
			r.report.gaps.add(ms(gap))
			if f.tokens == 2 || gap < f.itlMin {
				f.itlMin = gap
			}
			f.itlMax = max(f.itlMax, gap)
		}
		f.last = at
	}
	for i := range t.obs.finished {
		if err := r.finish(t, &t.obs.finished[i]); err != nil {
			return err
		}
	}
	t.obs.finished = t.obs.finished[:0]
	return nil
}

func (r *runner) release(slot int) {
	f := &r.flights[slot]
	r.load.active[f.target]--
	r.load.blocks[f.target] -= f.blocks
	if f.tokens == 0 {
		r.load.prefillTokens[f.target] -= f.newTokens
	}
	r.free = append(r.free, slot)
	if r.feedback != nil {
		r.feedback.Done(f.index, r.now)
	}
}

func (r *runner) reject(t *target, slot int, rej *engine.Rejection) error {
	f := &r.flights[slot]
	row := &r.row
	*row = RequestRow{Index: f.index, Arrival: ms(f.arrival), Worker: t.name, PromptTokens: f.prompt,
		FinishReason: "rejected", Error: rej.Message}
	r.report.rejections.add(rej)
	r.release(slot)
	return r.report.add(row, t.stats, r.opts.Rows)
}

func (r *runner) finish(t *target, rec *engine.FinishedRecord) error {
	slot := int(rec.ID - 1)
	f := &r.flights[slot]
	epoch := engine.VirtualEpoch
	row := &r.row
	*row = RequestRow{
		Index:        f.index,
		Arrival:      ms(f.arrival),
		Worker:       t.name,
		PromptTokens: rec.PromptTokens,
		CachedTokens: rec.CachedTokens,
		OutputTokens: rec.Generated,
		QueueMs:      ms(rec.FirstScheduled.Sub(epoch) - f.arrival),
		Preemptions:  rec.Preemptions,
		FinishReason: string(rec.Reason),
	}
	if f.tokens > 0 {
		row.TTFTMs = ms(f.first - f.arrival)
		row.E2EMs = ms(f.last - f.arrival)
	}
	if f.tokens > 1 {
		row.ITLMeanMs = ms(f.last-f.first) / float64(f.tokens-1)
		row.ITLMinMs, row.ITLMaxMs = ms(f.itlMin), ms(f.itlMax)
	}
	r.release(slot)
	return r.report.add(row, t.stats, r.opts.Rows)
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// targetObserver receives one target's gauges and pass reports.
type targetObserver struct {
	r        *runner
	t        *target
	finished []engine.FinishedRecord
}

// ObserveGauges implements engine.Observer: the time series per target.
func (o *targetObserver) ObserveGauges(g engine.Gauges) {
	o.r.report.gauges(o.t.stats, o.r.now, g)
}

// ObservePass implements engine.Observer. Finished records are kept until
// the pass's tokens have been collected.
func (o *targetObserver) ObservePass(p *engine.PassReport) {
	o.finished = append(o.finished, p.Finished...)
	for _, f := range p.First {
		o.r.report.firstToken(o.r.now, f.PromptTokens, f.CachedTokens)
	}
	o.t.stats.preemptions += p.Preemptions
	if p.IsPass {
		o.t.stats.passes++
	}
}
