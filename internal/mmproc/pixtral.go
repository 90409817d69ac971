package mmproc

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/media"
)

// pixtral is Pixtral (and Mistral Small 3.1's Pixtral tower): the image is
// scaled down to fit longest×longest, cut into patch×patch patches (merged
// merge×merge), and laid out row by row: [IMG] per column, [IMG_BREAK]
// after each row, [IMG_END] in place of the last [IMG_BREAK].
type pixtral struct {
	longest, patch, merge int
	enc                   vit
}

func newPixtral(cfg *hfConfig, pre *preprocessorConfig) (*pixtral, error) {
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	p := &pixtral{patch: positive(int(pre.PatchSize), vc.PatchSize, 16), merge: positive(pre.SpatialMergeSize, cfg.SpatialMergeSize, 1)}
	var longest int
	if pre.Size != nil {
		longest = pre.Size.LongestEdge
	}
	p.longest = positive(longest, vc.ImageSize, 1024)
	out := cfg.textHidden(5120)
	h := positive(vc.HiddenSize, 1024)
	p.enc = vit{layers: positive(vc.NumHiddenLayers, 24), hidden: h, inter: positive(vc.IntermediateSize, 4096), gated: true, patchIn: 3 * p.patch * p.patch, mergeIn: h * p.merge * p.merge, out: out,
		headDim: positive(vc.HeadDim, h/positive(vc.NumAttnHeads, 16))}
	return p, nil
}

// grid returns the rows and columns of merged patches for an image.
func (p *pixtral) grid(width, height int) (rows, cols int) {
	ratio := max(float64(width)/float64(p.longest), float64(height)/float64(p.longest))
	if ratio > 1 {
		// HF floors here (its comment: so the result never exceeds longest).
		width = int(float64(width) / ratio)
		height = int(float64(height) / ratio)
	}
	unit := p.patch * p.merge
	return (max(height, 1)-1)/unit + 1, (max(width, 1)-1)/unit + 1
}

func (p *pixtral) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (p *pixtral) placeholder(media.Kind) string { return "[IMG]" }

func (p *pixtral) replacement(it media.Item) (Replacement, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := p.grid(it.Width, it.Height)
	pieces := make([]Piece, 0, 2*rows)
	for r := range rows {
		end := "[IMG_BREAK]"
		if r == rows-1 {
			end = "[IMG_END]"
		}
		pieces = append(pieces, Piece{Token: "[IMG]", Count: cols, Embed: true}, Piece{Token: end, Count: 1})
	}
	return Replacement{Target: "[IMG]", Pieces: pieces}, nil
}

func (p *pixtral) encoderFLOPs(it media.Item) (float64, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := p.grid(it.Width, it.Height)
	mm := p.merge * p.merge
	return p.enc.flops(rows*cols*mm, mm), nil
}
