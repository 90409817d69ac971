package hftokenizer

import (
	"hash/maphash"
	"sync"
)

// Word cache sizing: 64 shards of at most 4096 words bound the cache to
// 262,144 words (a few tens of MB at worst); prose repeats a few thousand
// words, so a full shard is simply emptied rather than tracked for LRU.
const (
	cacheShards        = 64
	cacheWordsPerShard = 4096
)

// wordCache remembers the ids of recently encoded pieces. It is shared by
// every goroutine that encodes with the tokenizer; sharding keeps lock
// contention low.
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu    sync.RWMutex
	words map[string][]uint32
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) shard(word string) *cacheShard {
	return &c.shards[maphash.String(c.seed, word)%cacheShards]
}

// get returns the cached ids of word. The slice is shared: callers copy
// it, never modify it.
func (c *wordCache) get(word string) ([]uint32, bool) {
	s := c.shard(word)
	s.mu.RLock()
	ids, ok := s.words[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []uint32) {
	s := c.shard(word)
	s.mu.Lock()
	if s.words == nil || len(s.words) >= cacheWordsPerShard {
		s.words = make(map[string][]uint32, 256)
	}
	s.words[word] = ids
	s.mu.Unlock()
}
