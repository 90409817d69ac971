package kv

import (
	"container/list"
	"fmt"
)

// Medium names where a cached block lives, as vLLM's KV events spell it in
// their medium field.
type Medium string

// The media of the block pool and its offload tiers. MediumGPU is the
// pool itself; an Event whose Medium is empty is a GPU event.
const (
	MediumGPU  Medium = "GPU"
	MediumCPU  Medium = "CPU"
	MediumDisk Medium = "DISK"
)

// TierSpec describes one offload tier: its medium and its capacity in
// blocks of the pool's block size.
type TierSpec struct {
	Medium    Medium
	NumBlocks int
}

// Tiers is the chain of offload tiers below a Pool, fastest first (host
// memory, then disk). A block whose last GPU copy is evicted moves to the
// first tier; a tier that is full demotes its least recently used block to
// the next one, and the last tier drops it. Each tier is an LRU set of
// block hashes: only the hash is kept, because a hit is loaded back into a
// fresh GPU block and re-announced by the pool with its tokens.
//
// Tiers share the pool's event recorder, so a pass's events keep the order
// in which the moves happened: the GPU BlockRemoved, then the lower tier's
// BlockRemoved of its victim and BlockStored of the demoted block, then the
// BlockStored of the offloaded one. Not safe for concurrent use.
type Tiers struct {
	tiers     []*tier
	blockSize int
	rec       *recorder
	// stored counts the blocks each tier took in since TakeStored.
	stored []int
}

// tier is one LRU set of hashes; the front of order is the most recently
// used.
type tier struct {
	medium   Medium
	capacity int
	order    *list.List
	where    map[uint64]*list.Element
}

// NewTiers returns empty tiers as specs describe them, fastest first. It
// fails on a tier without blocks or a medium named twice.
func NewTiers(specs []TierSpec) (*Tiers, error) {
	t := &Tiers{}
	seen := map[Medium]bool{MediumGPU: true}
	for _, s := range specs {
		if s.NumBlocks < 1 {
			return nil, fmt.Errorf("kv offload tier %s: %d blocks, want at least 1", s.Medium, s.NumBlocks)
		}
		if s.Medium == "" || seen[s.Medium] {
			return nil, fmt.Errorf("kv offload tier: medium %q empty or used twice", s.Medium)
		}
		seen[s.Medium] = true
		t.tiers = append(t.tiers, &tier{medium: s.Medium, capacity: s.NumBlocks,
			order: list.New(), where: make(map[uint64]*list.Element)})
	}
	t.stored = make([]int, len(t.tiers))
	return t, nil
}

// NumTiers returns the number of tiers.
func (t *Tiers) NumTiers() int { return len(t.tiers) }

// Medium returns tier i's medium.
func (t *Tiers) Medium(i int) Medium { return t.tiers[i].medium }

// Len returns the number of blocks tier i holds.
func (t *Tiers) Len(i int) int { return t.tiers[i].order.Len() }

// Contains reports whether tier i holds hash h.
func (t *Tiers) Contains(i int, h uint64) bool {
	_, ok := t.tiers[i].where[h]
	return ok
}

// Hashes returns tier i's hashes, most recently used first.
func (t *Tiers) Hashes(i int) []uint64 {
	out := make([]uint64, 0, t.Len(i))
	for e := t.tiers[i].order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(uint64))
	}
	return out
}

// offload stores h, whose last GPU copy was just evicted, in the first
// tier. A hash the tier holds already only becomes its most recently used.
func (t *Tiers) offload(h uint64) { t.store(0, h) }

// store puts h in tier i as its most recently used block, demoting the
// tier's least recently used block first when it is full.
func (t *Tiers) store(i int, h uint64) {
	x := t.tiers[i]
	if e, ok := x.where[h]; ok {
		x.order.MoveToFront(e)
		return
	}
	if x.order.Len() == x.capacity {
		victim := x.order.Remove(x.order.Back()).(uint64)
		delete(x.where, victim)
		t.rec.removedOn(victim, x.medium)
		if i+1 < len(t.tiers) {
			t.store(i+1, victim)
		}
	}
	x.where[h] = x.order.PushFront(h)
	t.stored[i]++
	t.rec.storedOn(h, t.blockSize, x.medium)
}

// TakeStored adds to counts[i] the blocks tier i took in (from the GPU
// pool for the first tier, from the tier above for the others) since the
// previous call, and resets them.
func (t *Tiers) TakeStored(counts []int) {
	for i, n := range t.stored {
		counts[i] += n
		t.stored[i] = 0
	}
}

// Lookup appends to dst, for each hash in order, the index of the fastest
// tier holding it, stopping at the first hash no tier holds, and returns
// the extended slice. It has no side effects; Hit marks the blocks used.
func (t *Tiers) Lookup(hashes []uint64, dst []int) []int {
	for _, h := range hashes {
		found := -1
		for i, x := range t.tiers {
			if _, ok := x.where[h]; ok {
				found = i
				break
			}
		}
		if found < 0 {
			break
		}
		dst = append(dst, found)
	}
	return dst
}

// Hit makes the looked-up blocks the most recently used of their tiers
// (they stay there: loading copies a block back, it does not move it).
func (t *Tiers) Hit(hashes []uint64, tiers []int) {
	for j, i := range tiers {
		x := t.tiers[i]
		x.order.MoveToFront(x.where[hashes[j]])
	}
}

// clear empties every tier without recording events (AllBlocksCleared
// already says everything is gone).
func (t *Tiers) clear() {
	for _, x := range t.tiers {
		x.order.Init()
		clear(x.where)
	}
}
