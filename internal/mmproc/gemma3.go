package mmproc

import (
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/media"
)

// gemma3 is Gemma 3: every image becomes a fixed number of soft tokens
// (SigLIP's 64×64 patches average-pooled to 16×16), wrapped as vLLM's
// Gemma3 processor wraps them: "\n\n<start_of_image>" + N × <image_soft_token>
// + "<end_of_image>\n\n" in place of the template's <start_of_image>.
type gemma3 struct {
	tokens  int
	patches int // the tower's patches at its fixed input size
	enc     vit
	out     int
	pan     panAndScan
}

// panAndScan is Gemma3ImageProcessor's pan-and-scan: an image whose aspect
// ratio reaches minRatio is also cut into 2..maxCrops crops along its long
// side, none under minCrop pixels, each an image of its own to the tower.
type panAndScan struct {
	on       bool
	minCrop  int
	maxCrops int
	minRatio float64
}

func newGemma3(cfg *hfConfig, pre *preprocessorConfig) (*gemma3, error) {
	g := &gemma3{tokens: positive(cfg.MMTokensPerImage, pre.ImageSeqLength, 256)}
	// The image processor's defaults, which Gemma 3's published
	// preprocessor_config.json repeats.
	g.pan = panAndScan{minCrop: positive(pre.PanAndScanMinCropSize, 256), maxCrops: positive(pre.PanAndScanMaxNumCrops, 4), minRatio: 1.2}
	if pre.PanAndScanMinRatio > 0 {
		g.pan.minRatio = pre.PanAndScanMinRatio
	}
	if pre.DoPanAndScan != nil {
		g.pan.on = *pre.DoPanAndScan
	}
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	patch := positive(vc.PatchSize, 14)
	g.enc = vit{layers: positive(vc.NumHiddenLayers, 27), hidden: positive(vc.HiddenSize, 1152), inter: positive(vc.IntermediateSize, 4304), patchIn: 3 * patch * patch}
	g.enc.headDim = g.enc.hidden / positive(vc.NumAttnHeads, 16)
	side := positive(vc.ImageSize, 896) / patch
	g.patches = side * side
	g.out = cfg.textHidden(2560)
	return g, nil
}

func (g *gemma3) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (g *gemma3) placeholder(media.Kind) string { return "<start_of_image>" }

func (g *gemma3) replacement(it media.Item) (Replacement, error) {
	n := g.tokens
	if it.Kind == media.KindEmbeds {
		if it.EmbedTokens <= 0 {
			return Replacement{}, fmt.Errorf("%w: image embeddings without a token count", ErrBadItem)
		}
		n = it.EmbedTokens
	} else if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	seq := []Piece{
		{Token: "\n\n", Count: 1},
		{Token: "<start_of_image>", Count: 1},
		{Token: "<image_soft_token>", Count: n, Embed: true},
		{Token: "<end_of_image>", Count: 1},
		{Token: "\n\n", Count: 1},
	}
	crops := 0
	if it.Kind == media.KindImage {
		crops = g.pan.crops(it.Width, it.Height)
	}
	if crops == 0 {
		return Replacement{Target: "<start_of_image>", Pieces: seq, Merges: gemmaNewlineMerges}, nil
	}
	// vLLM's Gemma3 get_image_repl: "Here is the original image <boi> and
	// here are some crops to help you see better <boi> <boi>…", each <boi>
	// the image sequence, tokenized whole. Gemma 3's tokenizer reads every
	// word with its leading space as one token and the space before a
	// "\n\n" as one of its own (TestPiecesAreSingleTokens checks it).
	var ps []Piece
	for _, w := range []string{"Here", " is", " the", " original", " image", " "} {
		ps = append(ps, Piece{Token: w, Count: 1})
	}
	ps = append(ps, seq...)
	for _, w := range []string{" and", " here", " are", " some", " crops", " to", " help", " you", " see", " better"} {
		ps = append(ps, Piece{Token: w, Count: 1})
	}
	for range crops {
		ps = append(ps, Piece{Token: " ", Count: 1})
		ps = append(ps, seq...)
	}
	return Replacement{Target: "<start_of_image>", Pieces: ps, Merges: gemmaNewlineMerges}, nil
}

// crops is vLLM's Gemma3ProcessingInfo.get_num_crops (after
// Gemma3ImageProcessor.pan_and_scan): 0 when pan-and-scan is off or does
// not apply.
func (p panAndScan) crops(w, h int) int {
	if !p.on || w <= 0 || h <= 0 {
		return 0
	}
	long, short := float64(w), float64(h)
	if h > w {
		long, short = short, long
	}
	if long/short < p.minRatio {
		return 0
	}
	n := min(int(math.Floor(long/float64(p.minCrop))), int(math.Floor(long/short+0.5)))
	n = min(p.maxCrops, max(2, n))
	cw, ch := w, h
	if w >= h {
		cw = int(math.Ceil(float64(w) / float64(n)))
	} else {
		ch = int(math.Ceil(float64(h) / float64(n)))
	}
	if min(cw, ch) < p.minCrop {
		return 0
	}
	return n
}

func (g *gemma3) encoderFLOPs(it media.Item) (float64, error) {
	// The tower on every patch, then the projection of the pooled tokens;
	// each pan-and-scan crop is one more such image.
	one := g.enc.flops(g.patches, 0) + 2*float64(g.tokens)*float64(g.enc.hidden)*float64(g.out)
	return float64(1+g.pan.crops(it.Width, it.Height)) * one, nil
}

// gemmaNewlineMerges are vLLM's Gemma 3 _apply_token_matches: "\n\n\n" and
// "\n\n\n\n" are single tokens, so the replacement's "\n\n" next to the
// template's newlines fuses as the tokenizer would fuse the joined text.
var gemmaNewlineMerges = []Merge{
	{First: "\n", Second: "\n\n", Into: "\n\n\n"},
	{First: "\n\n", Second: "\n", Into: "\n\n\n"},
	{First: "\n\n", Second: "\n\n", Into: "\n\n\n\n"},
}
