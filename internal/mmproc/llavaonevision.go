package mmproc

import (
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// llavaOneVision is LLaVA-OneVision (vLLM's llava_onevision.py): LLaVA-NeXT's
// anyres on a SigLIP tower (384 px, 27×27 features a view, no CLS) over
// image_grid_pinpoints' 36 canvases of 1×1 to 6×6 crops ("anyres_max_9"),
// with one more step after the unpadding: when the unpadded grid holds over
// 1.1² × 9 crops' worth of features, both sides are divided by that ratio
// (Python's float //) so that about nine crops' worth remain. A video is
// every sampled frame's features pooled 2×2 (⌈27/2⌉² = 196 each) and one
// newline, behind <video>.
type llavaOneVision struct {
	next *llavaNext
	// frameTokens is a video frame's pooled features; videoFrames the
	// frames vLLM's loader samples.
	frameTokens, videoFrames int
}

func newLlavaOneVision(cfg *hfConfig) (*llavaOneVision, error) {
	next, err := newLlavaNext(cfg)
	if err != nil {
		return nil, err
	}
	stride := 2 // spatial_pool_stride: vLLM's getattr default, not in the config
	side := (next.npatches + stride - 1) / stride
	return &llavaOneVision{next: next, frameTokens: side * side, videoFrames: DefaultVideoFrames}, nil
}

func (l *llavaOneVision) modalities() []media.Kind {
	return []media.Kind{media.KindImage, media.KindVideo}
}

func (l *llavaOneVision) placeholder(k media.Kind) string {
	if k == media.KindVideo {
		return "<video>"
	}
	return "<image>"
}

// tokens returns the image's features: the base view, the unpadded and
// max-9-downscaled grid with its newlines, and the crops the grid has.
func (l *llavaOneVision) tokens(w, h int) (n, crops int) {
	x := l.next
	curH, curW, crops := x.unpaddedGrid(w, h)
	feats, rows := curH*curW, curH
	ratio := math.Sqrt(float64(curH*curW) / float64(9*x.npatches*x.npatches))
	if ratio > 1.1 {
		fh, fw := int(pyFloorDiv(float64(curH), ratio)), int(pyFloorDiv(float64(curW), ratio))
		feats, rows = fh*fw, fh
	}
	return x.base.tokens + feats + rows, crops
}

// pyFloorDiv is Python's float a // b for b > 0 (CPython's float_floor_div:
// from fmod, so a quotient just under an integer is not rounded up to it
// as floor(a/b) may be).
func pyFloorDiv(a, b float64) float64 {
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return 0
	}
	f := math.Floor(div)
	if div-f > 0.5 {
		f++
	}
	return f
}

func (l *llavaOneVision) frames(it media.Item) int {
	return min(max(it.Frames, 1), l.videoFrames)
}

func (l *llavaOneVision) replacement(it media.Item) (Replacement, error) {
	target := l.placeholder(it.Kind)
	if it.Kind == media.KindEmbeds {
		return embedsReplacement(target, it)
	}
	if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: %s without a size", ErrBadItem, it.Kind)
	}
	n := l.frames(it)*l.frameTokens + 1 // the video's one newline
	if it.Kind != media.KindVideo {
		n, _ = l.tokens(it.Width, it.Height)
	}
	return Replacement{Target: target, Pieces: []Piece{{Token: target, Count: n, Embed: true}}}, nil
}

// views is how many 384-px views the tower runs on: the base view and
// every crop of an image, every sampled frame of a video.
func (l *llavaOneVision) views(it media.Item) (int, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: %s without a size", ErrBadItem, it.Kind)
	}
	if it.Kind == media.KindVideo {
		return l.frames(it), nil
	}
	_, crops := l.tokens(it.Width, it.Height)
	return crops + 1, nil
}

// encoderFLOPs: the tower and the projector on every view's features; the
// unpadding, the downscale and the video's pooling cost next to nothing.
func (l *llavaOneVision) encoderFLOPs(it media.Item) (float64, error) {
	n, err := l.views(it)
	if err != nil {
		return 0, err
	}
	one, err := l.next.base.encoderFLOPs(it)
	return float64(n) * one, err
}

func (l *llavaOneVision) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	n, err := l.views(it)
	if err != nil {
		return nil, err
	}
	b := l.next.base
	p := b.positions // each view a sequence of its own
	rows := n * b.tokens
	return b.enc.work(n*p, p, b.enc.patchEmbed(n*p), [3]int{rows, b.out, b.enc.hidden}, [3]int{rows, b.out, b.out}), nil
}
