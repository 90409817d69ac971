package mmproc

import (
	"fmt"
	"math"
	"sort"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// internVL is InternVL 2.5 and 3 (InternVLChatModel, vLLM's own
// processor; the model ships none): the image is cut into a grid of
// tile×tile crops whose aspect ratio is the closest of the grids with
// minTiles..maxTiles crops, plus a thumbnail of the whole image when the
// grid has more than one crop. Each crop is tile/patch patches a side,
// pixel-shuffled by downsample (0.5: a quarter), so 448/14 = 32² → 256
// tokens; the replacement is <img> <IMG_CONTEXT>×N </img>.
type internVL struct {
	tile, patch        int
	perTile            int
	minTiles, maxTiles int
	dynamic, thumbnail bool
	enc                vit
	projIn, out        int
}

func newInternVL(cfg *hfConfig) (*internVL, error) {
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	patch := positive(vc.PatchSize, 14)
	ratio := cfg.DownsampleRatio
	if ratio == 0 {
		ratio = 0.5
	}
	if ratio < 0 || ratio > 1 {
		return nil, fmt.Errorf("%w: downsample_ratio %v", ErrBadConfig, ratio)
	}
	v := &internVL{
		// The processor reads vision_config.image_size (force_image_size
		// is the model's; the published configs give both as 448).
		tile:      positive(vc.ImageSize, cfg.ForceImageSize, 448),
		minTiles:  positive(cfg.MinDynamicPatch, 1),
		maxTiles:  positive(cfg.MaxDynamicPatch, 12),
		dynamic:   cfg.DynamicImageSize == nil || *cfg.DynamicImageSize,
		thumbnail: cfg.UseThumbnail == nil || *cfg.UseThumbnail,
	}
	v.patch = patch
	side := v.tile / patch
	// int((image_size // patch_size) ** 2 * (downsample_ratio ** 2))
	v.perTile = int(float64(side*side) * (ratio * ratio))
	if v.perTile <= 0 {
		return nil, fmt.Errorf("%w: InternVL tiles of %d tokens", ErrBadConfig, v.perTile)
	}
	if err := v.checkTiles(); err != nil {
		return nil, err
	}
	layers := positive(vc.NumHiddenLayers, 24)
	// vLLM builds the tower only up to select_layer (-1: all of it).
	if cfg.SelectLayer != nil {
		if s := *cfg.SelectLayer; s < 0 {
			layers += s + 1
		} else {
			layers = min(layers, s+1)
		}
	}
	h := positive(vc.HiddenSize, 1024)
	v.enc = vit{layers: max(layers, 1), hidden: h, inter: positive(vc.IntermediateSize, 4096), patchIn: 3 * patch * patch,
		headDim: h / positive(vc.NumAttnHeads, 16)}
	scale := int(1 / ratio)
	v.projIn = h * scale * scale
	v.out = cfg.textHidden(4096)
	return v, nil
}

func (v *internVL) checkTiles() error {
	if v.minTiles > v.maxTiles || v.maxTiles > 256 {
		return fmt.Errorf("%w: min_dynamic_patch %d, max_dynamic_patch %d", ErrBadConfig, v.minTiles, v.maxTiles)
	}
	return nil
}

func (v *internVL) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (v *internVL) placeholder(media.Kind) string { return "<image>" }

// tiles returns the number of crops the processor makes of a w×h image,
// the thumbnail included: calculate_internvl_targets over
// get_internvl_target_ratios.
func (v *internVL) tiles(w, h int) int {
	g := v.closestGrid(w, h)
	n := g[0] * g[1]
	if v.thumbnail && n != 1 {
		n++
	}
	return n
}

// closestGrid is find_closest_aspect_ratio: the grid (columns, rows) of
// minTiles..maxTiles crops whose aspect ratio is closest to the image's.
func (v *internVL) closestGrid(w, h int) [2]int {
	lo, hi := v.minTiles, v.maxTiles
	if !v.dynamic {
		lo, hi = 1, 1
	}
	// The grids (i columns, j rows) with lo ≤ i·j ≤ hi, by crop count.
	// Python sorts a set, so grids of equal count come in the set's order;
	// which of two equal-count grids wins matters only on an exact tie of
	// their aspect distances, which cannot be the best when lo is 1 (1:k
	// and k:1 lie between any two such grids on one side of 1:1).
	var grids [][2]int
	for i := 1; i <= hi; i++ {
		for j := 1; i*j <= hi; j++ {
			if i*j >= lo {
				grids = append(grids, [2]int{i, j})
			}
		}
	}
	sort.SliceStable(grids, func(a, b int) bool { return grids[a][0]*grids[a][1] < grids[b][0]*grids[b][1] })
	aspect := float64(w) / float64(h)
	area := float64(w) * float64(h)
	bestDiff, best := math.Inf(1), [2]int{1, 1}
	for _, g := range grids {
		diff := math.Abs(aspect - float64(g[0])/float64(g[1]))
		switch {
		case diff < bestDiff:
			bestDiff, best = diff, g
		case diff == bestDiff:
			// A larger grid of the same shape wins when the image covers
			// more than half of it.
			if area > 0.5*float64(v.tile)*float64(v.tile)*float64(g[0])*float64(g[1]) {
				best = g
			}
		}
	}
	return best
}

func (v *internVL) replacement(it media.Item) (Replacement, error) {
	var n int
	switch {
	case it.Kind == media.KindEmbeds:
		if it.EmbedTokens <= 0 {
			return Replacement{}, fmt.Errorf("%w: image embeddings without a token count", ErrBadItem)
		}
		n = it.EmbedTokens
	case it.Width <= 0 || it.Height <= 0:
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	default:
		n = v.tiles(it.Width, it.Height) * v.perTile
	}
	return Replacement{Target: "<image>", Pieces: []Piece{
		{Token: "<img>", Count: 1},
		{Token: "<IMG_CONTEXT>", Count: n, Embed: true},
		{Token: "</img>", Count: 1},
	}}, nil
}

func (v *internVL) encoderFLOPs(it media.Item) (float64, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	tiles := float64(v.tiles(it.Width, it.Height))
	side := v.tile / v.patch
	// Per crop: the tower over its patches and CLS, then mlp1 (a linear
	// layer from the shuffled width to the LLM's, then one LLM-wide) on
	// each of its tokens.
	in, o := float64(v.projIn), float64(v.out)
	perTile := v.enc.flops(side*side+1, 0) + 2*float64(v.perTile)*(in*o+o*o)
	return tiles * perTile, nil
}

// encoderWork is encoderFLOPs as operators: every crop its own sequence
// of patches and CLS, then mlp1 on its tokens.
func (v *internVL) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return nil, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	n := v.tiles(it.Width, it.Height)
	side := v.tile / v.patch
	seq := side*side + 1
	tok := n * v.perTile
	return v.enc.work(n*seq, seq, v.enc.patchEmbed(n*seq), [3]int{tok, v.out, v.projIn}, [3]int{tok, v.out, v.out}), nil
}

func (v *internVL) withKwargs(kw map[string]any) (rules, error) {
	c := *v
	lo, okLo, err := intKwarg(kw, "min_dynamic_patch")
	if err != nil {
		return nil, err
	}
	hi, okHi, err := intKwarg(kw, "max_dynamic_patch")
	if err != nil {
		return nil, err
	}
	if okLo {
		c.minTiles = lo
	}
	if okHi {
		c.maxTiles = hi
	}
	if d, ok := kw["dynamic_image_size"].(bool); ok {
		c.dynamic = d
	}
	if err := c.checkTiles(); err != nil {
		return nil, err
	}
	return &c, nil
}
