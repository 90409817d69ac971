package mmproc

import (
	"fmt"
	"math"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/media"
)

// Qwen3-VL video, as vLLM's Qwen3VLMultiModalProcessor
// (vllm/model_executor/models/qwen3_vl.py at vllm-project/vllm@4f5768c7)
// and transformers' Qwen3VLVideoProcessor make it:
//
//   - vLLM's OpenCV loader reads 32 frames, np.linspace(0, total-1, 32)
//     truncated to ints, of a longer clip and marks them sampled; a clip of
//     at most 32 frames is read whole and left to the HF processor, which
//     samples it at fps (2) frames a second, within [min_frames,
//     max_frames] and the clip, at np.linspace(…).round() indices;
//   - each frame is resized by the video smart_resize (the frame count in
//     the pixel budget), 32-px units, two frames a temporal patch;
//   - the template's <|vision_start|><|video_pad|><|vision_end|> becomes,
//     per temporal patch, the text "<t seconds>" (t the mean time of its
//     two frames, one decimal) then <|vision_start|>, the patch's
//     <|video_pad|> tokens and <|vision_end|>.

// qwen3Frames returns the source-frame indices of the frames that reach
// the processor, and the time of each in seconds is index / fps.
func (q *qwenVL) qwen3Frames(it media.Item) []int {
	total := max(it.Frames, 1)
	if total > q.videoFrames {
		// The loader's sample; np.linspace(…, dtype=int) truncates.
		return linspace(total, q.videoFrames, math.Trunc)
	}
	n := int(float64(total) / videoFPS(it) * q.sampleFPS)
	n = min(max(n, q.minFrames), q.maxFrames, total)
	return linspace(total, n, math.RoundToEven)
}

// videoFPS is the clip's frame rate as OpenCV reports it; a clip without
// one is taken at 24, HF's sample_frames default for missing metadata.
func videoFPS(it media.Item) float64 {
	switch {
	case it.FPS > 0:
		return it.FPS
	case it.Duration > 0 && it.Frames > 0:
		return float64(it.Frames) / it.Duration.Seconds()
	}
	return 24
}

// linspace is np.linspace(0, total-1, n) with each value mapped to an int
// by conv: i·step, the last exactly total-1.
func linspace(total, n int, conv func(float64) float64) []int {
	idx := make([]int, n)
	if n == 1 {
		return idx
	}
	step := float64(total-1) / float64(n-1)
	for i := range idx {
		idx[i] = int(conv(float64(i) * step))
	}
	idx[n-1] = total - 1
	return idx
}

// videoSmartResize is Qwen3VLVideoProcessor's smart_resize: the image rule
// with the frame count in the pixel budget (t̄·h̄·w̄ against the bounds, β
// over n·h·w), a side under factor first scaled up, and fewer frames than
// one temporal patch refused.
func videoSmartResize(n, height, width, temporal, factor, minPixels, maxPixels int) (int, int, error) {
	if n < temporal {
		return 0, 0, fmt.Errorf("%w: video of %d frames (t:%d must be larger than temporal_factor:%d)", ErrBadItem, n, n, temporal)
	}
	if height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("%w: video of %dx%d pixels", ErrBadItem, width, height)
	}
	if height < factor || width < factor {
		scale := max(float64(factor)/float64(height), float64(factor)/float64(width))
		height, width = int(float64(height)*scale), int(float64(width)*scale)
	}
	h, w := float64(height), float64(width)
	if max(h, w)/min(h, w) > 200 {
		return 0, 0, fmt.Errorf("%w: absolute aspect ratio must be smaller than 200, got %v", ErrBadItem, max(h, w)/min(h, w))
	}
	f := float64(factor)
	hBar := int(math.RoundToEven(h/f)) * factor
	wBar := int(math.RoundToEven(w/f)) * factor
	tBar := int(math.RoundToEven(float64(n)/float64(temporal))) * temporal
	switch {
	case tBar*hBar*wBar > maxPixels:
		beta := math.Sqrt(float64(n) * h * w / float64(maxPixels))
		hBar = max(factor, int(math.Floor(h/beta/f))*factor)
		wBar = max(factor, int(math.Floor(w/beta/f))*factor)
	case tBar*hBar*wBar < minPixels:
		beta := math.Sqrt(float64(minPixels) / (float64(n) * h * w))
		hBar = int(math.Ceil(h*beta/f)) * factor
		wBar = int(math.Ceil(w*beta/f)) * factor
	}
	return hBar, wBar, nil
}

// qwen3VideoReplacement is the video's replacement: per temporal patch its
// timestamp's tokens, then perFrame <|video_pad|> between the markers.
func (q *qwenVL) qwen3VideoReplacement(it media.Item, perFrame int) (Replacement, error) {
	idx := q.qwen3Frames(it)
	// The timestamps pair frames as the video processor's merge_size does
	// (2), the last frame repeated to fill the last pair.
	pair := q.merge
	for len(idx)%pair != 0 {
		idx = append(idx, idx[len(idx)-1])
	}
	fps := videoFPS(it)
	var pieces []Piece
	for i := 0; i < len(idx); i += pair {
		t := (float64(idx[i])/fps + float64(idx[i+pair-1])/fps) / 2
		pieces = append(pieces, timestampPieces(t)...)
		pieces = append(pieces,
			Piece{Token: "<|vision_start|>", Count: 1},
			Piece{Token: "<|video_pad|>", Count: perFrame, Embed: true},
			Piece{Token: "<|vision_end|>", Count: 1})
	}
	return Replacement{Target: qwen3VideoTarget, Pieces: pieces}, nil
}

// timestampPieces are the tokens of f"<{t:.1f} seconds>" in the Qwen
// vocabulary: its pre-tokenizer makes every digit a token of its own, and
// "<", ".", " seconds" and ">" are single tokens (TestPiecesAreSingleTokens
// checks them on the real tokenizer).
func timestampPieces(t float64) []Piece {
	s := strconv.FormatFloat(t, 'f', 1, 64)
	ps := []Piece{{Token: "<", Count: 1}}
	for _, c := range s {
		ps = append(ps, Piece{Token: string(c), Count: 1})
	}
	return append(ps, Piece{Token: " seconds", Count: 1}, Piece{Token: ">", Count: 1})
}
