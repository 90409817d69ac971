package settings

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// MultimodalOptions are the settings of multimodal content parts
// (docs/multimodal.md). The zero value refuses every part as a text-only
// vLLM model does ("At most 0 image(s) may be provided in one prompt.").
type MultimodalOptions struct {
	// Processor is the model's multimodal processor (placeholder tokens
	// per item, encoder FLOPs); nil: a text-only model.
	Processor *mmproc.Processor
	// LimitPerPrompt is --limit-mm-per-prompt: the most items of each
	// modality ("image", "audio", "video") one prompt may carry. A
	// modality absent from the map has vLLM's default, DefaultMMLimit.
	LimitPerPrompt map[string]int
	// MaxItemBytes bounds one item's decoded bytes (a data URL's payload,
	// a local file's size); larger items are a 400 before anything is
	// allocated for them.
	MaxItemBytes int
	// AllowedLocalMediaPath is --allowed-local-media-path: file:// URLs
	// under this directory are read (their headers); "" refuses them.
	AllowedLocalMediaPath string
	// AllowedMediaDomains is --allowed-media-domains: an http(s) URL's
	// host must be one of them (empty: any host).
	AllowedMediaDomains []string
	// EnableEmbeds is --enable-mm-embeds: image_embeds and audio_embeds
	// parts (precomputed embeddings) are accepted, and bypass a modality
	// limit of 0; false refuses them as vLLM does.
	EnableEmbeds bool
	// EmbedsHiddenSize is the served model's text hidden size, which every
	// image_embeds and audio_embeds row must match as vLLM requires; 0:
	// not known (a stand-in --mm-processor-model, or a config that does
	// not give it), not checked.
	EmbedsHiddenSize int
	// InterleaveStrings is --interleave-mm-strings: in a string-content
	// prompt each item's placeholder stays where its part stands among
	// the message's text parts instead of going before them.
	InterleaveStrings bool
	// Remote* size an http(s) item the mock does not fetch: an image of
	// RemoteImageWidth × RemoteImageHeight pixels, audio of RemoteDuration,
	// a video of RemoteVideoFrames frames of the image size. Each such item
	// is counted by MMObserver.ObserveUnfetchedMedia.
	RemoteImageWidth, RemoteImageHeight int
	RemoteDuration                      time.Duration
	RemoteVideoFrames                   int
	// Hash is vLLM's multimodal hash setting (algorithm, model id).
	Hash media.HashOptions
	// ProcessorCacheBytes is --mm-processor-cache-gb in bytes: the
	// processed items kept by hash, so a repeated item costs a lookup
	// (0: no cache, every item is a miss, as vLLM with the cache off).
	ProcessorCacheBytes int64
}

// DefaultMMLimit is vLLM's default --limit-mm-per-prompt of a modality the
// model supports (MultiModalConfig: 999 when the flag leaves it out).
const DefaultMMLimit = 999

// MMObserver counts the multimodal items a server saw (metrics.Registry
// implements it). Methods must be safe for concurrent use.
type MMObserver interface {
	// ObserveMMCache counts processor-cache queries and hits (vLLM's
	// vllm:mm_cache_queries and vllm:mm_cache_hits, in items).
	ObserveMMCache(queries, hits int)
	// ObserveUnfetchedMedia counts an http(s) item sized from the
	// configured defaults because the mock fetches nothing.
	ObserveUnfetchedMedia(modality string)
}
