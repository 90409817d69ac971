package mmproc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// llavaNext is LLaVA-NeXT (llava-v1.6, "anyres"), as vLLM's
// LlavaNextProcessingInfo.get_num_image_tokens counts it
// (vllm/model_executor/models/llava_next.py; transformers'
// LlavaNextProcessor._get_unpadded_features): the base 336×336 view's
// features (LLaVA-1.5's 576), plus the image at the best of
// image_grid_pinpoints cut into 336-px crops of 24×24 features each, the
// padding of the letterboxed image removed, and one image_newline per
// remaining feature row. Every position is an <image> token.
type llavaNext struct {
	base      *llava
	tile      int      // the tower's input size (336)
	npatches  int      // features a crop side (336/14 = 24)
	pinpoints [][2]int // (height, width) canvases
}

func newLlavaNext(cfg *hfConfig) (*llavaNext, error) {
	base, err := newLlava(cfg)
	if err != nil {
		return nil, err
	}
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	l := &llavaNext{base: base, tile: positive(vc.ImageSize, 336)}
	l.npatches = l.tile / positive(vc.PatchSize, 14)
	for _, p := range cfg.ImageGridPinpoints {
		if len(p) != 2 || p[0] <= 0 || p[1] <= 0 {
			return nil, fmt.Errorf("%w: image_grid_pinpoints entry %v", ErrBadConfig, p)
		}
		l.pinpoints = append(l.pinpoints, [2]int{p[0], p[1]})
	}
	if len(l.pinpoints) == 0 {
		// LlavaNextConfig's default.
		l.pinpoints = [][2]int{{336, 672}, {672, 336}, {672, 672}, {1008, 336}, {336, 1008}}
	}
	return l, nil
}

func (l *llavaNext) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (l *llavaNext) placeholder(media.Kind) string { return "<image>" }

// bestResolution is transformers' select_best_resolution: the canvas on
// which the downscaled image keeps the most of its pixels, the least
// wasted canvas breaking ties, the first of equals winning.
func (l *llavaNext) bestResolution(h, w int) (int, int) {
	best, maxEff, minWaste := [2]int{}, 0, -1
	for _, c := range l.pinpoints {
		ch, cw := c[0], c[1]
		scale := min(float64(cw)/float64(w), float64(ch)/float64(h))
		dw, dh := int(float64(w)*scale), int(float64(h)*scale)
		eff := min(dw*dh, w*h)
		waste := cw*ch - eff
		if eff > maxEff || (eff == maxEff && waste < minWaste) {
			best, maxEff, minWaste = c, eff, waste
		}
	}
	return best[0], best[1]
}

// tokens returns the image's features: base, unpadded grid and newlines,
// and the crops the grid has.
func (l *llavaNext) tokens(w, h int) (n, crops int) {
	curH, curW, crops := l.unpaddedGrid(w, h)
	return l.base.tokens + curH*curW + curH, crops
}

// unpaddedGrid returns the feature rows and columns of a w×h image's
// crops after vLLM's unpadding (_get_num_unpadded_features: the padding
// the best resolution added around the image's aspect ratio is cut), and
// the number of crops.
func (l *llavaNext) unpaddedGrid(w, h int) (curH, curW, crops int) {
	bh, bw := l.bestResolution(h, w)
	gh, gw := bh/l.tile, bw/l.tile
	curH, curW = l.npatches*gh, l.npatches*gw
	if float64(w)/float64(h) > float64(curW)/float64(curH) {
		newH := pyRound7Int(float64(h) * (float64(curW) / float64(w)))
		curH -= 2 * ((curH - newH) / 2)
	} else {
		newW := pyRound7Int(float64(w) * (float64(curH) / float64(h)))
		curW -= 2 * ((curW - newW) / 2)
	}
	return curH, curW, gh * gw
}

// pyRound7Int is Python's int(round(x, 7)) for x ≥ 0: x correctly rounded
// to 7 decimals (FormatFloat rounds the exact binary value, as Python's
// round does), then truncated.
func pyRound7Int(x float64) int {
	s := strconv.FormatFloat(x, 'f', 7, 64)
	whole, _, _ := strings.Cut(s, ".")
	n, _ := strconv.Atoi(whole)
	return n
}

func (l *llavaNext) replacement(it media.Item) (Replacement, error) {
	if it.Kind == media.KindEmbeds {
		return embedsReplacement("<image>", it)
	}
	if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	n, _ := l.tokens(it.Width, it.Height)
	return Replacement{Target: "<image>", Pieces: []Piece{{Token: "<image>", Count: n, Embed: true}}}, nil
}

// encoderFLOPs: the tower on the base view and every crop (patches and
// CLS each), then the projector on every crop's features; unpadding and
// the newlines cost nothing.
func (l *llavaNext) encoderFLOPs(it media.Item) (float64, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	_, crops := l.tokens(it.Width, it.Height)
	one, err := l.base.encoderFLOPs(it)
	return float64(crops+1) * one, err
}

func (l *llavaNext) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return nil, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	_, crops := l.tokens(it.Width, it.Height)
	n := crops + 1
	b := l.base
	p := b.positions // each view's patches and CLS: a sequence of its own
	rows := n * b.tokens
	return b.enc.work(n*p, p, b.enc.patchEmbed(n*(p-1)), [3]int{rows, b.out, b.enc.hidden}, [3]int{rows, b.out, b.out}), nil
}
