package mmproc

import (
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/media"
)

// qwenVL is Qwen2-VL, Qwen2.5-VL and Qwen3-VL: an image is resized by
// smart_resize to multiples of patch×merge pixels within [minPixels,
// maxPixels], cut into patch×patch patches, and every merge×merge patches
// become one token.
type qwenVL struct {
	fam                    Family
	patch, merge, temporal int
	minPixels, maxPixels   int
	videoMin, videoMax     int
	videoFrames            int // frames vLLM's video loader samples
	// Qwen3-VL's video processor samples a clip the loader read whole
	// at sampleFPS frames a second, within [minFrames, maxFrames].
	sampleFPS            float64
	minFrames, maxFrames int

	enc vit
}

// DefaultVideoFrames is the number of frames vLLM's video loader samples
// from a clip by default (VideoMediaIO num_frames).
const DefaultVideoFrames = 32

func newQwenVL(fam Family, cfg *hfConfig, pre, video *preprocessorConfig) (*qwenVL, error) {
	q := &qwenVL{fam: fam, videoFrames: DefaultVideoFrames}
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	defPatch, defMin, defMax := 14, 56*56, 28*28*16384 // Qwen2-VL and Qwen2.5-VL
	if fam == FamilyQwen3VL {
		defPatch, defMin, defMax = 16, 256*256, 4096*4096
	}
	q.patch = positive(int(pre.PatchSize), vc.PatchSize, defPatch)
	q.merge = positive(pre.MergeSize, vc.SpatialMergeSize, 2)
	q.temporal = positive(pre.TemporalPatchSize, vc.TemporalPatch, 2)
	var shortest, longest int
	if pre.Size != nil {
		shortest, longest = pre.Size.ShortestEdge, pre.Size.LongestEdge
	}
	// Explicit min_pixels/max_pixels win over size, as the HF processor's
	// constructor has it.
	q.minPixels = positive(pre.MinPixels, shortest, defMin)
	q.maxPixels = positive(pre.MaxPixels, longest, defMax)
	q.videoMin, q.videoMax = 128*28*28, 768*28*28
	if fam == FamilyQwen3VL {
		// The published video_preprocessor_config.json of the Qwen3-VL
		// models (Qwen3VLVideoProcessor; its class defaults differ).
		q.videoMin, q.videoMax = 4096, 25165824
		q.sampleFPS, q.minFrames, q.maxFrames = 2, 4, 768
	}
	if video != nil {
		var vs, vl int
		if video.Size != nil {
			vs, vl = video.Size.ShortestEdge, video.Size.LongestEdge
		}
		q.videoMin = positive(video.MinPixels, vs, q.videoMin)
		q.videoMax = positive(video.MaxPixels, vl, q.videoMax)
		if video.FPS > 0 {
			q.sampleFPS = video.FPS
		}
		q.minFrames = positive(video.MinFrames, q.minFrames)
		q.maxFrames = positive(video.MaxFrames, q.maxFrames)
	}
	if q.minPixels > q.maxPixels {
		return nil, fmt.Errorf("%w: min_pixels %d > max_pixels %d", ErrBadConfig, q.minPixels, q.maxPixels)
	}
	// The vision tower, with each generation's defaults.
	switch fam {
	case FamilyQwen2VL:
		d := positive(vc.EmbedDim, 1280)
		ratio := vc.MLPRatio
		if ratio == 0 {
			ratio = 4
		}
		q.enc = vit{layers: positive(vc.Depth, 32), hidden: d, inter: int(ratio * float64(d)), fullLayers: positive(vc.Depth, 32)}
	case FamilyQwen25VL:
		q.enc = vit{layers: positive(vc.Depth, 32), hidden: positive(vc.HiddenSize, 1280), inter: positive(vc.IntermediateSize, 3420), gated: true}
		q.enc.fullLayers = len(vc.FullAttBlocks)
		if vc.FullAttBlocks == nil {
			q.enc.fullLayers = 4
		}
		// window_size is in pixels: a window is window/patch patches a side.
		w := positive(vc.WindowSize, 112) / q.patch
		q.enc.window = w * w
	case FamilyQwen3VL:
		q.enc = vit{layers: positive(vc.Depth, 27), hidden: positive(vc.HiddenSize, 1152), inter: positive(vc.IntermediateSize, 4304)}
		q.enc.fullLayers = q.enc.layers
	}
	q.enc.headDim = q.enc.hidden / positive(vc.NumHeads, 16)
	q.enc.patchIn = 3 * q.temporal * q.patch * q.patch
	q.enc.mergeIn = q.enc.hidden * q.merge * q.merge
	q.enc.out = positive(vc.OutHiddenSize, vc.HiddenSize)
	if fam != FamilyQwen25VL {
		q.enc.out = cfg.textHidden(q.enc.out)
	}
	return q, nil
}

func (q *qwenVL) modalities() []media.Kind {
	return []media.Kind{media.KindImage, media.KindVideo}
}

// qwen3VideoTarget is what vLLM's Qwen3-VL processor replaces for a video:
// the template's whole <|vision_start|><|video_pad|><|vision_end|>, since
// its replacement puts a timestamp before each frame's own markers.
const qwen3VideoTarget = "<|vision_start|><|video_pad|><|vision_end|>"

func (q *qwenVL) placeholder(k media.Kind) string {
	switch {
	case k == media.KindVideo && q.fam == FamilyQwen3VL:
		return qwen3VideoTarget
	case k == media.KindVideo:
		return "<|video_pad|>"
	}
	return "<|image_pad|>"
}

// SmartResize is the Qwen-VL processors' smart_resize: the size an image
// of height×width is resized to, both sides multiples of factor, its area
// within [minPixels, maxPixels], its aspect ratio kept as far as that
// allows. Python's round (half to even) is kept: vLLM runs the Python
// processor. An aspect ratio over 200 is ErrBadItem, as the processor
// refuses it.
func SmartResize(height, width, factor, minPixels, maxPixels int) (int, int, error) {
	if height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("%w: image of %dx%d pixels", ErrBadItem, width, height)
	}
	h, w := float64(height), float64(width)
	if max(h, w)/min(h, w) > 200 {
		return 0, 0, fmt.Errorf("%w: absolute aspect ratio must be smaller than 200, got %v", ErrBadItem, max(h, w)/min(h, w))
	}
	f := float64(factor)
	hBar := int(math.RoundToEven(h/f)) * factor
	wBar := int(math.RoundToEven(w/f)) * factor
	switch {
	case hBar*wBar > maxPixels:
		beta := math.Sqrt(h * w / float64(maxPixels))
		hBar = max(factor, int(math.Floor(h/beta/f))*factor)
		wBar = max(factor, int(math.Floor(w/beta/f))*factor)
	case hBar*wBar < minPixels:
		beta := math.Sqrt(float64(minPixels) / (h * w))
		hBar = int(math.Ceil(h*beta/f)) * factor
		wBar = int(math.Ceil(w*beta/f)) * factor
	}
	return hBar, wBar, nil
}

// grid returns the patch grid (t, h, w) of an item before merging.
func (q *qwenVL) grid(it media.Item) (t, h, w int, err error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, 0, 0, fmt.Errorf("%w: %s without a size", ErrBadItem, it.Kind)
	}
	factor := q.patch * q.merge
	if it.Kind == media.KindVideo && q.fam == FamilyQwen3VL {
		n := len(q.qwen3Frames(it))
		rh, rw, err := videoSmartResize(n, it.Height, it.Width, q.temporal, factor, q.videoMin, q.videoMax)
		if err != nil {
			return 0, 0, 0, err
		}
		return (n + q.temporal - 1) / q.temporal, rh / q.patch, rw / q.patch, nil
	}
	if it.Kind == media.KindVideo {
		n := q.sampledFrames(it)
		rh, rw, err := SmartResize(it.Height, it.Width, factor, q.videoMin, q.videoMax)
		if err != nil {
			return 0, 0, 0, err
		}
		// An odd frame count is padded with a copy of the last frame.
		return (n + q.temporal - 1) / q.temporal, rh / q.patch, rw / q.patch, nil
	}
	rh, rw, err := SmartResize(it.Height, it.Width, factor, q.minPixels, q.maxPixels)
	if err != nil {
		return 0, 0, 0, err
	}
	return 1, rh / q.patch, rw / q.patch, nil
}

// sampledFrames is how many frames of a video reach the processor: the
// loader's uniform sample, or every frame of a shorter clip.
func (q *qwenVL) sampledFrames(it media.Item) int {
	n := it.Frames
	if n <= 0 {
		n = 1
	}
	return min(n, q.videoFrames)
}

func (q *qwenVL) replacement(it media.Item) (Replacement, error) {
	target := q.placeholder(it.Kind)
	if it.Kind == media.KindEmbeds {
		return embedsReplacement(target, it)
	}
	t, h, w, err := q.grid(it)
	if err != nil {
		return Replacement{}, err
	}
	if it.Kind == media.KindVideo && q.fam == FamilyQwen3VL {
		return q.qwen3VideoReplacement(it, h*w/(q.merge*q.merge))
	}
	n := t * h * w / (q.merge * q.merge)
	return Replacement{Target: target, Pieces: []Piece{{Token: target, Count: n, Embed: true}}}, nil
}

func (q *qwenVL) encoderFLOPs(it media.Item) (float64, error) {
	// The work's count: a video's temporal patches attend one at a time.
	w, err := q.encoderWork(it)
	if err != nil {
		return 0, err
	}
	return w.FLOPs(), nil
}

// embedsReplacement is the replacement of precomputed image embeddings:
// as many placeholder tokens as the tensor has rows.
func embedsReplacement(target string, it media.Item) (Replacement, error) {
	if it.EmbedTokens <= 0 {
		return Replacement{}, fmt.Errorf("%w: image embeddings without a token count", ErrBadItem)
	}
	return Replacement{Target: target, Pieces: []Piece{{Token: target, Count: it.EmbedTokens, Embed: true}}}, nil
}
