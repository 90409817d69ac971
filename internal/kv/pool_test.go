package kv

import (
	"reflect"
	"slices"
	"testing"
)

// freeOrder returns the free queue from head to tail.
func freeOrder(p *Pool) []BlockID {
	var order []BlockID
	for b := p.free.head; b != noBlock; b = p.free.next[b] {
		order = append(order, b)
	}
	return order
}

// seqTokens returns n*bs distinct-per-position tokens starting at base.
func seqTokens(base uint32, n, bs int) []uint32 {
	ts := make([]uint32, n*bs)
	for i := range ts {
		ts[i] = base + uint32(i)
	}
	return ts
}

// mustAllocate allocates k blocks or fails the test.
func mustAllocate(t *testing.T, p *Pool, k int) []BlockID {
	t.Helper()
	blocks, ok := p.Allocate(nil, k)
	if !ok {
		t.Fatalf("Allocate(%d) failed with %d free", k, p.NumFree())
	}
	return blocks
}

func checkPool(t *testing.T, p *Pool) {
	t.Helper()
	if err := p.CheckInvariants(); err != nil {
		t.Fatalf("invariants: %v", err)
	}
}

func removedEvent(h uint64) Event {
	return Event{Kind: Removed, BlockHashes: []uint64{h}}
}

func storedEvent(hashes []uint64, parent *uint64, tokens []uint32, bs int, extra [][]string) Event {
	ev := Event{Kind: Stored, BlockHashes: hashes, TokenIDs: tokens, BlockSize: bs, ExtraKeys: extra}
	if extra == nil {
		ev.ExtraKeys = make([][]string, len(hashes))
	}
	if parent != nil {
		ev.ParentBlockHash, ev.HasParent = *parent, true
	}
	return ev
}

func checkEvents(t *testing.T, p *Pool, want ...Event) {
	t.Helper()
	got := p.TakeEvents()
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
}

func TestNewPool(t *testing.T) {
	p := NewPool(5, 16, true)
	checkPool(t, p)
	if got, want := freeOrder(p), []BlockID{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("free queue %v, want %v", got, want)
	}
	if p.NumBlocks() != 5 || p.BlockSize() != 16 || p.NumFree() != 5 || p.NumActive() != 0 || p.Usage() != 0 {
		t.Errorf("NumBlocks=%d BlockSize=%d NumFree=%d NumActive=%d Usage=%v",
			p.NumBlocks(), p.BlockSize(), p.NumFree(), p.NumActive(), p.Usage())
	}
	if hs := p.CachedHashes(); len(hs) != 0 {
		t.Errorf("CachedHashes() = %v, want none", hs)
	}
	checkEvents(t, p)

	blocks := mustAllocate(t, p, 2)
	if !slices.Equal(blocks, []BlockID{0, 1}) || p.NumActive() != 2 || p.Usage() != 0.4 || p.RefCount(0) != 1 {
		t.Errorf("after Allocate(2): blocks %v, NumActive %d, Usage %v, RefCount(0) %d",
			blocks, p.NumActive(), p.Usage(), p.RefCount(0))
	}
	checkPool(t, p)
}

func TestEvictionIsLeafFirst(t *testing.T) {
	const bs = 2
	p := NewPool(3, bs, true)
	hashes := []uint64{10, 11, 12}
	blocks := mustAllocate(t, p, 3)
	p.Cache(blocks, hashes, seqTokens(100, 3, bs), 0, 3, Keys{})
	checkEvents(t, p, storedEvent(hashes, nil, seqTokens(100, 3, bs), bs, nil))

	p.Release(blocks)
	checkPool(t, p)
	if got, want := freeOrder(p), []BlockID{2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("free queue after release %v, want %v (leaf first)", got, want)
	}

	got := mustAllocate(t, p, 1)
	if !slices.Equal(got, []BlockID{2}) {
		t.Errorf("Allocate(1) = %v, want the leaf block [2]", got)
	}
	checkEvents(t, p, removedEvent(12))
	if got, want := p.CachedHashes(), []uint64{10, 11}; !slices.Equal(got, want) {
		t.Errorf("CachedHashes() = %v, want %v", got, want)
	}
	checkPool(t, p)
}

func TestEvictionIsLRUAcrossReleases(t *testing.T) {
	const bs = 1
	p := NewPool(5, bs, true)
	a := mustAllocate(t, p, 2) // blocks 0, 1
	b := mustAllocate(t, p, 2) // blocks 2, 3
	p.Cache(a, []uint64{1, 2}, []uint32{1, 2}, 0, 2, Keys{})
	p.Cache(b, []uint64{3, 4}, []uint32{3, 4}, 0, 2, Keys{})
	p.TakeEvents()
	p.Release(a) // released first: evicted first
	p.Release(b)
	if got, want := freeOrder(p), []BlockID{4, 1, 0, 3, 2}; !slices.Equal(got, want) {
		t.Fatalf("free queue %v, want %v (never used, then LRU, leaf first)", got, want)
	}
	got := mustAllocate(t, p, 4)
	if want := []BlockID{4, 1, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("Allocate(4) = %v, want %v", got, want)
	}
	checkEvents(t, p, removedEvent(2), removedEvent(1), removedEvent(4))
	checkPool(t, p)
}

func TestRemovedOnlyWithLastCopy(t *testing.T) {
	const bs = 1
	p := NewPool(2, bs, true)
	first := mustAllocate(t, p, 1)  // block 0
	second := mustAllocate(t, p, 1) // block 1
	p.Cache(first, []uint64{7}, []uint32{70}, 0, 1, Keys{})
	checkEvents(t, p, storedEvent([]uint64{7}, nil, []uint32{70}, bs, nil))
	p.Cache(second, []uint64{7}, []uint32{70}, 0, 1, Keys{})
	checkEvents(t, p) // a second copy of a resident hash is not announced
	checkPool(t, p)

	p.Release(first)
	p.Release(second)
	mustAllocate(t, p, 1) // evicts block 0; block 1 still holds hash 7
	checkEvents(t, p)
	if got := p.CachedHashes(); !slices.Equal(got, []uint64{7}) {
		t.Errorf("CachedHashes() = %v, want [7]", got)
	}
	mustAllocate(t, p, 1) // evicts the last copy
	checkEvents(t, p, removedEvent(7))
	if got := p.CachedHashes(); len(got) != 0 {
		t.Errorf("CachedHashes() = %v, want none", got)
	}
	checkPool(t, p)
}

func TestCacheSplitsStoredRuns(t *testing.T) {
	const bs = 2
	h := []uint64{100, 101, 102, 103, 104}
	tokens := seqTokens(1, 5, bs)
	u64 := func(v uint64) *uint64 { return &v }
	tests := []struct {
		name     string
		resident []int // blocks of the sequence another request already cached
		salt     string
		want     []Event
	}{
		{
			name: "all new",
			want: []Event{storedEvent(h, nil, tokens, bs, nil)},
		},
		{
			name:     "middle block resident",
			resident: []int{2},
			want: []Event{
				storedEvent(h[:2], nil, tokens[:4], bs, nil),
				storedEvent(h[3:], u64(102), tokens[6:], bs, nil),
			},
		},
		{
			name:     "first and last resident",
			resident: []int{0, 4},
			want:     []Event{storedEvent(h[1:4], u64(100), tokens[2:8], bs, nil)},
		},
		{
			name:     "alternating",
			resident: []int{1, 3},
			want: []Event{
				storedEvent(h[:1], nil, tokens[:2], bs, nil),
				storedEvent(h[2:3], u64(101), tokens[4:6], bs, nil),
				storedEvent(h[4:], u64(103), tokens[8:], bs, nil),
			},
		},
		{
			name:     "all resident",
			resident: []int{0, 1, 2, 3, 4},
		},
		{
			name: "salt is block 0's extra key",
			salt: "tenant-a",
			want: []Event{storedEvent(h, nil, tokens, bs, [][]string{{"tenant-a"}, nil, nil, nil, nil})},
		},
		{
			name:     "salt only on a run starting at block 0",
			resident: []int{0},
			salt:     "tenant-a",
			want:     []Event{storedEvent(h[1:], u64(100), tokens[2:], bs, nil)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(10, bs, true)
			for _, i := range tt.resident {
				other := mustAllocate(t, p, 1)
				// Cache a lone block i of the same sequence: announce it
				// through a one-block table whose index i is that block.
				table := make([]BlockID, i+1)
				table[i] = other[0]
				p.Cache(table, h, tokens, i, i+1, Keys{Salt: tt.salt})
			}
			p.TakeEvents()
			blocks := mustAllocate(t, p, 5)
			p.Cache(blocks, h, tokens, 0, 5, Keys{Salt: tt.salt})
			checkEvents(t, p, tt.want...)
			checkPool(t, p)
		})
	}
}

func TestCacheIncrementally(t *testing.T) {
	// A request whose blocks fill over several passes announces each
	// step with the previous block as parent.
	const bs = 2
	p := NewPool(4, bs, true)
	h := []uint64{1, 2, 3}
	tokens := seqTokens(50, 3, bs)
	blocks := mustAllocate(t, p, 2)
	p.Cache(blocks, h, tokens, 0, 1, Keys{Salt: "s"})
	blocks, _ = p.Allocate(blocks, 1)
	p.Cache(blocks, h, tokens, 1, 3, Keys{Salt: "s"})
	parent := uint64(1)
	checkEvents(t, p,
		storedEvent(h[:1], nil, tokens[:2], bs, [][]string{{"s"}}),
		storedEvent(h[1:], &parent, tokens[2:], bs, nil))
	// Re-caching already cached blocks changes nothing.
	p.Cache(blocks, h, tokens, 0, 3, Keys{Salt: "s"})
	checkEvents(t, p)
	checkPool(t, p)
}

func TestStoredEventsOwnTheirData(t *testing.T) {
	const bs = 2
	p := NewPool(4, bs, true)
	h := []uint64{1, 2}
	tokens := seqTokens(10, 2, bs)
	p.Cache(mustAllocate(t, p, 2), h, tokens, 0, 2, Keys{})
	h[0], tokens[0] = 99, 99
	ev := p.TakeEvents()
	if ev[0].BlockHashes[0] != 1 || ev[0].TokenIDs[0] != 10 {
		t.Errorf("event aliases caller's slices: %+v", ev[0])
	}
	// Appending to an event slice must not clobber a later event.
	_ = append(ev[0].BlockHashes, 1234)
	p.Release([]BlockID{0, 1})
	mustAllocate(t, p, 4)
	for _, e := range p.TakeEvents() {
		if e.BlockHashes[0] == 1234 {
			t.Errorf("event %+v shares capacity with an earlier event", e)
		}
	}
}

func TestLookupCopyChoice(t *testing.T) {
	// Blocks 1, 2 and 3 all hold hash 42; refs says which are referenced.
	tests := []struct {
		name string
		refs []BlockID
		want BlockID
	}{
		{"none referenced: lowest id", nil, 1},
		{"one referenced: that one", []BlockID{3}, 3},
		{"several referenced: lowest referenced", []BlockID{3, 2}, 2},
		{"all referenced: lowest id", []BlockID{1, 2, 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(5, 1, true)
			blocks := mustAllocate(t, p, 4)
			// Cache the copies in an order unrelated to their ids.
			for _, b := range []BlockID{2, 3, 1} {
				p.Cache([]BlockID{b}, []uint64{42}, []uint32{7}, 0, 1, Keys{})
			}
			p.Release(blocks)
			p.Touch(tt.refs)
			if got := p.Lookup([]uint64{42}, 1, nil); !slices.Equal(got, []BlockID{tt.want}) {
				t.Errorf("Lookup = %v, want [%d]", got, tt.want)
			}
			checkPool(t, p)
		})
	}
}

func TestLookupStopsAtMissOrCap(t *testing.T) {
	p := NewPool(8, 1, true)
	blocks := mustAllocate(t, p, 4)
	chain := []uint64{1, 2, 3, 4}
	p.Cache(blocks, chain, []uint32{1, 2, 3, 4}, 0, 4, Keys{})
	tests := []struct {
		name      string
		hashes    []uint64
		maxBlocks int
		want      []BlockID
	}{
		{"full chain", chain, 4, []BlockID{0, 1, 2, 3}},
		{"capped", chain, 2, []BlockID{0, 1}},
		{"cap above length", chain, 10, []BlockID{0, 1, 2, 3}},
		{"zero cap", chain, 0, nil},
		{"negative cap", chain, -1, nil},
		{"stops at first miss", []uint64{1, 2, 9, 4}, 4, []BlockID{0, 1}},
		{"miss at block 0", []uint64{9, 1, 2}, 3, nil},
		{"no hashes", nil, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Lookup(tt.hashes, tt.maxBlocks, nil); !slices.Equal(got, tt.want) {
				t.Errorf("Lookup = %v, want %v", got, tt.want)
			}
		})
	}
	dst := []BlockID{7}
	if got := p.Lookup(chain, 2, dst); !slices.Equal(got, []BlockID{7, 0, 1}) {
		t.Errorf("Lookup appended to dst: %v, want [7 0 1]", got)
	}
}

func TestLookupHasNoSideEffects(t *testing.T) {
	p := NewPool(6, 1, true)
	blocks := mustAllocate(t, p, 4)
	chain := []uint64{1, 2, 3, 4}
	p.Cache(blocks, chain, []uint32{1, 2, 3, 4}, 0, 4, Keys{})
	p.Release(blocks[2:])
	p.TakeEvents()
	before := freeOrder(p)
	refs := slices.Clone(p.ref)
	if got := p.Lookup(chain, 4, nil); len(got) != 4 {
		t.Fatalf("Lookup = %v, want 4 hits", got)
	}
	if got := freeOrder(p); !slices.Equal(got, before) {
		t.Errorf("free queue changed from %v to %v", before, got)
	}
	if !slices.Equal(p.ref, refs) {
		t.Errorf("ref counts changed from %v to %v", refs, p.ref)
	}
	checkEvents(t, p)
}

func TestTouch(t *testing.T) {
	p := NewPool(4, 1, true)
	blocks := mustAllocate(t, p, 2)
	p.Cache(blocks, []uint64{1, 2}, []uint32{1, 2}, 0, 2, Keys{})
	p.Release(blocks[1:]) // block 1 free and cached, block 0 active
	p.TakeEvents()

	hits := p.Lookup([]uint64{1, 2}, 2, nil)
	p.Touch(hits)
	if p.RefCount(0) != 2 || p.RefCount(1) != 1 {
		t.Errorf("ref counts %d, %d, want 2, 1", p.RefCount(0), p.RefCount(1))
	}
	if got, want := freeOrder(p), []BlockID{2, 3}; !slices.Equal(got, want) {
		t.Errorf("free queue %v, want %v", got, want)
	}
	if got := p.CachedHashes(); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("touch uncached blocks: CachedHashes() = %v", got)
	}
	checkEvents(t, p)
	checkPool(t, p)
}

func TestReleaseKeepsSharedBlocks(t *testing.T) {
	p := NewPool(3, 1, true)
	a := mustAllocate(t, p, 2)
	p.Touch(a[:1]) // a second request shares block 0
	p.Release(a)
	if p.RefCount(0) != 1 || p.RefCount(1) != 0 || p.NumActive() != 1 {
		t.Errorf("refs %d, %d, active %d; want 1, 0, 1", p.RefCount(0), p.RefCount(1), p.NumActive())
	}
	if got, want := freeOrder(p), []BlockID{2, 1}; !slices.Equal(got, want) {
		t.Errorf("free queue %v, want %v", got, want)
	}
	checkPool(t, p)
}

func TestReleaseOfFreeBlockPanics(t *testing.T) {
	p := NewPool(2, 1, true)
	defer func() {
		if recover() == nil {
			t.Error("Release of a free block did not panic")
		}
	}()
	p.Release([]BlockID{1})
}

func TestAllocateFailureChangesNothing(t *testing.T) {
	p := NewPool(4, 1, true)
	blocks := mustAllocate(t, p, 3)
	p.Cache(blocks, []uint64{1, 2, 3}, []uint32{1, 2, 3}, 0, 3, Keys{})
	p.Release(blocks[1:])
	p.TakeEvents()
	before, refs, cached := freeOrder(p), slices.Clone(p.ref), p.CachedHashes()

	dst := []BlockID{9}
	got, ok := p.Allocate(dst, 4)
	if ok || !slices.Equal(got, dst) {
		t.Errorf("Allocate(4) with 3 free = %v, %v; want %v, false", got, ok, dst)
	}
	if !slices.Equal(freeOrder(p), before) || !slices.Equal(p.ref, refs) || !slices.Equal(p.CachedHashes(), cached) {
		t.Errorf("failed Allocate changed the pool: free %v→%v refs %v→%v cached %v→%v",
			before, freeOrder(p), refs, p.ref, cached, p.CachedHashes())
	}
	checkEvents(t, p)

	if got, ok := p.Allocate(nil, 0); !ok || len(got) != 0 {
		t.Errorf("Allocate(0) = %v, %v; want [], true", got, ok)
	}
	if got, ok := p.Allocate(nil, 3); !ok || len(got) != 3 {
		t.Errorf("Allocate(3) with 3 free = %v, %v; want 3 blocks", got, ok)
	}
	checkPool(t, p)
}

func TestReset(t *testing.T) {
	p := NewPool(4, 1, true)
	blocks := mustAllocate(t, p, 3)
	p.Cache(blocks, []uint64{1, 2, 3}, []uint32{1, 2, 3}, 0, 3, Keys{})
	p.TakeEvents()

	p.Release(blocks[1:])
	before := freeOrder(p)
	if p.Reset() {
		t.Fatal("Reset succeeded with an active block")
	}
	if got := freeOrder(p); !slices.Equal(got, before) || len(p.CachedHashes()) != 3 {
		t.Errorf("failed Reset changed the pool: free %v→%v, cached %v", before, got, p.CachedHashes())
	}
	checkEvents(t, p)

	p.Release(blocks[:1])
	if !p.Reset() {
		t.Fatal("Reset failed with no active block")
	}
	checkEvents(t, p, Event{Kind: AllCleared})
	if got := p.CachedHashes(); len(got) != 0 {
		t.Errorf("CachedHashes() after Reset = %v", got)
	}
	if got, want := freeOrder(p), []BlockID{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("free queue after Reset %v, want %v", got, want)
	}
	if got := p.Lookup([]uint64{1}, 1, nil); got != nil {
		t.Errorf("Lookup after Reset = %v, want miss", got)
	}
	checkPool(t, p)

	// Evicting after a reset announces nothing: the hashes are gone.
	mustAllocate(t, p, 4)
	checkEvents(t, p)
}

func TestPrefixCachingOff(t *testing.T) {
	p := NewPool(4, 1, false)
	blocks := mustAllocate(t, p, 3)
	p.Cache(blocks, []uint64{1, 2, 3}, []uint32{1, 2, 3}, 0, 3, Keys{Salt: "salt"})
	if got := p.Lookup([]uint64{1, 2, 3}, 3, nil); got != nil {
		t.Errorf("Lookup = %v, want miss", got)
	}
	if got := p.CachedHashes(); len(got) != 0 {
		t.Errorf("CachedHashes() = %v, want none", got)
	}
	p.Release(blocks)
	if got, want := freeOrder(p), []BlockID{3, 2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("free queue %v, want %v", got, want)
	}
	mustAllocate(t, p, 4)
	p.Release([]BlockID{0, 1, 2, 3})
	if !p.Reset() {
		t.Error("Reset failed")
	}
	checkEvents(t, p)
	checkPool(t, p)
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	const n = 256
	p := NewPool(n, 16, true)
	chain := make([]uint64, 64)
	for i := range chain {
		chain[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	blocks := mustAllocate(t, p, 64)
	p.Cache(blocks, chain, make([]uint32, 64*16), 0, 64, Keys{})
	p.TakeEvents()
	dst := make([]BlockID, 0, n)
	fresh := NewPool(n, 16, true)
	tests := []struct {
		name string
		op   func()
	}{
		{"Lookup", func() { dst = p.Lookup(chain, 64, dst[:0]) }},
		{"Touch+Release", func() { p.Touch(blocks); p.Release(blocks) }},
		{"Allocate+Release", func() {
			dst, _ = fresh.Allocate(dst[:0], 32)
			fresh.Release(dst)
		}},
		{"Cache of resident hashes", func() { p.Cache(blocks, chain, nil, 0, 64, Keys{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(100, tt.op); allocs != 0 {
				t.Errorf("%v allocations per call", allocs)
			}
		})
	}
	checkPool(t, p)
}

func TestCheckInvariantsDetectsCorruption(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(p *Pool)
	}{
		{"negative ref count", func(p *Pool) { p.ref[3] = -1 }},
		{"referenced block in free queue", func(p *Pool) { p.ref[3] = 1 }},
		{"free block missing from queue", func(p *Pool) { p.free.remove(4); p.free.n++ }},
		{"wrong free count", func(p *Pool) { p.free.n-- }},
		{"broken back link", func(p *Pool) { p.free.prev[4] = 0 }},
		{"free queue cycle", func(p *Pool) { p.free.next[5] = 3 }},
		{"cached block not indexed", func(p *Pool) { p.index.cached[5] = true }},
		{"indexed block under another hash", func(p *Pool) { p.index.hash[0] = 77 }},
		{"index entry for uncached block", func(p *Pool) { p.index.first[99] = 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(6, 1, true)
			blocks := mustAllocate(t, p, 3)
			p.Cache(blocks, []uint64{1, 2, 3}, []uint32{1, 2, 3}, 0, 3, Keys{})
			checkPool(t, p)
			tt.corrupt(p)
			if err := p.CheckInvariants(); err == nil {
				t.Error("CheckInvariants() = nil after corruption")
			} else {
				t.Log(err)
			}
		})
	}
}
