package replay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// RouterKind names a routing policy.
type RouterKind string

// Routing policies.
const (
	// RoundRobin sends request i to target i mod n.
	RoundRobin RouterKind = "round_robin"
	// Random picks a target uniformly at random (seeded).
	Random RouterKind = "random"
	// LeastLoaded picks the target with the fewest active (routed and not
	// finished) requests.
	LeastLoaded RouterKind = "least_loaded"
	// KVAware is Dynamo's KV router cost: prefix overlap from the targets'
	// KV events against their prefill and decode load (see kvAwareRouter).
	KVAware RouterKind = "kv_aware"
	// PrefixHash is consistent hashing on the hash of the first blocks.
	PrefixHash RouterKind = "prefix_hash"
)

// RouterKinds lists every policy, in the order help texts show them.
var RouterKinds = []RouterKind{RoundRobin, Random, LeastLoaded, KVAware, PrefixHash}

// ParseRouterKind checks a policy name.
func ParseRouterKind(s string) (RouterKind, error) {
	if slices.Contains(RouterKinds, RouterKind(s)) {
		return RouterKind(s), nil
	}
	return "", fmt.Errorf("unknown router %q (want one of %v)", s, RouterKinds)
}

// needsHashes reports whether the policy looks at the request's block hashes.
func (k RouterKind) needsHashes() bool { return k == KVAware || k == PrefixHash }

// routeInput is what a router knows of one arriving request.
type routeInput struct {
	promptTokens int
	// hashes are the sequence hashes of the prompt's full blocks, computed
	// the way the engines compute them (only for policies that need them).
	hashes []uint64
}

// router picks a target for each arriving request.
type router interface {
	pick(in *routeInput) int
}

// fleetLoad is the load a router tracks from its own decisions and the
// responses it relays, per target (as Dynamo's router does, not read from
// the engines).
type fleetLoad struct {
	// active counts routed requests that have not finished.
	active []int
	// prefillTokens counts the uncached prompt tokens of routed requests
	// that have not produced their first token.
	prefillTokens []int
	// blocks counts the prompt blocks of routed requests that have not
	// finished.
	blocks []int
}

func newFleetLoad(n int) *fleetLoad {
	return &fleetLoad{active: make([]int, n), prefillTokens: make([]int, n), blocks: make([]int, n)}
}

type roundRobinRouter struct{ n, next int }

func (r *roundRobinRouter) pick(*routeInput) int {
	t := r.next
	r.next = (r.next + 1) % r.n
	return t
}

type randomRouter struct {
	n   int
	rng *rand.Rand
}

func (r *randomRouter) pick(*routeInput) int { return r.rng.IntN(r.n) }

// argmin returns the index of the smallest cost; ties are broken uniformly
// at random with the run's seeded generator, so that an idle fleet is not
// filled from target 0 upwards.
func argmin(costs []float64, rng *rand.Rand) int {
	best, ties := 0, 1
	for t := 1; t < len(costs); t++ {
		switch {
		case costs[t] < costs[best]:
			best, ties = t, 1
		case costs[t] == costs[best]:
			ties++
			if rng.IntN(ties) == 0 { // reservoir sampling over the ties
				best = t
			}
		}
	}
	return best
}

type leastLoadedRouter struct {
	load  *fleetLoad
	rng   *rand.Rand
	costs []float64
}

func (r *leastLoadedRouter) pick(*routeInput) int {
	for t, a := range r.load.active {
		r.costs[t] = float64(a)
	}
	return argmin(r.costs, r.rng)
}

// kvAwareRouter is the cost function of Dynamo's KV router
// (ai-dynamo/dynamo, lib/llm/src/kv_router/scheduler.rs,
// DefaultWorkerSelector, at commit db19bd2a), with router temperature 0:
//
//	logit(t) = overlap_weight × prefill_blocks(t) + decode_blocks(t)
//	prefill_blocks(t) = (prefill tokens in flight on t + isl − overlap(t) × block_size) / block_size
//	decode_blocks(t)  = blocks of the requests active on t + ceil(isl / block_size)
//
// and the lowest logit wins. overlap(t) is the number of leading prompt
// blocks target t holds according to the KV events it published.
type kvAwareRouter struct {
	index     *kvIndex
	load      *fleetLoad
	weight    float64
	blockSize int
	rng       *rand.Rand
	overlap   []int
	costs     []float64
}

func (r *kvAwareRouter) pick(in *routeInput) int {
	r.index.overlaps(in.hashes, r.overlap)
	bs := float64(r.blockSize)
	requestBlocks := (in.promptTokens + r.blockSize - 1) / r.blockSize
	for t := range r.costs {
		newTokens := in.promptTokens - r.overlap[t]*r.blockSize
		prefill := float64(r.load.prefillTokens[t]+newTokens) / bs
		decode := float64(r.load.blocks[t] + requestBlocks)
		r.costs[t] = r.weight*prefill + decode
	}
	return argmin(r.costs, r.rng)
}

// prefixHashRouter maps the hash of a request's first blocks onto a
// consistent-hash ring with virtualNodes points per target, so requests
// sharing those blocks land on one target and a fleet change moves few keys.
type prefixHashRouter struct {
	blocks int
	ring   []ringPoint
}

type ringPoint struct {
	at     uint64
	target int
}

const virtualNodes = 128

func newPrefixHashRouter(targets, blocks int) *prefixHashRouter {
	r := &prefixHashRouter{blocks: blocks}
	for t := 0; t < targets; t++ {
		for v := 0; v < virtualNodes; v++ {
			r.ring = append(r.ring, ringPoint{at: mix64(uint64(t)<<32 | uint64(v)), target: t})
		}
	}
	sort.Slice(r.ring, func(i, j int) bool { return r.ring[i].at < r.ring[j].at })
	return r
}

func (r *prefixHashRouter) pick(in *routeInput) int {
	// A prompt shorter than one block has no block hash: it is keyed by
	// its length, which is as much as a router could hash without tokens.
	key := mix64(uint64(in.promptTokens))
	if len(in.hashes) > 0 {
		key = mix64(in.hashes[min(r.blocks, len(in.hashes))-1])
	}
	i := sort.Search(len(r.ring), func(i int) bool { return r.ring[i].at >= key })
	if i == len(r.ring) {
		i = 0
	}
	return r.ring[i].target
}
