package mmproc

import (
	"fmt"

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
}

func newGemma3(cfg *hfConfig, pre *preprocessorConfig) (*gemma3, error) {
	if pre.DoPanAndScan != nil && *pre.DoPanAndScan {
		return nil, fmt.Errorf("%w: Gemma 3 with do_pan_and_scan is not modelled (the crops' token counts depend on the tokenizer's text)", ErrBadConfig)
	}
	g := &gemma3{tokens: positive(cfg.MMTokensPerImage, pre.ImageSeqLength, 256)}
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
	return Replacement{Target: "<start_of_image>", Pieces: []Piece{
		{Token: "\n\n", Count: 1},
		{Token: "<start_of_image>", Count: 1},
		{Token: "<image_soft_token>", Count: n, Embed: true},
		{Token: "<end_of_image>", Count: 1},
		{Token: "\n\n", Count: 1},
	}, Merges: gemmaNewlineMerges}, nil
}

func (g *gemma3) encoderFLOPs(media.Item) (float64, error) {
	// The tower on every patch, then the projection of the pooled tokens.
	return g.enc.flops(g.patches, 0) + 2*float64(g.tokens)*float64(g.enc.hidden)*float64(g.out), nil
}

// gemmaNewlineMerges are vLLM's Gemma 3 _apply_token_matches: "\n\n\n" and
// "\n\n\n\n" are single tokens, so the replacement's "\n\n" next to the
// template's newlines fuses as the tokenizer would fuse the joined text.
var gemmaNewlineMerges = []Merge{
	{First: "\n", Second: "\n\n", Into: "\n\n\n"},
	{First: "\n\n", Second: "\n", Into: "\n\n\n"},
	{First: "\n\n", Second: "\n\n", Into: "\n\n\n\n"},
}
