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
	tokens int
	enc    vit
	out    int
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
	side := positive(vc.ImageSize, 896) / patch
	g.enc.window = 0
	g.enc.fullLayers = g.enc.layers
	g.enc.mergeIn = side * side // stash the patch count
	g.out = 2560
	if cfg.TextConfig != nil && cfg.TextConfig.HiddenSize > 0 {
		g.out = cfg.TextConfig.HiddenSize
	}
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
	}}, nil
}

func (g *gemma3) encoderFLOPs(media.Item) (float64, error) {
	patches := g.enc.mergeIn
	e := g.enc
	e.mergeIn = 0
	// The tower on every patch, then the projection of the pooled tokens.
	return e.flops(patches, 0) + 2*float64(g.tokens)*float64(e.hidden)*float64(g.out), nil
}

// llava is LLaVA-1.5: a CLIP tower on a fixed 336×336 crop, every patch
// one token (the CLS position dropped by the "default" feature strategy).
type llava struct {
	tokens int
	enc    vit
	out    int
}

func newLlava(cfg *hfConfig) (*llava, error) {
	vc := cfg.VisionConfig
	if vc == nil {
		vc = &visionConfig{}
	}
	patch, size := positive(vc.PatchSize, 14), positive(vc.ImageSize, 336)
	side := size / patch
	l := &llava{tokens: side * side}
	switch cfg.VisionFeatureSelectStrategy {
	case "", "default":
	case "full":
		l.tokens++ // the CLS position too
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
	l.out = 4096
	if cfg.TextConfig != nil && cfg.TextConfig.HiddenSize > 0 {
		l.out = cfg.TextConfig.HiddenSize
	}
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
	return l.enc.flops(l.tokens+1, 0) + 2*float64(l.tokens)*(d*o+o*o), nil
}

// qwen2Audio is Qwen2-Audio: Whisper's log-mel features of the clip at
// 16 kHz, at most 30 s (longer audio is truncated), padded to 30 s for the
// encoder; the unpadded frames, halved by the encoder's stride-2 conv and
// again by its average pool, are the tokens.
type qwen2Audio struct {
	rate, hop, nSamples, mels int
	enc                       vit
	positions, out            int
}

func newQwen2Audio(cfg *hfConfig, pre *preprocessorConfig) (*qwen2Audio, error) {
	q := &qwen2Audio{
		rate:     positive(pre.SamplingRate, 16000),
		hop:      positive(pre.HopLength, 160),
		mels:     positive(pre.FeatureSize, 128),
		nSamples: positive(pre.NSamples, 480000),
	}
	if pre.ChunkLength > 0 && pre.NSamples == 0 {
		q.nSamples = pre.ChunkLength * q.rate
	}
	ac := cfg.AudioConfig
	if ac == nil {
		ac = &audioConfig{}
	}
	q.enc = vit{layers: positive(ac.EncoderLayers, 32), hidden: positive(ac.DModel, 1280), inter: positive(ac.EncoderFFN, 5120)}
	q.positions = positive(ac.MaxSourcePos, q.nSamples/q.hop/2)
	q.out = 4096
	if cfg.TextConfig != nil && cfg.TextConfig.HiddenSize > 0 {
		q.out = cfg.TextConfig.HiddenSize
	}
	return q, nil
}

func (q *qwen2Audio) modalities() []media.Kind      { return []media.Kind{media.KindAudio} }
func (q *qwen2Audio) placeholder(media.Kind) string { return "<|AUDIO|>" }

// floorDiv is Python's // for the encoder's length formula.
func floorDiv(a, b int) int {
	d := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		d--
	}
	return d
}

// Samples returns how many samples a clip has once resampled to the
// feature extractor's rate: librosa's ceil(n × target / orig).
func resampled(it media.Item, target int) int {
	rate := it.SampleRate
	if rate <= 0 {
		rate = target
	}
	// The clip's own sample count, recovered from its duration.
	n := (int64(it.Duration)*int64(rate) + 5e8) / 1e9
	if rate == target {
		return int(n)
	}
	return int((n*int64(target) + int64(rate) - 1) / int64(rate))
}

func (q *qwen2Audio) replacement(it media.Item) (Replacement, error) {
	if it.Duration <= 0 {
		return Replacement{}, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	n := min(resampled(it, q.rate), q.nSamples)
	frames := (n + q.hop - 1) / q.hop // the attention mask taken every hop samples
	conv := floorDiv(frames-1, 2) + 1
	tokens := floorDiv(conv-2, 2) + 1
	if tokens <= 0 {
		return Replacement{}, fmt.Errorf("%w: the audio (%v, %d samples at %d Hz) is too short to be represented inside the model", ErrBadItem, it.Duration, n, q.rate)
	}
	return Replacement{Target: "<|AUDIO|>", Pieces: []Piece{{Token: "<|AUDIO|>", Count: tokens, Embed: true}}}, nil
}

func (q *qwen2Audio) encoderFLOPs(it media.Item) (float64, error) {
	if it.Duration <= 0 {
		return 0, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	// The encoder always sees the padded 30-s window: two convolutions
	// (kernel 3; the second with stride 2), the layers over its positions,
	// then the projection of the pooled half.
	p, d := float64(q.positions), float64(q.enc.hidden)
	frames := 2 * p
	conv := 2*frames*float64(3*q.mels)*d + 2*p*3*d*d
	return conv + q.enc.flops(q.positions, 0) + 2*(p/2)*d*float64(q.out), nil
}
