package kv

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// simRequest is one simulated request in the property test: a sequence
// whose tokens grow and whose computed prefix advances as the engine's
// scheduler advances it: prefill chunks, then one token per pass.
type simRequest struct {
	tokens   []uint32
	chain    HashChain
	blocks   []BlockID
	computed int // tokens whose KV has been scheduled
	cached   int // leading blocks handed to Cache
}

// simulation drives a Pool with random request traffic that shares
// prefixes and checks it against a consumer's view of its events.
type simulation struct {
	t        *testing.T
	r        *rand.Rand
	p        *Pool
	h        *Hasher
	bs       int
	prefixes [][]uint32
	running  []*simRequest
	resident map[uint64]bool // the consumer's view, from events only
	log      []Event         // every event, for the determinism check
	// countOnly: the pool only counts its events (Pool.CountEventsOnly);
	// counted accumulates them.
	countOnly bool
	counted   [NumEventKinds]int
}

func newSimulation(t *testing.T, seed uint64) *simulation {
	return newSimulationWith(t, seed, EvictLRU)
}

// newSimulationWith is newSimulation over a pool with the given eviction
// backend.
func newSimulationWith(t *testing.T, seed uint64, backend EvictionBackend) *simulation {
	r := rand.New(rand.NewPCG(seed, 0x6b76))
	bs := 1 + r.IntN(4)
	algo := AlgoXXH3
	if r.IntN(4) == 0 {
		algo = AlgoSHA256CBOR
	}
	h, err := NewHasher(algo, "0", bs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPoolWithEviction(4+r.IntN(44), bs, r.IntN(8) != 0, backend)
	if err != nil {
		t.Fatal(err)
	}
	s := &simulation{
		t:        t,
		r:        r,
		p:        p,
		h:        h,
		bs:       bs,
		resident: map[uint64]bool{},
	}
	// A few shared prompt prefixes over a tiny alphabet, so that requests
	// share blocks both by design and by accident.
	for range 1 + r.IntN(4) {
		s.prefixes = append(s.prefixes, s.randomTokens(r.IntN(6*bs+1)))
	}
	return s
}

func (s *simulation) randomTokens(n int) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = s.r.Uint32N(3)
	}
	return ts
}

func (s *simulation) run(ops int) {
	for op := range ops {
		var name string
		switch k := s.r.IntN(20); {
		case k < 6:
			name = "admit"
			s.admit()
		case k < 14:
			name = "advance"
			s.advance()
		case k < 17:
			name = "finish"
			s.finish()
		case k < 19:
			name = "lookup"
			s.lookup()
		default:
			name = "reset"
			s.reset()
		}
		s.check(fmt.Sprintf("op %d (%s)", op, name))
	}
	for len(s.running) > 0 {
		s.finish()
	}
	s.check("final release")
	if s.p.NumActive() != 0 {
		s.t.Fatalf("after releasing every request: NumActive() = %d", s.p.NumActive())
	}
}

// admit schedules a new request: prefix lookup capped by the
// recompute-last-block rule, touch of the hits, allocation of the first
// chunk and caching of the blocks it fills.
func (s *simulation) admit() {
	req := &simRequest{}
	prefix := s.prefixes[s.r.IntN(len(s.prefixes))]
	req.tokens = append(slices.Clone(prefix), s.randomTokens(1+s.r.IntN(3*s.bs))...)
	salt := ""
	if s.r.IntN(5) == 0 {
		salt = "tenant"
	}
	req.chain = s.h.NewChain(salt)
	bs, L := s.bs, len(req.tokens)
	s.h.Extend(&req.chain, req.tokens, L/bs)

	hits := s.p.Lookup(req.chain.Hashes(), (L-1)/bs, nil)
	s.checkLookup(req.chain.Hashes(), (L-1)/bs, hits)
	s.p.Touch(hits)
	cached := len(hits) * bs
	c := cached + 1 + s.r.IntN(L-cached)
	blocks, ok := s.p.Allocate(hits, ceilDiv(c, bs)-len(hits))
	if !ok {
		s.p.Release(hits) // the request stays waiting
		return
	}
	req.blocks, req.computed, req.cached = blocks, c, len(hits)
	s.cacheFull(req)
	s.running = append(s.running, req)
}

// advance schedules more tokens of a running request, first generating
// new tokens if its sequence is fully computed (a decode step). On
// allocation failure the request is preempted.
func (s *simulation) advance() {
	if len(s.running) == 0 {
		return
	}
	i := s.r.IntN(len(s.running))
	req := s.running[i]
	if req.computed == len(req.tokens) {
		req.tokens = append(req.tokens, s.randomTokens(1+s.r.IntN(s.bs))...)
	}
	c := req.computed + 1 + s.r.IntN(len(req.tokens)-req.computed)
	blocks, ok := s.p.Allocate(req.blocks, ceilDiv(c, s.bs)-len(req.blocks))
	if !ok {
		s.p.Release(req.blocks)
		s.running = slices.Delete(s.running, i, i+1)
		return
	}
	req.blocks, req.computed = blocks, c
	s.cacheFull(req)
}

// cacheFull hashes and caches the blocks the request's computed tokens
// have filled since the last call.
func (s *simulation) cacheFull(req *simRequest) {
	full := req.computed / s.bs
	s.h.Extend(&req.chain, req.tokens, full)
	s.p.Cache(req.blocks, req.chain.Hashes(), req.tokens, req.cached, full, Keys{Salt: req.chain.Salt()})
	req.cached = max(req.cached, full)
}

func (s *simulation) finish() {
	if len(s.running) == 0 {
		return
	}
	i := s.r.IntN(len(s.running))
	s.p.Release(s.running[i].blocks)
	s.running = slices.Delete(s.running, i, i+1)
}

// lookup probes a request-like sequence and checks that nothing changed.
func (s *simulation) lookup() {
	tokens := append(slices.Clone(s.prefixes[s.r.IntN(len(s.prefixes))]), s.randomTokens(s.r.IntN(2*s.bs))...)
	c := s.h.NewChain("")
	s.h.Extend(&c, tokens, len(tokens)/s.bs)
	free, refs := freeOrder(s.p), slices.Clone(s.p.ref)
	maxBlocks := s.r.IntN(len(tokens)/s.bs + 2)
	hits := s.p.Lookup(c.Hashes(), maxBlocks, nil)
	s.checkLookup(c.Hashes(), maxBlocks, hits)
	if !slices.Equal(freeOrder(s.p), free) || !slices.Equal(s.p.ref, refs) {
		s.t.Fatalf("Lookup changed the pool")
	}
}

func (s *simulation) reset() {
	active := s.p.NumActive()
	if ok := s.p.Reset(); ok != (active == 0) {
		s.t.Fatalf("Reset() = %v with %d active blocks", ok, active)
	}
}

// checkLookup compares Lookup's answer with a brute-force scan of every
// block.
func (s *simulation) checkLookup(hashes []uint64, maxBlocks int, hits []BlockID) {
	var want []BlockID
	for i, h := range hashes {
		if i >= maxBlocks || !s.p.prefixCaching {
			break
		}
		best, bestRef := noBlock, false
		for b := range BlockID(s.p.NumBlocks()) {
			if !s.p.index.cached[b] || s.p.index.hash[b] != h {
				continue
			}
			ref := s.p.ref[b] > 0
			if best == noBlock || ref && !bestRef {
				best, bestRef = b, ref
			}
		}
		if best == noBlock {
			break
		}
		want = append(want, best)
	}
	if !slices.Equal(hits, want) {
		s.t.Fatalf("Lookup(%x, %d) = %v, want %v", hashes, maxBlocks, hits, want)
	}
}

// check verifies the pool's invariants and replays its new events into the
// consumer's view, which must equal the pool's resident hashes.
func (s *simulation) check(after string) {
	t := s.t
	if err := s.p.CheckInvariants(); err != nil {
		t.Fatalf("after %s: %v", after, err)
	}
	counts := s.p.TakeEventCounts()
	events := s.p.TakeEvents()
	if s.countOnly {
		if events != nil {
			t.Fatalf("after %s: a counting pool recorded %d events", after, len(events))
		}
		for kind, n := range counts {
			s.counted[kind] += n
		}
		return
	}
	var want [NumEventKinds]int
	for _, ev := range events {
		want[ev.Kind]++
	}
	if counts != want {
		t.Fatalf("after %s: TakeEventCounts() = %v, the events hold %v", after, counts, want)
	}
	if len(events) > 0 && !s.p.prefixCaching {
		t.Fatalf("after %s: events %+v with prefix caching off", after, events)
	}
	for _, ev := range events {
		switch ev.Kind {
		case Stored:
			n := len(ev.BlockHashes)
			if n == 0 || len(ev.TokenIDs) != n*s.bs || ev.BlockSize != s.bs || len(ev.ExtraKeys) != n {
				t.Fatalf("after %s: malformed %+v", after, ev)
			}
			if ev.HasParent && !s.resident[ev.ParentBlockHash] {
				t.Fatalf("after %s: Stored parent %#x not resident", after, ev.ParentBlockHash)
			}
			for _, h := range ev.BlockHashes {
				if s.resident[h] {
					t.Fatalf("after %s: Stored %#x already resident", after, h)
				}
				s.resident[h] = true
			}
		case Removed:
			if len(ev.BlockHashes) != 1 {
				t.Fatalf("after %s: Removed with %d hashes", after, len(ev.BlockHashes))
			}
			h := ev.BlockHashes[0]
			if !s.resident[h] {
				t.Fatalf("after %s: Removed %#x not resident", after, h)
			}
			delete(s.resident, h)
		case AllCleared:
			clear(s.resident)
		default:
			t.Fatalf("after %s: unknown event %+v", after, ev)
		}
	}
	s.log = append(s.log, events...)
	view := make([]uint64, 0, len(s.resident))
	for h := range s.resident {
		view = append(view, h)
	}
	slices.Sort(view)
	if got := s.p.CachedHashes(); !slices.Equal(got, view) {
		t.Fatalf("after %s: CachedHashes() = %x, events say %x", after, got, view)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func TestPoolRandomOperations(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for _, backend := range []EvictionBackend{EvictLRU, EvictLineage, EvictMultiLRU} {
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("%s/%d", backend, seed), func(t *testing.T) {
				newSimulationWith(t, seed, backend).run(400)
			})
		}
	}
}

// TestCountingPoolCountsTheEventsItDoesNotRecord runs each workload twice,
// recording and only counting: the counts equal the recorded events by kind.
func TestCountingPoolCountsTheEventsItDoesNotRecord(t *testing.T) {
	for seed := range uint64(30) {
		recording, counting := newSimulation(t, seed), newSimulation(t, seed)
		counting.countOnly = true
		counting.p.CountEventsOnly()
		recording.run(400)
		counting.run(400)
		var want [NumEventKinds]int
		for _, ev := range recording.log {
			want[ev.Kind]++
		}
		if counting.counted != want {
			t.Errorf("seed %d: counted %v, the recording pool produced %v", seed, counting.counted, want)
		}
	}
}

func TestPoolIsDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a, b := newSimulation(t, seed), newSimulation(t, seed)
		a.run(400)
		b.run(400)
		if !reflect.DeepEqual(a.log, b.log) {
			t.Errorf("seed %d: two identical runs produced different events", seed)
		}
	}
}
