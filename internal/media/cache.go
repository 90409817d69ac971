package media

import (
	"container/list"
	"sync"

	"github.com/zeebo/xxh3"
)

// Key identifies an encoded item and whatever else its facts depend on (the
// hash options), by a 128-bit fingerprint of their text.
type Key xxh3.Uint128

// Fingerprint returns the Key of parts: typically the data URL (or base64
// payload) as the request carries it, then the hash options that vary per
// request (a canonical form of mm_processor_kwargs). Each part is length-
// prefixed, so part boundaries cannot shift. It reads every byte once at
// xxh3's speed (several GB/s), decodes nothing and allocates nothing for a
// single part. The fingerprint is not cryptographic: a client able to craft
// colliding payloads could make two items share a cached hash, which in a
// mock costs only the realism of that client's own prefix-cache hits.
func Fingerprint(parts ...string) Key {
	if len(parts) == 1 {
		return Key(xxh3.HashString128(parts[0]))
	}
	h := xxh3.New()
	var n [8]byte
	for _, p := range parts {
		l := len(p)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.WriteString(p)
	}
	return Key(h.Sum128())
}

// ItemCache remembers the facts and hash of recently seen items by Key, so
// a repeated image — the common case of a multi-turn conversation that
// resends its history — costs one fingerprint pass instead of a base64
// decode, a probe and a hash. It holds at most its capacity of entries,
// evicting the least recently used. Safe for concurrent use; the zero
// value is not usable, use NewItemCache.
type ItemCache struct {
	mu    sync.Mutex
	max   int
	byKey map[Key]*list.Element
	lru   list.List // of *cacheEntry, most recent first
	hits  uint64
	miss  uint64
}

type cacheEntry struct {
	key  Key
	item Item
}

// NewItemCache returns a cache of at most entries items (at least 1).
func NewItemCache(entries int) *ItemCache {
	return &ItemCache{max: max(entries, 1), byKey: make(map[Key]*list.Element)}
}

// Get returns the item cached under k and marks it recently used.
func (c *ItemCache) Get(k Key) (Item, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		c.miss++
		return Item{}, false
	}
	c.hits++
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).item, true
}

// Put caches it under k, evicting the least recently used entry when full.
func (c *ItemCache) Put(k Key, it Item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		e.Value.(*cacheEntry).item = it
		c.lru.MoveToFront(e)
		return
	}
	c.byKey[k] = c.lru.PushFront(&cacheEntry{key: k, item: it})
	if c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
}

// Stats returns the cache's entries, hits and misses so far.
func (c *ItemCache) Stats() (entries int, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.hits, c.miss
}
