package config

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// MMEncoderTPMode is vLLM's --mm-encoder-tp-mode: how the multimodal
// encoder uses the tensor-parallel GPUs.
type MMEncoderTPMode string

// The encoder's tensor-parallel modes.
const (
	// MMEncoderWeights shards the encoder's weights like the language
	// model's (vLLM's default): every GPU works on every item.
	MMEncoderWeights MMEncoderTPMode = "weights"
	// MMEncoderData replicates the encoder: each GPU encodes its share of
	// the pass's items (data parallel).
	MMEncoderData MMEncoderTPMode = "data"
)

// MMLimitSpec is --limit-mm-per-prompt as given: per modality a count or
// vLLM's object form {"count": N, …}.
type MMLimitSpec map[string]any

// MMProcessorKwargs is --mm-processor-kwargs: keyword arguments of the
// model's multimodal processor, as JSON values.
type MMProcessorKwargs map[string]any

// UnfetchedMedia is --mm-unfetched-media: the size the mock gives an
// http(s) item, since it fetches nothing (each such item is counted by
// mocker_mm_unfetched_items_total).
type UnfetchedMedia struct {
	ImageWidth   int     `json:"image_width"`
	ImageHeight  int     `json:"image_height"`
	AudioSeconds float64 `json:"audio_seconds"`
	VideoFrames  int     `json:"video_frames"`
}

// DefaultUnfetchedMedia: a 1024×1024 image, 10 s of audio, 16 frames.
func DefaultUnfetchedMedia() UnfetchedMedia {
	return UnfetchedMedia{ImageWidth: 1024, ImageHeight: 1024, AudioSeconds: 10, VideoFrames: 16}
}

// AudioDuration is the unfetched audio's length.
func (u UnfetchedMedia) AudioDuration() time.Duration {
	return time.Duration(u.AudioSeconds * float64(time.Second))
}

// MMLimits returns --limit-mm-per-prompt as counts per modality: a value
// is a count, or vLLM's object form {"count": N, …} whose other keys
// (num_frames, width, height, …) only size vLLM's memory profiling.
func (c *Config) MMLimits() (map[string]int, error) {
	var spec MMLimitSpec
	if c.LimitMMPerPrompt != nil {
		spec = *c.LimitMMPerPrompt
	}
	out := make(map[string]int, len(spec))
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "image", "audio", "video":
		default:
			return nil, fmt.Errorf("limit_mm_per_prompt: unknown modality %q (want image, audio or video)", k)
		}
		n, err := mmCount(spec[k])
		if err != nil {
			return nil, fmt.Errorf("limit_mm_per_prompt.%s: %v", k, err)
		}
		out[k] = n
	}
	return out, nil
}

func mmCount(v any) (int, error) {
	if m, ok := v.(map[string]any); ok {
		cnt, ok := m["count"]
		if !ok {
			return 0, fmt.Errorf("an object limit needs \"count\"")
		}
		v = cnt
	}
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, fmt.Errorf("must be a non-negative integer, got %s", x)
		}
	case float64:
		f = x
	case int:
		f = float64(x)
	default:
		return 0, fmt.Errorf("must be a non-negative integer or {\"count\": N}, got %v", v)
	}
	if f < 0 || f != float64(int(f)) {
		return 0, fmt.Errorf("must be a non-negative integer, got %v", v)
	}
	return int(f), nil
}

// MMProcessorCacheBytes is --mm-processor-cache-gb in bytes (GiB, as
// vLLM's).
func (c *Config) MMProcessorCacheBytes() int64 { return int64(c.MMProcessorCacheGB * gib) }

// validateMultimodal checks the multimodal keys.
func (v *validator) validateMultimodal(c *Config) {
	if _, err := c.MMLimits(); err != nil {
		v.errorf([]string{"limit_mm_per_prompt"}, "%v", err)
	}
	v.nonNegFinite("mm_processor_cache_gb", c.MMProcessorCacheGB)
	v.nonNegFinite("mm_encoder_ms_per_token", c.MMEncoderMsPerToken)
	v.intMin("max_media_item_bytes", int64(c.MaxMediaItemBytes), 1)
	u := c.Unfetched()
	v.intMin("mm_unfetched_media.image_width", int64(u.ImageWidth), 1)
	v.intMin("mm_unfetched_media.image_height", int64(u.ImageHeight), 1)
	v.nonNegFinite("mm_unfetched_media.audio_seconds", u.AudioSeconds)
	v.intMin("mm_unfetched_media.video_frames", int64(u.VideoFrames), 1)
}

// DefaultMMProcessorModel is the stand-in multimodal model of a --model the
// mock does not know as multimodal (docs/multimodal.md).
const DefaultMMProcessorModel = "Qwen/Qwen2.5-VL-7B-Instruct"

// Unfetched is --mm-unfetched-media with its defaults.
func (c *Config) Unfetched() UnfetchedMedia {
	if c.MMUnfetchedMedia == nil {
		return DefaultUnfetchedMedia()
	}
	return *c.MMUnfetchedMedia
}

// engineMM is the engine's multimodal encoder settings: data-parallel
// encoding spreads a pass's items over the tensor-parallel GPUs.
func (c *Config) engineMM() engine.MMConfig {
	m := engine.MMConfig{EncoderMsPerToken: c.MMEncoderMsPerToken, DisableChunkedMMInput: c.DisableChunkedMMInput}
	if c.MMEncoderTPMode == MMEncoderData {
		m.EncoderDataParallel = max(c.TensorParallelSize, 1)
	} else {
		m.EncoderWeightShards = max(c.TensorParallelSize, 1)
	}
	return m
}

// MMProcessorKwargsJSON is --mm-processor-kwargs as JSON text (nil: not
// set). Its keys are in sorted order: the server's kwargs are not part of
// vLLM's item hash, so their order is not observable.
func (c *Config) MMProcessorKwargsJSON() []byte {
	if c.MMProcessorKwargs == nil {
		return nil
	}
	b, err := json.Marshal(map[string]any(*c.MMProcessorKwargs))
	if err != nil {
		return nil // decoded from JSON, so it encodes
	}
	return b
}
