package replay

import (
	"math/bits"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// maxIndexedTargets bounds the fleet a kvIndex can follow: a block's holders
// are a fixed-size bit set, so a lookup costs one map access per block
// whatever the fleet size.
const maxIndexedTargets = 256

// targetSet is a set of target indexes.
type targetSet [maxIndexedTargets / 64]uint64

func (s *targetSet) add(t int)      { s[t/64] |= 1 << (t % 64) }
func (s *targetSet) remove(t int)   { s[t/64] &^= 1 << (t % 64) }
func (s *targetSet) has(t int) bool { return s[t/64]&(1<<(t%64)) != 0 }
func (s *targetSet) empty() bool    { return *s == targetSet{} }
func (s *targetSet) and(o *targetSet) {
	for i := range s {
		s[i] &= o[i]
	}
}
func (s *targetSet) andNot(o *targetSet) {
	for i := range s {
		s[i] &^= o[i]
	}
}

// kvIndex is what a KV-aware router knows of the fleet's prefix caches:
// for every block hash, the targets that announced it with BlockStored and
// have not withdrawn it with BlockRemoved or AllBlocksCleared. It is built
// only from the event records, never from the pools. Block hashes chain over
// the whole prefix, so "target holds hash i" means it holds blocks 0..i,
// and one set per hash is as good as a radix tree for prefix matching.
type kvIndex struct {
	holders map[uint64]*targetSet
	// byTarget counts each target's indexed hashes, so AllBlocksCleared on
	// an empty target costs nothing.
	byTarget []int
}

func newKVIndex(targets int) *kvIndex {
	return &kvIndex{holders: make(map[uint64]*targetSet), byTarget: make([]int, targets)}
}

// apply folds one target's event batch into the index.
func (x *kvIndex) apply(target int, events []kv.Event) {
	for i := range events {
		e := &events[i]
		if e.Medium != "" && e.Medium != kv.MediumGPU {
			// An offload tier's events (CPU, DISK): this router scores
			// GPU residency only, as routers that predate tiers do.
			continue
		}
		switch e.Kind {
		case kv.Stored:
			for _, h := range e.BlockHashes {
				set := x.holders[h]
				if set == nil {
					set = new(targetSet)
					x.holders[h] = set
				}
				if !set.has(target) {
					set.add(target)
					x.byTarget[target]++
				}
			}
		case kv.Removed:
			for _, h := range e.BlockHashes {
				x.drop(target, h)
			}
		case kv.AllCleared:
			if x.byTarget[target] == 0 {
				continue
			}
			for h := range x.holders {
				x.drop(target, h)
			}
		}
	}
}

func (x *kvIndex) drop(target int, h uint64) {
	set := x.holders[h]
	if set == nil || !set.has(target) {
		return
	}
	set.remove(target)
	x.byTarget[target]--
	if set.empty() {
		delete(x.holders, h)
	}
}

// overlaps writes into dst, for each target, how many leading blocks of a
// request with sequence hashes hashes the target holds.
func (x *kvIndex) overlaps(hashes []uint64, dst []int) {
	clear(dst)
	var alive targetSet
	for t := range dst {
		alive.add(t)
	}
	depth := 0
	for _, h := range hashes {
		set := x.holders[h]
		if set == nil {
			break
		}
		// Targets that stop matching here keep the depth they reached.
		lost := alive
		lost.andNot(set)
		lost.each(func(t int) { dst[t] = depth })
		alive.and(set)
		depth++
		if alive.empty() {
			return
		}
	}
	alive.each(func(t int) { dst[t] = depth })
}

// each calls f with every member in increasing order.
func (s *targetSet) each(f func(t int)) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			f(w*64 + b)
			word &= word - 1
		}
	}
}

// indexSink feeds one target's KV event batches into the shared index at
// the virtual instant the engine publishes them.
type indexSink struct {
	index  *kvIndex
	target int
}

// PublishKVEvents implements engine.KVEventSink.
func (s indexSink) PublishKVEvents(b engine.KVEventBatch) { s.index.apply(s.target, b.Events) }
