package replay

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// ErrAwaitCompletion is what a FeedbackSource's Next returns when no
// request can arrive until one in flight finishes: every client is waiting
// for its answer.
var ErrAwaitCompletion = errors.New("replay: no request until one in flight finishes")

// FeedbackSource is a Source whose arrivals depend on completions, as a
// closed-loop benchmark client's do. Run calls Done when a request has
// received its last token or has been rejected, at that virtual instant.
// Since a completion can bring a request earlier than any known so far,
// Run looks at NextArrival — the instant of the next request ready to be
// sent, ok false while none is — and calls Next only at that instant.
type FeedbackSource interface {
	Source
	Done(index int, at time.Duration)
	NextArrival() (at time.Duration, ok bool)
}

// ClosedLoopOptions describe a closed-loop workload: Concurrency clients,
// each sending its next request the moment its previous one finishes, until
// Requests requests have been sent — what vLLM's `bench serve
// --max-concurrency C`, AIPerf's `--concurrency C` and genai-perf run.
type ClosedLoopOptions struct {
	// Concurrency is the number of clients (≥ 1). More clients than
	// requests is allowed: only Requests of them ever send.
	Concurrency int
	// Requests is the total number of requests (≥ 1).
	Requests int
	// Input is the prompt length of each request and Output the number of
	// tokens it generates (forced, as with ignore_eos).
	Input, Output Dist
	// PrefixGroups > 0 starts every prompt with one of that many shared
	// prefixes of PrefixTokens tokens (chosen uniformly at random) before
	// its Input tokens. Zero, the default, shares nothing: benchmark
	// clients send random prompts.
	PrefixGroups int
	PrefixTokens int
	// Ramp spreads the clients' first requests: client i sends its first at
	// i × Ramp / Concurrency, as mocker-bench ramps its connections (0: all
	// at time 0, as `vllm bench serve` starts them).
	Ramp time.Duration
	// ClientDelay is the time from a response's last token to its client's
	// next request. At 0 the request arrives at the instant the pass ends
	// and joins the engine's next pass; a live client's HTTP round trip
	// (any delay > 0 shorter than a pass) makes it miss that pass and wait
	// for the one after, when other requests keep the engine busy.
	ClientDelay time.Duration
	// Seed makes the workload reproducible.
	Seed uint64
}

// ClosedLoop generates a closed-loop workload from ClosedLoopOptions.
type ClosedLoop struct {
	opts    ClosedLoopOptions
	rng     *rand.Rand
	emitted int
	// free holds, sorted, the instants at which idle clients send: the
	// clients' first requests (0, or ramped), then one ClientDelay after
	// each completion. It holds at most Concurrency instants.
	free     []time.Duration
	prefixes prefixGroups
}

// NewClosedLoop checks opts and returns the generator.
func NewClosedLoop(opts ClosedLoopOptions) (*ClosedLoop, error) {
	var errs []error
	if opts.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("closed-loop workload: concurrency must be ≥ 1, got %d", opts.Concurrency))
	}
	errs = append(errs, checkGenerated("closed-loop", opts.Requests, opts.Input, opts.Output, opts.PrefixGroups, opts.PrefixTokens)...)
	if opts.Ramp < 0 || opts.ClientDelay < 0 {
		errs = append(errs, fmt.Errorf("closed-loop workload: ramp and client delay must be ≥ 0, got %v and %v", opts.Ramp, opts.ClientDelay))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g := &ClosedLoop{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x636c6f736564)), prefixes: newPrefixGroups(opts.PrefixGroups, opts.PrefixTokens)}
	g.free = make([]time.Duration, min(opts.Concurrency, opts.Requests))
	for i := range g.free {
		g.free[i] = opts.Ramp * time.Duration(i) / time.Duration(opts.Concurrency)
	}
	return g, nil
}

// Next returns the next request: io.EOF after the last one,
// ErrAwaitCompletion while every client waits for an answer.
func (g *ClosedLoop) Next() (Request, error) {
	if g.emitted == g.opts.Requests {
		return Request{}, io.EOF
	}
	if len(g.free) == 0 {
		return Request{}, ErrAwaitCompletion
	}
	at := g.free[0]
	g.free = g.free[1:]
	prefix := g.prefixes.pick(g.rng)
	in := g.opts.Input.Sample(g.rng)
	out := g.opts.Output.Sample(g.rng)
	prompt := make([]uint32, 0, len(prefix)+in)
	prompt = append(prompt, prefix...)
	// 1<<60 keeps these content ids apart from Synthetic's (1<<61 prefixes,
	// 1<<62 inputs) and from a trace's hash ids.
	prompt = blockTokens(prompt, 1<<60|uint64(g.emitted), in)
	r := Request{Index: g.emitted, Arrival: at, Prompt: prompt, OutputTokens: out}
	g.emitted++
	return r, nil
}

// NextArrival implements FeedbackSource.
func (g *ClosedLoop) NextArrival() (time.Duration, bool) {
	if g.emitted == g.opts.Requests || len(g.free) == 0 {
		return 0, false
	}
	return g.free[0], true
}

// Done frees the client whose request finished at at: it sends its next
// request ClientDelay later, if any are left to send.
func (g *ClosedLoop) Done(_ int, at time.Duration) {
	if g.emitted+len(g.free) < g.opts.Requests {
		// Completions come in time order, but a long ramp can still hold a
		// later first request: insert after every instant ≤ this one.
		at += g.opts.ClientDelay
		i := sort.Search(len(g.free), func(i int) bool { return g.free[i] > at })
		g.free = slices.Insert(g.free, i, at)
	}
}
