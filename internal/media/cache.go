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

// FingerprintBytes is Fingerprint of one part held as bytes (a local
// file's content), without copying it into a string.
func FingerprintBytes(b []byte) Key { return Key(xxh3.Hash128(b)) }

// ItemCache remembers the facts and hash of recently seen items by Key, so
// a repeated image — the common case of a multi-turn conversation that
// resends its history — costs one fingerprint pass instead of a base64
// decode, a probe and a hash. It is the mock's stand-in for vLLM's
// multimodal processor cache (--mm-processor-cache-gb): each entry is
// charged the bytes vLLM's cache would hold for it (ProcessedBytes), the
// least recently used go first when the budget is full, and an item larger
// than the whole budget is not kept. A nil cache, or one with a budget of
// 0, holds nothing (vLLM's 0 disables its cache). Safe for concurrent use.
type ItemCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	byKey  map[Key]*list.Element
	lru    list.List // of *cacheEntry, most recent first
	hits   uint64
	miss   uint64
}

type cacheEntry struct {
	key  Key
	item Item
	size int64
}

// NewItemCache returns a cache of at most budget bytes of entries.
func NewItemCache(budget int64) *ItemCache {
	return &ItemCache{budget: max(budget, 0), byKey: make(map[Key]*list.Element)}
}

// Enabled reports whether the cache can hold anything.
func (c *ItemCache) Enabled() bool { return c != nil && c.budget > 0 }

// Get returns the item cached under k and marks it recently used.
func (c *ItemCache) Get(k Key) (Item, bool) {
	if !c.Enabled() {
		return Item{}, false
	}
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

// Put caches it under k, evicting the least recently used entries to stay
// within the budget.
func (c *ItemCache) Put(k Key, it Item) {
	if !c.Enabled() {
		return
	}
	size := ProcessedBytes(it)
	if size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		ce := e.Value.(*cacheEntry)
		c.used += size - ce.size
		ce.item, ce.size = it, size
		c.lru.MoveToFront(e)
	} else {
		c.byKey[k] = c.lru.PushFront(&cacheEntry{key: k, item: it, size: size})
		c.used += size
	}
	for c.used > c.budget {
		last := c.lru.Back()
		ce := last.Value.(*cacheEntry)
		c.lru.Remove(last)
		delete(c.byKey, ce.key)
		c.used -= ce.size
	}
}

// Stats returns the cache's entries, hits and misses so far.
func (c *ItemCache) Stats() (entries int, hits, misses uint64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.hits, c.miss
}

// ProcessedBytes estimates what vLLM's processor cache holds for an item:
// an image's or video's pixel tensor after the processor (3 channels of
// bfloat16 per pixel and frame), an audio clip's log-mel features (128
// bins × 100 frames per second, float32), else its encoded size.
func ProcessedBytes(it Item) int64 {
	switch it.Kind {
	case KindImage:
		return int64(it.Width) * int64(it.Height) * 3 * 2
	case KindVideo:
		return int64(it.Width) * int64(it.Height) * 3 * 2 * int64(max(it.Frames, 1))
	case KindAudio:
		return int64(it.Duration.Seconds()*100+1) * 128 * 4
	}
	return int64(max(it.Size, 1))
}
