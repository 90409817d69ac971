package kv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// radixOracle is the brute-force model of a RadixCache: the set of cached
// page-aligned prefixes (any prefix of a cached prefix is cached) with a
// lock count per prefix. It knows nothing of nodes, edges or splits.
type radixOracle struct {
	ps    int
	pages map[string]int // prefix key → lock count
	memo  map[string]uint64
}

func prefixKey(tokens []uint32) string {
	b := make([]byte, 0, 4*len(tokens))
	for _, t := range tokens {
		b = strconv.AppendUint(b, uint64(t), 10)
		b = append(b, ',')
	}
	return string(b)
}

// match is the longest cached whole-page prefix of key in namespace ns.
func (o *radixOracle) match(ns string, key []uint32) int {
	n := 0
	for k := o.ps; k <= len(key); k += o.ps {
		if _, ok := o.pages[ns+"|"+prefixKey(key[:k])]; !ok {
			break
		}
		n = k
	}
	return n
}

func (o *radixOracle) insert(ns string, key []uint32) {
	for k := o.ps; k <= len(key); k += o.ps {
		if _, ok := o.pages[ns+"|"+prefixKey(key[:k])]; !ok {
			o.pages[ns+"|"+prefixKey(key[:k])] = 0
		}
	}
}

func (o *radixOracle) lock(ns string, key []uint32, n, delta int) {
	for k := o.ps; k <= n; k += o.ps {
		o.pages[ns+"|"+prefixKey(key[:k])] += delta
	}
}

func (o *radixOracle) sizes() (evictable, protected int) {
	for _, l := range o.pages {
		if l == 0 {
			evictable += o.ps
		} else {
			protected += o.ps
		}
	}
	return evictable, protected
}

// referenceHashes computes the published hash of every cached page
// straight from the definition (SHA-256 over the previous digest and the
// page's little-endian token ids, first 8 bytes big-endian), independently
// of the cache's own hashing code.
func (o *radixOracle) referenceHashes(seqs map[string][]uint32) map[uint64]bool {
	out := map[uint64]bool{}
	for key := range o.pages {
		if h, ok := o.memo[key]; ok {
			out[h] = true
			continue
		}
		tokens := seqs[key]
		var prior []byte
		if ns, _, _ := strings.Cut(key, "|"); ns != "" {
			d := sha256.Sum256([]byte(ns)) // a namespace's chain seed
			prior = d[:]
		}
		var h uint64
		for i := 0; i < len(tokens); i += o.ps {
			buf := append([]byte(nil), prior...)
			for _, t := range tokens[i : i+o.ps] {
				buf = binary.LittleEndian.AppendUint32(buf, t)
			}
			d := sha256.Sum256(buf)
			prior = d[:]
			h = binary.BigEndian.Uint64(d[:8])
		}
		o.memo[key] = h // a prefix's hash never changes
		out[h] = true
	}
	return out
}

// resident lists the tree's cached prefixes by walking its nodes.
func (c *RadixCache) resident() map[string]int {
	out := map[string]int{}
	var walk func(ns string, n *RadixNode, prefix []uint32)
	walk = func(ns string, n *RadixNode, prefix []uint32) {
		for _, child := range n.children {
			p := append(slices.Clone(prefix), child.tokens...)
			for k := len(prefix) + c.pageSize; k <= len(p); k += c.pageSize {
				out[ns+"|"+prefixKey(p[:k])] = child.lockRef
			}
			walk(ns, child, p)
		}
	}
	for ns, r := range c.roots {
		walk(ns, r, nil)
	}
	return out
}

type radixHolder struct {
	ns      string
	key     []uint32
	matched int
	node    *RadixNode
	private int // pages allocated beyond the match
}

// TestRadixCache_MatchesBruteForceOracle drives random workloads with
// shared prefixes through a RadixCache and, after every operation, checks
// it against the oracle: matched prefix lengths, the evictable and protected
// sizes (lock counts), the page accounting, eviction only of unlocked pages
// leaving a prefix-closed set, and that replaying the recorded KV events
// gives exactly the resident pages' hashes.
func TestRadixCache_MatchesBruteForceOracle(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel() // independent seeds
			runRadixProperty(t, seed)
		})
	}
}

func runRadixProperty(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5a17))
	ps := []int{1, 1, 2, 4, 16}[r.IntN(5)]
	totalPages := 8 + r.IntN(40)
	c := NewRadixCache(totalPages, ps, true)
	o := &radixOracle{ps: ps, pages: map[string]int{}, memo: map[string]uint64{}}
	seqs := map[string][]uint32{} // prefix key → tokens, for reference hashes
	consumer := map[uint64]bool{}
	var holders []*radixHolder
	alphabet := uint32(2 + r.IntN(3))
	var shared [][]uint32
	for range 1 + r.IntN(3) {
		shared = append(shared, randTokens(r, r.IntN(5*ps+1), alphabet))
	}
	newKey := func() []uint32 {
		k := slices.Clone(shared[r.IntN(len(shared))])
		return append(k, randTokens(r, r.IntN(6*ps+1), alphabet)...)
	}
	held := func() int {
		n := 0
		for _, h := range holders {
			n += h.private
		}
		return n
	}
	for step := range 120 {
		switch op := r.IntN(10); {
		case op < 4: // a request arrives: match and lock its prefix
			key := newKey()
			ns := []string{"", "", "salt"}[r.IntN(3)]
			want := o.match(ns, key)
			if got := c.MatchLen(ns, key); got != want {
				t.Fatalf("step %d: MatchLen = %d, oracle %d", step, got, want)
			}
			got, node := c.Match(ns, key)
			if got != want {
				t.Fatalf("step %d: Match = %d, oracle %d", step, got, want)
			}
			c.IncLock(node)
			o.lock(ns, key, got, +1)
			holders = append(holders, &radixHolder{ns: ns, key: key, matched: got, node: node})
		case op < 7 && len(holders) > 0: // a request finishes: allocate, insert, unlock
			i := r.IntN(len(holders))
			h := holders[i]
			need := (len(h.key)/ps*ps - h.matched) / ps
			if need > c.freePages {
				evictChecked(t, step, c, o, (need-c.freePages)*ps)
			}
			if !c.Allocate(need) {
				break // try again later
			}
			h.private = need
			want := o.match(h.ns, h.key)
			got := c.Insert(h.ns, h.key)
			if got != want {
				t.Fatalf("step %d: Insert found %d cached, oracle %d", step, got, want)
			}
			c.FreePages((got - h.matched) / ps)
			h.private = 0
			o.insert(h.ns, h.key[:len(h.key)/ps*ps])
			for k := ps; k <= len(h.key); k += ps {
				seqs[h.ns+"|"+prefixKey(h.key[:k])] = h.key[:k]
			}
			c.DecLock(h.node)
			o.lock(h.ns, h.key, h.matched, -1)
			holders = slices.Delete(holders, i, i+1)
		case op < 8 && len(holders) > 0: // a request is retracted: unlock only
			i := r.IntN(len(holders))
			c.DecLock(holders[i].node)
			o.lock(holders[i].ns, holders[i].key, holders[i].matched, -1)
			holders = slices.Delete(holders, i, i+1)
		case op < 9: // memory pressure
			evictChecked(t, step, c, o, r.IntN(8*ps))
		default:
			if c.Reset() {
				clear(o.pages)
				clear(consumer)
			} else if len(holders) == 0 && len(o.pages) > 0 {
				_, protected := o.sizes()
				t.Fatalf("step %d: Reset refused with %d protected tokens", step, protected)
			}
		}
		// Sizes and locks.
		ev, pr := o.sizes()
		if c.EvictableTokens() != ev || c.ProtectedTokens() != pr {
			t.Fatalf("step %d: evictable/protected = %d/%d, oracle %d/%d",
				step, c.EvictableTokens(), c.ProtectedTokens(), ev, pr)
		}
		res := c.resident()
		if len(res) != len(o.pages) {
			t.Fatalf("step %d: %d resident pages, oracle %d", step, len(res), len(o.pages))
		}
		for k, l := range o.pages {
			if res[k] < 0 || (res[k] == 0) != (l == 0) {
				t.Fatalf("step %d: page %q lock %d, oracle %d", step, k, res[k], l)
			}
		}
		if got := c.freePages + (ev+pr)/ps + held(); got != totalPages {
			t.Fatalf("step %d: free %d + cached %d + held %d = %d pages, want %d",
				step, c.freePages, (ev+pr)/ps, held(), got, totalPages)
		}
		// Event replay.
		for _, e := range c.TakeEvents() {
			switch e.Kind {
			case Stored:
				for _, h := range e.BlockHashes {
					if consumer[h] {
						t.Fatalf("step %d: page %#x stored twice", step, h)
					}
					consumer[h] = true
				}
			case Removed:
				for _, h := range e.BlockHashes {
					if !consumer[h] {
						t.Fatalf("step %d: removal of unknown page %#x", step, h)
					}
					delete(consumer, h)
				}
			case AllCleared:
				clear(consumer)
			}
		}
		want := o.referenceHashes(seqs)
		if len(want) != len(consumer) {
			t.Fatalf("step %d: consumer holds %d pages, resident %d", step, len(consumer), len(want))
		}
		for h := range want {
			if !consumer[h] {
				t.Fatalf("step %d: resident page %#x missing from the event replay", step, h)
			}
		}
	}
}

// evictChecked evicts n tokens and checks the outcome against the oracle:
// only unlocked pages go, the count is right, at least min(n, evictable)
// is freed; the oracle then drops the evicted prefixes.
func evictChecked(t *testing.T, step int, c *RadixCache, o *radixOracle, n int) {
	t.Helper()
	evictableBefore, _ := o.sizes()
	freed := c.Evict(n)
	after := c.resident()
	removed := 0
	for k, l := range o.pages {
		if _, ok := after[k]; !ok {
			if l != 0 {
				t.Fatalf("step %d: evicted a locked page %q", step, k)
			}
			removed += o.ps
			delete(o.pages, k)
		}
	}
	if freed != removed {
		t.Fatalf("step %d: Evict reported %d tokens, removed %d", step, freed, removed)
	}
	if freed < min(n, evictableBefore) {
		t.Fatalf("step %d: Evict(%d) freed %d of %d evictable", step, n, freed, evictableBefore)
	}
}

func randTokens(r *rand.Rand, n int, alphabet uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.Uint32N(alphabet)
	}
	return out
}
