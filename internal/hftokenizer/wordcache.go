package hftokenizer

import (
	"hash/maphash"
	"sync/atomic"
)

// cacheSlots is the number of words the cache holds at most (a power of
// two). Prose repeats a few thousand distinct words, so 64k slots hit
// almost always, and the memory stays bounded (a few MB at worst).
const cacheSlots = 1 << 16

// wordCache remembers the ids of recently encoded pieces. It is a
// direct-mapped table of atomic pointers: a lookup is one hash, one load
// and one string compare, with no lock, so every goroutine encoding with
// the tokenizer shares it without contention. A colliding word simply
// replaces the previous one.
type wordCache struct {
	seed  maphash.Seed
	slots [cacheSlots]atomic.Pointer[cachedWord]
}

// cachedWord is immutable once published.
type cachedWord struct {
	word string
	ids  []uint32
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) slot(word string) *atomic.Pointer[cachedWord] {
	return &c.slots[maphash.String(c.seed, word)&(cacheSlots-1)]
}

// get returns the cached ids of word. The slice is shared: callers copy
// it, never modify it.
func (c *wordCache) get(word string) ([]uint32, bool) {
	if entry := c.slot(word).Load(); entry != nil && entry.word == word {
		return entry.ids, true
	}
	return nil, false
}

func (c *wordCache) put(word string, ids []uint32) {
	c.slot(word).Store(&cachedWord{word: word, ids: ids})
}
