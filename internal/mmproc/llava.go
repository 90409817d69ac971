package mmproc

import (
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/media"
)

// llava is LLaVA-1.5: a CLIP tower on a fixed 336×336 crop, every patch
// one token (the CLS position dropped by the "default" feature strategy).
// A SigLIP tower (LLaVA-OneVision's) has no CLS position.
type llava struct {
	tokens int
	// positions is the tower's sequence per view: the patches and CLS.
	positions int
	enc       vit
	out       int
}

func newLlava(cfg *hfConfig) (*llava, error) {
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	patch, size := positive(vc.PatchSize, 14), positive(vc.ImageSize, 336)
	side := size / patch
	cls := 1
	if strings.Contains(vc.ModelType, "siglip") {
		cls = 0
	}
	l := &llava{tokens: side*side + cls, positions: side*side + cls}
	switch cfg.VisionFeatureSelectStrategy {
	case "", "default":
		l.tokens-- // vLLM drops the first position, CLS or not
	case "full":
	default:
		return nil, fmt.Errorf("%w: vision_feature_select_strategy %q", ErrBadConfig, cfg.VisionFeatureSelectStrategy)
	}
	layers := positive(vc.NumHiddenLayers, 24)
	// vLLM runs the tower only up to the feature layer (-2 by default).
	if fl, ok := cfg.VisionFeatureLayer.(float64); ok && fl < 0 {
		layers += int(fl) + 1
	} else if cfg.VisionFeatureLayer == nil {
		layers--
	}
	l.enc = vit{layers: max(layers, 1), hidden: positive(vc.HiddenSize, 1024), inter: positive(vc.IntermediateSize, 4096), patchIn: 3 * patch * patch}
	l.enc.headDim = l.enc.hidden / positive(vc.NumAttnHeads, 16)
	l.out = cfg.textHidden(4096)
	return l, nil
}

func (l *llava) modalities() []media.Kind      { return []media.Kind{media.KindImage} }
func (l *llava) placeholder(media.Kind) string { return "<image>" }

func (l *llava) replacement(it media.Item) (Replacement, error) {
	if it.Kind == media.KindEmbeds {
		return embedsReplacement("<image>", it)
	}
	if it.Width <= 0 || it.Height <= 0 {
		return Replacement{}, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	return Replacement{Target: "<image>", Pieces: []Piece{{Token: "<image>", Count: l.tokens, Embed: true}}}, nil
}

func (l *llava) encoderFLOPs(media.Item) (float64, error) {
	d, o := float64(l.enc.hidden), float64(l.out)
	// The tower over the patches and CLS, then the two-layer projector.
	return l.enc.flops(l.positions, 0) + 2*float64(l.tokens)*(d*o+o*o), nil
}
