package pipeline

import (
	"container/list"
	"sync"

	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/zeebo/xxh3"
)

// mmCache is the mock's multimodal processor cache (vLLM's
// --mm-processor-cache-gb): probed and hashed items by the content of their
// bytes, least recently used first out, so a repeated item costs one
// xxh3 pass over its bytes instead of a probe and vLLM's hash (which
// decodes a PNG's pixels). Each entry is charged the bytes vLLM's cache
// would hold for it: the processed tensors, estimated from the item's size
// (processedBytes). A zero budget disables it, as vLLM's 0 does. Keys are
// the item as sent (mmKey), so a repeat skips the base64 decode too.
type mmCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  *list.List // of *mmEntry, most recent first
	byKey  map[xxh3.Uint128]*list.Element
}

type mmEntry struct {
	key  xxh3.Uint128
	item media.Item
	size int64
}

func newMMCache(budget int64) *mmCache {
	return &mmCache{budget: budget, order: list.New(), byKey: map[xxh3.Uint128]*list.Element{}}
}

func (c *mmCache) enabled() bool { return c != nil && c.budget > 0 }

// mmKey is an item's cache key: xxh3-128 of the item as the request
// carries it (a data URL, an input_audio payload: a repeat skips even the
// base64 decode) or of a local file's bytes.
type mmKey = xxh3.Uint128

func keyOfText(s string) mmKey  { return xxh3.HashString128(s) }
func keyOfBytes(b []byte) mmKey { return xxh3.Hash128(b) }

// lookup returns the cached facts (with the hash) of the item keyed k.
func (c *mmCache) lookup(k mmKey) (mmEntry, bool) {
	if !c.enabled() {
		return mmEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return mmEntry{}, false
	}
	c.order.MoveToFront(el)
	return *el.Value.(*mmEntry), true
}

// store keeps data's item, evicting the least recently used entries to
// stay within the budget; an item larger than the whole budget is not
// kept.
func (c *mmCache) store(k mmKey, it media.Item) {
	if !c.enabled() {
		return
	}
	size := processedBytes(it)
	if size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	for c.used+size > c.budget {
		last := c.order.Back()
		e := last.Value.(*mmEntry)
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.used -= e.size
	}
	c.byKey[k] = c.order.PushFront(&mmEntry{key: k, item: it, size: size})
	c.used += size
}

// processedBytes estimates what vLLM's processor cache holds for an item:
// an image's or video's pixel tensor after the processor (3 channels of
// bfloat16 per pixel and frame), an audio clip's log-mel features (128
// bins × 100 frames per second, float32), else its encoded size.
func processedBytes(it media.Item) int64 {
	switch it.Kind {
	case media.KindImage:
		return int64(it.Width) * int64(it.Height) * 3 * 2
	case media.KindVideo:
		return int64(it.Width) * int64(it.Height) * 3 * 2 * int64(max(it.Frames, 1))
	case media.KindAudio:
		return int64(it.Duration.Seconds()*100+1) * 128 * 4
	}
	return int64(max(it.Size, 1))
}
