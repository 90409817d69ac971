package mmproc

import (
	"fmt"
	"slices"

	"github.com/mocker-server/mocker-server/internal/media"
)

// llama4 is Llama 4: an image is fitted onto a canvas of up to maxTiles
// tiles of tile×tile pixels (the smallest upscale, else the largest
// downscale, among the tile grids), each tile's patches pixel-shuffled to
// a quarter; more than one tile adds a global thumbnail tile. The
// replacement is HF's _prompt_split_image, which vLLM uses as is.
type llama4 struct {
	tile, maxTiles int
	maxCanvas      bool
	perTile        int
	grids          [][2]int // (rows, cols) candidates, find_supported_resolutions' order
	enc            vit
	out            int
}

func newLlama4(cfg *hfConfig, pre *preprocessorConfig) (*llama4, error) {
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	l := &llama4{tile: positive(vc.ImageSize, 336), maxTiles: positive(pre.MaxPatches, 16)}
	if l.maxTiles > 256 {
		return nil, fmt.Errorf("%w: max_patches %d (at most 256)", ErrBadConfig, l.maxTiles)
	}
	if pre.Size != nil && pre.Size.Height > 0 {
		l.tile = pre.Size.Height
	}
	if pre.ResizeToMaxCanvas != nil {
		l.maxCanvas = *pre.ResizeToMaxCanvas
	}
	patch := positive(vc.PatchSize, 14)
	shuffle := vc.PixelShuffle
	if shuffle == 0 {
		shuffle = 0.5
	}
	side := l.tile / patch
	l.perTile = int(float64(side*side) * shuffle * shuffle)
	l.grids = supportedGrids(l.maxTiles)
	l.enc = vit{layers: positive(vc.NumHiddenLayers, 34), hidden: positive(vc.HiddenSize, 1408), inter: positive(vc.IntermediateSize, 5632), patchIn: 3 * patch * patch}
	l.enc.headDim = l.enc.hidden / positive(vc.NumAttnHeads, 16)
	l.out = cfg.textHidden(5120)
	return l, nil
}

// supportedGrids lists the tile grids of at most n tiles, grouped by
// aspect ratio in order of first appearance as the tile count falls from n,
// as find_supported_resolutions orders them (the order breaks ties).
func supportedGrids(n int) [][2]int {
	type group struct {
		num, den int
		grids    [][2]int
	}
	var groups []group
	for c := n; c >= 1; c-- {
		for h := 1; h <= c; h++ {
			if c%h != 0 {
				continue
			}
			w := c / h
			i := slices.IndexFunc(groups, func(g group) bool { return g.num*w == h*g.den })
			if i < 0 {
				groups = append(groups, group{num: h, den: w})
				i = len(groups) - 1
			}
			groups[i].grids = append(groups[i].grids, [2]int{h, w})
		}
	}
	var out [][2]int
	for _, g := range groups {
		out = append(out, g.grids...)
	}
	return out
}

// tiles picks the canvas for an image as get_best_fit does: per grid the
// scale that fits the image in it (the smaller of the two axes' scales);
// the smallest scale ≥ 1 if any (the largest with resize_to_max_canvas),
// else the largest scale; among grids of that scale the fewest tiles, the
// first in order on a tie.
func (l *llama4) tiles(width, height int) (rows, cols int) {
	scales := make([]float64, len(l.grids))
	sel, up := 0.0, false
	for i, g := range l.grids {
		s := min(float64(g[0]*l.tile)/float64(height), float64(g[1]*l.tile)/float64(width))
		scales[i] = s
		switch {
		case s >= 1 && !up:
			sel, up = s, true
		case s >= 1 && l.maxCanvas:
			sel = max(sel, s)
		case s >= 1:
			sel = min(sel, s)
		case !up:
			sel = max(sel, s)
		}
	}
	area := 0
	for i, g := range l.grids {
		if scales[i] == sel && (area == 0 || g[0]*g[1] < area) {
			rows, cols, area = g[0], g[1], g[0]*g[1]
		}
	}
	return rows, cols
}

func (l *llama4) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (l *llama4) placeholder(media.Kind) string { return "<|image|>" }

func (l *llama4) replacement(it media.Item) (Replacement, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := l.tiles(it.Width, it.Height)
	pieces := []Piece{{Token: "<|image_start|>", Count: 1}}
	if rows*cols > 1 {
		for range rows {
			for x := range cols {
				pieces = append(pieces, Piece{Token: "<|patch|>", Count: l.perTile, Embed: true})
				if x < cols-1 {
					pieces = append(pieces, Piece{Token: "<|tile_x_separator|>", Count: 1})
				}
			}
			pieces = append(pieces, Piece{Token: "<|tile_y_separator|>", Count: 1})
		}
	}
	pieces = append(pieces,
		Piece{Token: "<|image|>", Count: 1},
		Piece{Token: "<|patch|>", Count: l.perTile, Embed: true},
		Piece{Token: "<|image_end|>", Count: 1})
	return Replacement{Target: "<|image|>", Pieces: pieces}, nil
}

func (l *llama4) encoderFLOPs(it media.Item) (float64, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := l.tiles(it.Width, it.Height)
	n := rows * cols
	if n > 1 {
		n++ // the global tile
	}
	patches := l.perTile * 4 // before the pixel shuffle
	d, o := float64(l.enc.hidden), float64(l.out)
	perTile := l.enc.flops(patches+1, 0) + 2*float64(l.perTile)*(4*d*o+o*o)
	return float64(n) * perTile, nil
}
