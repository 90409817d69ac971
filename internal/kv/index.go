package kv

// hashIndex maps sequence hashes to their resident copies (a hash has
// several when requests computed the same block before either was cached).
// Nearly every hash has exactly one copy, so the map holds only the first
// copy and further copies are chained through per-block links: the
// index never allocates except when the map grows, and it is presized for
// the largest possible number of hashes. Copy order never depends on map
// iteration, so the pool's choices and events are deterministic.
type hashIndex struct {
	first map[uint64]BlockID
	// cached[b] says whether hash[b] is valid: any uint64, zero included,
	// is a possible hash.
	cached []bool
	hash   []uint64
	// prev and next link the copies of one hash; noBlock ends the chain.
	prev, next []BlockID
}

func newHashIndex(numBlocks int, enabled bool) hashIndex {
	x := hashIndex{
		cached: make([]bool, numBlocks),
		hash:   make([]uint64, numBlocks),
		prev:   make([]BlockID, numBlocks),
		next:   make([]BlockID, numBlocks),
	}
	if enabled {
		x.first = make(map[uint64]BlockID, numBlocks)
	}
	for i := range numBlocks {
		x.prev[i], x.next[i] = noBlock, noBlock
	}
	return x
}

// lookup returns the first copy of h, if any; further copies follow
// through next.
func (x *hashIndex) lookup(h uint64) (BlockID, bool) {
	b, ok := x.first[h]
	return b, ok
}

// add records uncached block b as a copy of h and reports whether h had no
// resident copy before.
func (x *hashIndex) add(b BlockID, h uint64) (isNew bool) {
	x.cached[b] = true
	x.hash[b] = h
	head, ok := x.first[h]
	x.prev[b] = noBlock
	if !ok {
		x.next[b] = noBlock
		x.first[h] = b
		return true
	}
	// Insert after the head, which keeps the map entry untouched.
	x.prev[b] = head
	x.next[b] = x.next[head]
	if x.next[head] != noBlock {
		x.prev[x.next[head]] = b
	}
	x.next[head] = b
	return false
}

// remove uncaches block b, which must be cached, and reports whether it was
// the last resident copy of its hash h.
func (x *hashIndex) remove(b BlockID) (h uint64, last bool) {
	h = x.hash[b]
	p, n := x.prev[b], x.next[b]
	switch {
	case p != noBlock:
		x.next[p] = n
		if n != noBlock {
			x.prev[n] = p
		}
	case n != noBlock:
		x.prev[n] = noBlock
		x.first[h] = n
	default:
		delete(x.first, h)
		last = true
	}
	x.cached[b] = false
	x.hash[b] = 0
	x.prev[b], x.next[b] = noBlock, noBlock
	return h, last
}

// reset uncaches every block.
func (x *hashIndex) reset() {
	clear(x.first) // keeps the map's capacity
	clear(x.cached)
	clear(x.hash)
	for i := range x.prev {
		x.prev[i], x.next[i] = noBlock, noBlock
	}
}
