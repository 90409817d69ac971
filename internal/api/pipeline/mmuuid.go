package pipeline

import (
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/media"
)

// A part's uuid (docs/multimodal.md, "uuid-only parts"). vLLM's processor
// names an item by the client's uuid instead of its content hash
// (BaseMultiModalProcessor._hash_mm_items) and keys its processor cache on
// that name, so an item sent once with a uuid can later be sent as the
// uuid alone: a cache hit reuses the processed item; a miss is vLLM's
// "Cache miss for image at index 0 but data is not provided."
// (_get_cache_missing_items, vllm/multimodal/processing/processor.py at
// vllm-project/vllm@41fff23a). The mock's item cache does the same for raw
// media: a part with a uuid is cached under the uuid, not its bytes.
// Embeddings bypass vLLM's processor cache (passthrough data) and keep
// their content key.

// uuidKey is the item-cache key of a part named by its uuid. The modality
// is part of the key so that an audio part cannot reuse an image's facts
// (vLLM's cache, keyed by the uuid alone, would hand the audio processor an
// image's features).
func uuidKey(p input.MediaPart) media.Key {
	return media.Fingerprint("uuid", string(p.Modality), p.UUID)
}

// uuidSource looks a raw part with a uuid up in the item cache by its
// uuid under the request's kwargs (sc): byUUID reports that the part is
// cached under its uuid (src.key); a hit is returned as src. A uuid-only
// part that misses (not cached, evicted, or the cache off) is vLLM's
// cache-miss error, nth being the part's index among the request's items
// of its modality.
func (s *Server) uuidSource(p input.MediaPart, sc *mmScope, nth int) (byUUID bool, src partSource, e *wire.APIError) {
	if p.UUID == "" || p.Modality.Embeds() {
		return false, partSource{}, nil
	}
	// Under a request's kwargs vLLM's cache key is the uuid hashed with
	// them (mmkwargs.go), so the same uuid under other kwargs misses.
	key := sc.cacheKey(uuidKey(p))
	if cached, hit := s.mmCache.Get(key); hit {
		return true, partSource{key: key, hit: true, cached: cached}, nil
	}
	if p.NoData {
		return true, partSource{}, wire.ErrInvalid(p.Path, "Cache miss for %s at index %d but data is not provided.", p.Modality, nth)
	}
	return true, partSource{key: key}, nil
}

// keepRemoteByUUID caches an unfetched http(s) item under its part's uuid,
// as vLLM's cache keeps the fetched item under it, so that a later
// uuid-only part finds it. An item without a uuid is not cached (its hash
// is the URL's, its facts the configured defaults).
func (s *Server) keepRemoteByUUID(p input.MediaPart, key media.Key, it media.Item) {
	if p.UUID == "" || p.Modality.Embeds() || !s.mmCache.Enabled() {
		return
	}
	s.mmCache.Put(key, it)
	if s.mmObs != nil {
		s.mmObs.ObserveMMCache(1, 0)
	}
}
