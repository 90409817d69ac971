package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"
)

// ArrivalKind names how a synthetic workload spaces its arrivals.
type ArrivalKind string

// Arrival processes.
const (
	// ArrivalPoisson draws exponential gaps with mean 1/rate.
	ArrivalPoisson ArrivalKind = "poisson"
	// ArrivalFixed spaces arrivals exactly 1/rate apart.
	ArrivalFixed ArrivalKind = "fixed"
)

// SyntheticOptions describe a generated workload. A session is one user's
// conversation: its first turn arrives by the arrival process, each later
// turn TurnGap after the previous one, with a prompt that is the previous
// turn's prompt and output followed by new input, so it extends the context
// the previous turn left in the cache.
type SyntheticOptions struct {
	// Requests is the total number of requests (every turn counts).
	Requests int
	// Rate is the number of sessions started per second (> 0).
	Rate float64
	// Arrival is the arrival process of sessions (default Poisson).
	Arrival ArrivalKind
	// Input is the length of each turn's new input; Output of its output.
	Input, Output Dist
	// PrefixGroups > 0 starts every session with one of that many shared
	// prefixes of PrefixTokens tokens, chosen uniformly at random.
	PrefixGroups int
	PrefixTokens int
	// Turns is the number of turns per session (0 or 1 = single-turn).
	Turns int
	// TurnGap is the time between a session's turns (default 10 s).
	TurnGap time.Duration
	// Seed makes the workload reproducible.
	Seed uint64
}

// Synthetic generates a workload from SyntheticOptions. Only the sessions
// still to send a turn are held in memory.
type Synthetic struct {
	opts      SyntheticOptions
	rng       *rand.Rand
	nextStart time.Duration
	scheduled int // turns scheduled so far, emitted or pending
	emitted   int
	unique    uint64
	pending   eventQueue[*session] // sessions' next turns, by time then emission order
	// prefixes caches each group's shared prefix tokens (built on first use).
	prefixes prefixGroups
	// slab is where the next prompts are carved from: one allocation for
	// many prompts instead of one each.
	slab []uint32
}

// promptSlabTokens is the size of one prompt slab (256 KiB); a prompt larger
// than that gets an allocation of its own.
const promptSlabTokens = 1 << 16

// session is one conversation's state between turns.
type session struct {
	prompt    []uint32 // the last turn's prompt
	lastOut   int      // the last turn's output length
	lastIndex int      // the last turn's request index + 1 (0: none yet)
	turnsLeft int
}

// NewSynthetic checks opts and returns the generator.
func NewSynthetic(opts SyntheticOptions) (*Synthetic, error) {
	if opts.Arrival == "" {
		opts.Arrival = ArrivalPoisson
	}
	if opts.Turns == 0 {
		opts.Turns = 1
	}
	if opts.TurnGap == 0 {
		opts.TurnGap = 10 * time.Second
	}
	var errs []error
	errs = append(errs, checkGenerated("synthetic", opts.Requests, opts.Input, opts.Output, opts.PrefixGroups, opts.PrefixTokens)...)
	if !(opts.Rate > 0) || math.IsInf(opts.Rate, 0) {
		errs = append(errs, fmt.Errorf("synthetic workload: rate must be a number > 0, got %g", opts.Rate))
	}
	if opts.Arrival != ArrivalPoisson && opts.Arrival != ArrivalFixed {
		errs = append(errs, fmt.Errorf("synthetic workload: arrival %q is not poisson or fixed", opts.Arrival))
	}
	if opts.Turns < 1 || opts.TurnGap < 0 {
		errs = append(errs, fmt.Errorf("synthetic workload: turns must be ≥ 1 and the turn gap ≥ 0, got %d and %v", opts.Turns, opts.TurnGap))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Synthetic{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x7265706c6179)), prefixes: newPrefixGroups(opts.PrefixGroups, opts.PrefixTokens)}, nil
}

// Next returns the next request in arrival order, io.EOF after the last.
func (g *Synthetic) Next() (Request, error) {
	canStart := g.scheduled < g.opts.Requests
	due, pending := g.pending.peek()
	if !pending && !canStart {
		return Request{}, io.EOF
	}
	if pending && (!canStart || due <= g.nextStart) {
		t := g.pending.pop()
		return g.emit(t.at, t.value), nil
	}
	turns := min(g.opts.Turns, g.opts.Requests-g.scheduled)
	g.scheduled += turns
	s := &session{turnsLeft: turns}
	s.prompt = g.prefixes.pick(g.rng) // read-only: emit copies it into each prompt
	at := g.nextStart
	g.nextStart += g.gap()
	return g.emit(at, s), nil
}

// emit builds the session's next turn at time at and schedules the one after.
func (g *Synthetic) emit(at time.Duration, s *session) Request {
	in := g.opts.Input.Sample(g.rng)
	out := g.opts.Output.Sample(g.rng)
	prompt := g.carve(len(s.prompt) + s.lastOut + in)
	prompt = append(prompt, s.prompt...)
	outAt := len(prompt)
	prompt = append(prompt, outputTokens(s.lastOut)...)
	g.unique++
	prompt = blockTokens(prompt, 1<<62|g.unique, in)
	s.prompt, s.lastOut = prompt, out
	s.turnsLeft--
	if s.turnsLeft > 0 {
		g.pending.push(at+g.opts.TurnGap, g.emitted, s)
	}
	r := Request{Index: g.emitted, Arrival: at, Prompt: prompt, OutputTokens: out, Follows: s.lastIndex}
	if s.lastIndex > 0 {
		r.FollowsOutputAt = outAt
	}
	s.lastIndex = g.emitted + 1
	g.emitted++
	return r
}

// carve returns an empty slice with capacity n from the slab. Its capacity
// is exactly n, so appending past it can never write into the next prompt.
func (g *Synthetic) carve(n int) []uint32 {
	if n > promptSlabTokens {
		return make([]uint32, 0, n)
	}
	if len(g.slab) < n {
		g.slab = make([]uint32, promptSlabTokens)
	}
	p := g.slab[:0:n]
	g.slab = g.slab[n:]
	return p
}

// gap is the time to the next session start.
func (g *Synthetic) gap() time.Duration {
	mean := float64(time.Second) / g.opts.Rate
	if g.opts.Arrival == ArrivalFixed {
		return time.Duration(math.Round(mean))
	}
	return time.Duration(math.Round(g.rng.ExpFloat64() * mean))
}
