package kv

import (
	"fmt"
	"math"
	"slices"
)

// A BlockID identifies a physical block of a Pool, from 0 to NumBlocks()-1.
type BlockID int32

// A Pool is the paged KV block pool of one DP rank for the vLLM and
// TensorRT-LLM engine types: reference-counted blocks, a free queue ordered
// for LRU leaf-first eviction, and an index from sequence hash to resident
// copies for prefix caching. It records the KV cache events (see
// docs/kv-events.md) for TakeEvents.
//
// The pool is deterministic: the same operations always produce the same
// block choices and events. It is not safe for concurrent use; it belongs
// to its rank's engine goroutine.
type Pool struct {
	blockSize     int
	prefixCaching bool
	ref           []int32
	free          freeList
	index         hashIndex
	rec           recorder
	// cachedFree counts the free blocks that still hold a hash (evictable
	// prefix-cache content), kept up to date so reading it costs nothing.
	cachedFree int
	// order, when set, picks the free block Allocate reuses (the lineage
	// and multi_lru backends, eviction.go); nil is lru: the free queue's
	// head.
	order *victimOrder
	// lower holds the offload tiers below the pool (nil: none).
	lower *Tiers
}

// NewPool returns a pool of numBlocks blocks of blockSize tokens, all free
// and uncached, with the free queue in id order. When prefixCaching is
// false no block is ever cached, Lookup always misses and no event is
// recorded. It panics if numBlocks does not fit a
// BlockID or blockSize is not positive; configuration validation rejects
// such values long before.
func NewPool(numBlocks, blockSize int, prefixCaching bool) *Pool {
	if numBlocks < 0 || numBlocks > math.MaxInt32 || blockSize <= 0 {
		panic(fmt.Sprintf("kv: invalid pool of %d blocks of %d tokens", numBlocks, blockSize))
	}
	p := &Pool{
		blockSize:     blockSize,
		prefixCaching: prefixCaching,
		ref:           make([]int32, numBlocks),
		index:         newHashIndex(numBlocks, prefixCaching),
	}
	p.free.reset(numBlocks)
	return p
}

// NumBlocks returns the number of blocks N.
func (p *Pool) NumBlocks() int { return len(p.ref) }

// BlockSize returns the number of tokens per block.
func (p *Pool) BlockSize() int { return p.blockSize }

// NumFree returns the length of the free queue: blocks with no reference,
// cached or not.
func (p *Pool) NumFree() int { return p.free.n }

// NumActive returns the number of referenced blocks, N − NumFree().
func (p *Pool) NumActive() int { return len(p.ref) - p.free.n }

// Usage returns the fraction of active blocks, NumActive()/N (0 for an
// empty pool).
func (p *Pool) Usage() float64 {
	if len(p.ref) == 0 {
		return 0
	}
	return float64(p.NumActive()) / float64(len(p.ref))
}

// RefCount returns the number of references to block b.
func (p *Pool) RefCount(b BlockID) int { return int(p.ref[b]) }

// Lookup appends to dst the blocks holding the longest prefix of hashes
// that is resident, at most maxBlocks of them, and returns the extended
// slice. For each hash it takes the referenced copy with
// the lowest id if any copy is referenced, else the lowest id. Lookup has
// no side effects; the caller Touches the blocks it uses.
func (p *Pool) Lookup(hashes []uint64, maxBlocks int, dst []BlockID) []BlockID {
	if !p.prefixCaching {
		return dst
	}
	for i, h := range hashes {
		if i >= maxBlocks {
			break
		}
		b, ok := p.index.lookup(h)
		if !ok {
			break
		}
		dst = append(dst, p.bestCopy(b))
	}
	return dst
}

// bestCopy picks Lookup's copy among the chain of copies starting at b.
// Preferring a referenced copy lets a hit share blocks that are active
// anyway instead of consuming a free one.
func (p *Pool) bestCopy(b BlockID) BlockID {
	best, bestRef := b, p.ref[b] > 0
	for c := p.index.next[b]; c != noBlock; c = p.index.next[c] {
		cRef := p.ref[c] > 0
		if cRef && !bestRef || cRef == bestRef && c < best {
			best, bestRef = c, cRef
		}
	}
	return best
}

// Touch takes one reference on each block, typically the prefix hits
// returned by Lookup; a block that had none leaves the free queue (keeping
// its hash).
func (p *Pool) Touch(blocks []BlockID) {
	for _, b := range blocks {
		if p.ref[b] == 0 {
			p.free.remove(b)
			if p.index.cached[b] {
				p.cachedFree--
			}
			if p.order != nil {
				p.order.taken(p, b)
			}
		}
		if p.order != nil && p.index.cached[b] {
			p.order.use(p.index.hash[b])
		}
		p.ref[b]++
	}
}

// Allocate takes k blocks from the head of the free queue, appends them to
// dst with one reference each and returns the extended slice and true. If
// fewer than k blocks are free it returns dst and false and changes
// nothing. A cached block taken this way is evicted: it leaves the hash
// index, and a Removed event is recorded if it was the hash's last resident
// copy.
func (p *Pool) Allocate(dst []BlockID, k int) ([]BlockID, bool) {
	if k > p.free.n {
		return dst, false
	}
	dst = slices.Grow(dst, k)
	for range k {
		var b BlockID
		if p.order == nil {
			b = p.free.popFront()
		} else {
			b = p.order.victim(p)
			p.free.remove(b)
		}
		if p.index.cached[b] {
			p.cachedFree--
			if h, last := p.index.remove(b); last {
				p.rec.removed(h)
				if p.lower != nil {
					p.lower.offload(h)
				}
			}
		}
		p.ref[b] = 1
		dst = append(dst, b)
	}
	return dst, true
}

// Cache records that blocks[i], for i in [from, to), became full: each gets
// sequence hash hashes[i] and joins the hash index.
// Blocks whose hash had no resident copy are newly announced, and every
// maximal run of them records one Stored event whose parent is the hash of
// the block before the run and whose tokens are tokens[first*bs:end*bs].
// keys are the request's hash keys (cache salt, LoRA adapter), announced as
// the blocks' extra keys and the events' adapter. A
// block already cached under the same hash is left alone. Cache does
// nothing when prefix caching is off.
//
// blocks, hashes and tokens are the request's whole block table, sequence
// hashes and token ids; they are not retained.
func (p *Pool) Cache(blocks []BlockID, hashes []uint64, tokens []uint32, from, to int, keys Keys) {
	if !p.prefixCaching {
		return
	}
	run := -1 // first block of the current run of newly announced blocks
	for i := from; i < to; i++ {
		b, h := blocks[i], hashes[i]
		isNew := false
		if !p.index.cached[b] {
			isNew = p.index.add(b, h)
			if p.order != nil {
				var parent uint64
				if i > 0 {
					parent = hashes[i-1]
				}
				p.order.stored(b, h, parent, i > 0)
			}
		} else if p.index.hash[b] != h {
			panic(fmt.Sprintf("kv: block %d cached as %#x, now %#x", b, p.index.hash[b], h))
		}
		switch {
		case isNew && run < 0:
			run = i
		case !isNew && run >= 0:
			p.rec.stored(hashes, tokens, run, i, p.blockSize, keys)
			run = -1
		}
	}
	if run >= 0 {
		p.rec.stored(hashes, tokens, run, to, p.blockSize, keys)
	}
}

// Release drops one reference on each block, walking from the last block to
// the first; blocks left without references join the tail of the free queue
// and stay cached. Releasing a sequence's deepest blocks first puts them
// nearer the head, so its suffix is evicted before its shared prefix.
func (p *Pool) Release(blocks []BlockID) {
	for _, b := range slices.Backward(blocks) {
		switch p.ref[b] {
		case 0:
			panic(fmt.Sprintf("kv: release of free block %d", b))
		case 1:
			p.ref[b] = 0
			p.free.pushBack(b)
			if p.index.cached[b] {
				p.cachedFree++
			}
			if p.order != nil {
				p.order.release(p, b)
			}
		default:
			p.ref[b]--
		}
	}
}

// Reset clears the prefix cache if no block is active (vLLM refuses a reset
// while requests hold blocks):
// every hash is dropped, the free queue is rebuilt in id order and, with
// prefix caching on, an AllCleared event is recorded. It reports whether
// it did so; with active blocks it changes nothing and returns false.
func (p *Pool) Reset() bool {
	if p.NumActive() != 0 {
		return false
	}
	p.index.reset()
	p.free.reset(len(p.ref))
	p.cachedFree = 0
	if p.order != nil {
		p.order.reset(p)
	}
	if p.lower != nil {
		p.lower.clear()
	}
	if p.prefixCaching {
		p.rec.allCleared()
	}
	return true
}

// SetLower puts offload tiers below the pool: from now on a cached block
// whose last copy is evicted moves to the first tier, and Reset empties
// them too. The tiers record into the pool's event stream. Without prefix
// caching nothing is ever cached, so nothing is offloaded.
func (p *Pool) SetLower(t *Tiers) {
	t.rec = &p.rec
	t.blockSize = p.blockSize
	p.lower = t
}

// Lower returns the offload tiers below the pool, nil when there are none.
func (p *Pool) Lower() *Tiers { return p.lower }

// NumCached returns the number of resident cached hashes on the GPU.
func (p *Pool) NumCached() int { return len(p.index.first) }

// TakeEvents returns the events recorded since the previous call, in the
// order they happened, or nil if there are none. The caller owns the
// returned events.
func (p *Pool) TakeEvents() []Event { return p.rec.take() }

// TakeEventCounts returns how many events of each kind the pool produced
// since the previous call, whether it records them or only counts them.
func (p *Pool) TakeEventCounts() [NumEventKinds]int { return p.rec.takeCounts() }

// CountEventsOnly stops the pool from recording events (TakeEvents returns
// none from then on) and keeps only their counts. An engine whose events
// nobody consumes uses it: recording copies every stored block's token ids.
func (p *Pool) CountEventsOnly() { p.rec.countOnly = true }
