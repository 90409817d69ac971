package kv

// BlockHash returns the sequence hash block b is cached under, and false
// when b holds no cached hash (never filled, evicted or reset). Inspectors
// (the live UI) use it to label blocks; the pool's own logic never needs it.
func (p *Pool) BlockHash(b BlockID) (uint64, bool) {
	if !p.index.cached[b] {
		return 0, false
	}
	return p.index.hash[b], true
}

// NumCachedFree returns the number of free blocks that are still cached:
// prefix-cache content a later request can hit, evicted only when the
// blocks are reused.
func (p *Pool) NumCachedFree() int { return p.cachedFree }
