package kv

import (
	"slices"
	"testing"
)

// evictionOrder allocates every free block one by one from a pool and
// returns the hashes the pool announced as removed, in order.
func drainRemovals(t *testing.T, p *Pool) []uint64 {
	t.Helper()
	p.TakeEvents()
	var removed []uint64
	for p.NumFree() > 0 {
		if _, ok := p.Allocate(nil, 1); !ok {
			t.Fatal("allocate failed with free blocks")
		}
		for _, e := range p.TakeEvents() {
			if e.Kind == Removed {
				removed = append(removed, e.BlockHashes...)
			}
		}
	}
	return removed
}

// TestEvictionBackendsOrder pins each backend's victim order on the same
// pool history: a two-block chain h0 → h1 whose parent was released before
// its child, and a third block h2 (a chain of its own) whose hash was hit
// twice after it was stored.
//
//	lru:       the free queue's order: h0, h2, h1 — the parent goes while
//	           its child stays resident, which leaves h1 unreachable.
//	lineage:   h0 is not a leaf while h1 is free: h2, h1, then h0.
//	multi_lru: h2 has 3 uses (tier 1), h0 and h1 one each (tier 0):
//	           h0, h1, then h2.
func TestEvictionBackendsOrder(t *testing.T) {
	for _, tc := range []struct {
		backend EvictionBackend
		want    []uint64
	}{
		{EvictLRU, []uint64{100, 300, 200}},
		{EvictLineage, []uint64{300, 200, 100}},
		{EvictMultiLRU, []uint64{100, 200, 300}},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			p, err := NewPoolWithEviction(3, 1, true, tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			chain, ok := p.Allocate(nil, 2)
			if !ok {
				t.Fatal("allocate")
			}
			p.Cache(chain, []uint64{100, 200}, []uint32{1, 2}, 0, 2, Keys{})
			single, _ := p.Allocate(nil, 1)
			p.Cache(single, []uint64{300}, []uint32{3}, 0, 1, Keys{})
			p.Touch(single) // two prefix hits on h2
			p.Touch(single)
			p.Release(chain[:1]) // the parent first,
			p.Release(single)
			p.Release(single)
			p.Release(single)
			p.Release(chain[1:]) // its child last
			if err := p.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if got := drainRemovals(t, p); !slices.Equal(got, tc.want) {
				t.Errorf("eviction order %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := ParseEvictionBackend("fifo"); err == nil {
		t.Error("ParseEvictionBackend accepted fifo")
	}
}

// TestEvictionOrderStaysBounded: prefix hits on free blocks and their
// re-release leave stale heap entries; without evictions they must not
// pile up.
func TestEvictionOrderStaysBounded(t *testing.T) {
	for _, backend := range []EvictionBackend{EvictLineage, EvictMultiLRU} {
		p, _ := NewPoolWithEviction(8, 1, true, backend)
		blocks, _ := p.Allocate(nil, 4)
		p.Cache(blocks, []uint64{1, 2, 3, 4}, []uint32{1, 2, 3, 4}, 0, 4, Keys{})
		p.Release(blocks)
		for range 10_000 {
			p.Touch(blocks)
			p.Release(blocks)
		}
		if n := len(p.order.heap); n > 2*8+64+1 {
			t.Errorf("%s: %d heap entries for 8 blocks", backend, n)
		}
		if err := p.CheckInvariants(); err != nil {
			t.Errorf("%s: %v", backend, err)
		}
	}
}
