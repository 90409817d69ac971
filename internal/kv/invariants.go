package kv

import (
	"errors"
	"fmt"
	"slices"
)

// CachedHashes returns every hash with at least one resident copy, sorted
// in ascending order. It is the set a consumer replaying the pool's Stored
// and Removed events should hold; it is meant for tests and checks, not for
// hot paths.
func (p *Pool) CachedHashes() []uint64 {
	hs := make([]uint64, 0, len(p.index.first))
	for h := range p.index.first {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

// CheckInvariants verifies the pool's internal consistency and returns an
// error describing every violation found, or nil: reference counts are
// non-negative; the free queue is a well-linked list holding exactly the
// blocks without references, each once, and its length is NumFree; and the
// hash index holds exactly the cached blocks under their own hashes. It
// costs O(N) and is meant for tests.
func (p *Pool) CheckInvariants() error {
	var errs []error
	fail := func(format string, args ...any) {
		if len(errs) < 20 { // enough to diagnose, bounded for huge pools
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	n := len(p.ref)
	for b, r := range p.ref {
		if r < 0 {
			fail("block %d: negative ref count %d", b, r)
		}
	}

	// Free queue: walk from the head, checking back links and membership.
	inFree := make([]bool, n)
	count := 0
	prev := noBlock
	for b := p.free.head; b != noBlock; b = p.free.next[b] {
		if b < 0 || int(b) >= n {
			fail("free queue: invalid block id %d after %d", b, prev)
			break
		}
		if inFree[b] {
			fail("free queue: block %d linked twice (cycle)", b)
			break
		}
		inFree[b] = true
		count++
		if p.free.prev[b] != prev {
			fail("free queue: block %d has prev %d, want %d", b, p.free.prev[b], prev)
		}
		prev = b
	}
	if p.free.tail != prev {
		fail("free queue: tail is %d, last linked block is %d", p.free.tail, prev)
	}
	if count != p.free.n {
		fail("free queue: %d blocks linked, length says %d", count, p.free.n)
	}
	for b, r := range p.ref {
		if r == 0 && !inFree[b] {
			fail("block %d: no references but not in the free queue", b)
		}
		if r > 0 && inFree[b] {
			fail("block %d: %d references but in the free queue", b, r)
		}
	}
	if p.NumActive()+p.NumFree() != n {
		fail("active %d + free %d != %d blocks", p.NumActive(), p.NumFree(), n)
	}

	// Hash index: every chain holds cached blocks of its hash, and the
	// chains together cover every cached block exactly once.
	x := &p.index
	indexed := make([]bool, n)
	for h, first := range x.first {
		prev := noBlock
		for b := first; b != noBlock; b = x.next[b] {
			if b < 0 || int(b) >= n {
				fail("index %#x: invalid block id %d", h, b)
				break
			}
			if indexed[b] {
				fail("index %#x: block %d indexed twice", h, b)
				break
			}
			indexed[b] = true
			if !x.cached[b] || x.hash[b] != h {
				fail("index %#x: block %d is not cached under it (cached=%v hash=%#x)", h, b, x.cached[b], x.hash[b])
			}
			if x.prev[b] != prev {
				fail("index %#x: block %d has prev %d, want %d", h, b, x.prev[b], prev)
			}
			prev = b
		}
	}
	cachedFree := 0
	for b, c := range x.cached {
		if c && p.ref[b] == 0 {
			cachedFree++
		}
		if c && !indexed[b] {
			fail("block %d: cached as %#x but not in the index", b, x.hash[b])
		}
		if c && !p.prefixCaching {
			fail("block %d: cached although prefix caching is off", b)
		}
	}
	if cachedFree != p.cachedFree {
		fail("%d free blocks are cached, NumCachedFree says %d", cachedFree, p.cachedFree)
	}
	if p.order != nil {
		if err := p.order.check(p); err != nil {
			fail("%v", err)
		}
	}
	return errors.Join(errs...)
}
