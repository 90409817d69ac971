package kv

import (
	"cmp"
	"fmt"
	"slices"
)

// EvictionBackend names how a Pool chooses the free block it reuses (and
// so evicts) next, as Dynamo's mocker names its backends.
type EvictionBackend string

// Eviction backends.
const (
	// EvictLRU reuses the head of the free queue: blocks join it at the
	// tail when released, a sequence's last block first, so its suffix goes
	// before its shared prefix (the pool's original order).
	EvictLRU EvictionBackend = "lru"
	// EvictLineage keeps the free cached blocks as a lineage graph (a
	// block's parent is the block before it in its sequence) and reuses
	// only leaves: blocks no free cached block continues. Among leaves the
	// least recently released goes first; a parent becomes a leaf when its
	// last free child is reused. Blocks that hold no hash go before all.
	EvictLineage EvictionBackend = "lineage"
	// EvictMultiLRU is frequency-aware: each hash counts its uses (stored,
	// then every prefix hit, saturating at 15); a released block joins one
	// of four LRU tiers by its count (thresholds 2, 6 and 15), and the
	// coldest non-empty tier gives up its least recently released block.
	EvictMultiLRU EvictionBackend = "multi_lru"
)

// multiLRUThresholds are the use counts that promote a block to tiers 1, 2
// and 3 (kvbm's defaults).
var multiLRUThresholds = [3]uint8{2, 6, 15}

// ParseEvictionBackend returns the backend named s ("" means lru).
func ParseEvictionBackend(s string) (EvictionBackend, error) {
	switch b := EvictionBackend(s); b {
	case "":
		return EvictLRU, nil
	case EvictLRU, EvictLineage, EvictMultiLRU:
		return b, nil
	}
	return "", fmt.Errorf("kv: unknown eviction backend %q (want lru, lineage or multi_lru)", s)
}

// NewPoolWithEviction is NewPool with the given eviction backend. lru is
// NewPool itself.
func NewPoolWithEviction(numBlocks, blockSize int, prefixCaching bool, backend EvictionBackend) (*Pool, error) {
	b, err := ParseEvictionBackend(string(backend))
	if err != nil {
		return nil, err
	}
	p := NewPool(numBlocks, blockSize, prefixCaching)
	if b != EvictLRU {
		p.order = newVictimOrder(b, numBlocks)
		p.order.reset(p)
	}
	return p, nil
}

// victimOrder ranks a pool's free blocks for reuse when the backend is not
// lru. The pool's free queue still holds the free set; the order only picks
// which of its blocks Allocate takes.
type victimOrder struct {
	lineage bool
	heap    victimHeap
	tick    uint64
	// Per block: the generation of its live heap entry (older entries are
	// stale), its release tick and its parent hash.
	gen       []uint32
	released  []uint64
	parent    []uint64
	hasParent []bool
	// children counts the free cached blocks by parent hash (lineage);
	// uses counts each hash's uses (multi_lru).
	children map[uint64]int
	uses     map[uint64]uint8
}

func newVictimOrder(b EvictionBackend, n int) *victimOrder {
	return &victimOrder{
		lineage:   b == EvictLineage,
		gen:       make([]uint32, n),
		released:  make([]uint64, n),
		parent:    make([]uint64, n),
		hasParent: make([]bool, n),
		children:  map[uint64]int{},
		uses:      map[uint64]uint8{},
	}
}

// victimEntry is one heap entry: lower class first, then older release,
// then lower block id.
type victimEntry struct {
	class uint8
	tick  uint64
	block BlockID
	gen   uint32
}

// victimHeap is a binary min-heap of entries, written out rather than
// through container/heap so that pushing an entry does not allocate.
type victimHeap []victimEntry

func (h victimHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if a.class != b.class {
		return a.class < b.class
	}
	if a.tick != b.tick {
		return a.tick < b.tick
	}
	return a.block < b.block
}

func (h *victimHeap) push(e victimEntry) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *victimHeap) pop() victimEntry {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q.less(l, small) {
			small = l
		}
		if r < len(q) && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
	*h = q
	return top
}

// stored notes that b was cached with a parent hash (hasParent false for a
// sequence's first block) and counts a use of its hash.
func (o *victimOrder) stored(b BlockID, h, parent uint64, hasParent bool) {
	o.parent[b], o.hasParent[b] = parent, hasParent
	o.use(h)
}

// use counts one use of a hash (multi_lru), saturating.
func (o *victimOrder) use(h uint64) {
	if !o.lineage && o.uses[h] < 15 {
		o.uses[h]++
	}
}

// class ranks a free block: uncached blocks first; then, under multi_lru,
// the tier of its hash's use count.
func (o *victimOrder) class(p *Pool, b BlockID) uint8 {
	if !p.index.cached[b] {
		return 0
	}
	if o.lineage {
		return 1
	}
	u := o.uses[p.index.hash[b]]
	tier := uint8(0)
	for _, t := range multiLRUThresholds {
		if u >= t {
			tier++
		}
	}
	return 1 + tier
}

func (o *victimOrder) push(p *Pool, b BlockID) {
	if len(o.heap) > 2*len(o.gen)+64 {
		o.compact(p)
	}
	o.gen[b]++
	o.heap.push(victimEntry{class: o.class(p, b), tick: o.released[b], block: b, gen: o.gen[b]})
}

// compact drops stale entries (prefix hits and re-releases leave them
// behind) so that the heap stays within a few times the pool's size
// however long the pool runs without evicting. A sorted slice is a valid
// heap.
func (o *victimOrder) compact(p *Pool) {
	live := o.heap[:0]
	for _, e := range o.heap {
		if e.gen == o.gen[e.block] && p.ref[e.block] == 0 {
			live = append(live, e)
		}
	}
	slices.SortFunc(live, func(a, b victimEntry) int {
		if a.class != b.class {
			return cmp.Compare(a.class, b.class)
		}
		if a.tick != b.tick {
			return cmp.Compare(a.tick, b.tick)
		}
		return cmp.Compare(a.block, b.block)
	})
	o.heap = live
}

// released notes that b joined the free set.
func (o *victimOrder) release(p *Pool, b BlockID) {
	o.tick++
	o.released[b] = o.tick
	if o.lineage && p.index.cached[b] && o.hasParent[b] {
		o.children[o.parent[b]]++
	}
	o.push(p, b)
}

// taken notes that b left the free set: reused as a prefix hit (Touch) or
// chosen as the victim.
func (o *victimOrder) taken(p *Pool, b BlockID) {
	o.gen[b]++ // its heap entry is stale now
	if o.lineage && p.index.cached[b] && o.hasParent[b] {
		ph := o.parent[b]
		if o.children[ph]--; o.children[ph] == 0 {
			delete(o.children, ph)
			// The parent's free copies may have become leaves.
			if first, ok := p.index.lookup(ph); ok {
				for c := first; c != noBlock; c = p.index.next[c] {
					if p.ref[c] == 0 {
						o.push(p, c)
					}
				}
			}
		}
	}
}

// victim returns the free block to reuse next and forgets it.
func (o *victimOrder) victim(p *Pool) BlockID {
	for {
		e := o.heap.pop()
		b := e.block
		if e.gen != o.gen[b] || p.ref[b] != 0 {
			continue // stale
		}
		if o.lineage && p.index.cached[b] && o.children[p.index.hash[b]] > 0 {
			o.gen[b]++ // not a leaf: re-pushed when its last free child goes
			continue
		}
		o.taken(p, b)
		return b
	}
}

// reset forgets every block: a pool reset uncaches them all and frees
// them in id order.
func (o *victimOrder) reset(p *Pool) {
	o.heap = o.heap[:0]
	clear(o.children)
	clear(o.uses)
	clear(o.hasParent)
	for b := range p.ref {
		o.release(p, BlockID(b))
	}
}

// check verifies that every free block can be chosen: it has a live heap
// entry, or (lineage) it is a cached block some free cached block
// continues, and will be queued again when that child goes. Live entries
// are free blocks, and the lineage child counts match the free set.
func (o *victimOrder) check(p *Pool) error {
	live := make([]bool, len(p.ref))
	for _, e := range o.heap {
		if e.gen == o.gen[e.block] {
			if p.ref[e.block] != 0 {
				return fmt.Errorf("eviction order: active block %d is a candidate", e.block)
			}
			live[e.block] = true
		}
	}
	children := map[uint64]int{}
	for b, r := range p.ref {
		if r == 0 && o.lineage && p.index.cached[b] && o.hasParent[b] {
			children[o.parent[b]]++
		}
	}
	for b, r := range p.ref {
		if r != 0 || live[b] {
			continue
		}
		if !(o.lineage && p.index.cached[b] && children[p.index.hash[b]] > 0) {
			return fmt.Errorf("eviction order: free block %d can never be reused", b)
		}
	}
	if o.lineage && len(children) != len(o.children) {
		return fmt.Errorf("eviction order: %d parents with free children, counted %d", len(children), len(o.children))
	}
	for h, n := range children {
		if o.children[h] != n {
			return fmt.Errorf("eviction order: parent %#x has %d free children, counted %d", h, n, o.children[h])
		}
	}
	return nil
}
