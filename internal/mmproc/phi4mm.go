package mmproc

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// phi4MM is Phi-4-multimodal (vLLM's phi4mm.py). An image is cut into
// crops of 448 px — as many as cover it if that is at most dynamic_hd
// (36), else the grid of at most 36 crops closest to its aspect ratio —
// and each crop's SigLIP features (32×32) are average-pooled 2×2; the
// tokens are a global 16×16 crop with a newline per row, a separator, and
// the crops' pooled features with their padding columns or rows dropped
// and a newline per row. Audio is 80-bin log-mel frames (25 ms windows
// every 10 ms at 16 kHz) compressed 8 to 1 by the Conformer. The n-th
// image's placeholder is <|image_n|>, the n-th audio's <|audio_n|>; each
// becomes a run of <|endoftext10|> (images) or <|endoftext11|> (audio).
type phi4MM struct {
	crop, patch, compression int
	dynamicHD                int
	audioCompression         int
	rate                     int

	vision vit
	audio  conformer
	out    int
}

// The tokens vLLM's replacements are runs of (_IMAGE_PLACEHOLDER_TOKEN_ID
// 200010 and _AUDIO_PLACEHOLDER_TOKEN_ID 200011 in Phi-4's vocabulary).
const (
	phi4ImageToken = "<|endoftext10|>"
	phi4AudioToken = "<|endoftext11|>"
)

// phi4Config is the part of Phi-4-multimodal's config.json the processor
// reads beyond hfConfig.
type phi4Config struct {
	HiddenSize int `json:"hidden_size"`
	EmbdLayer  *struct {
		AudioEmbdLayer *struct {
			CompressionRate int `json:"compression_rate"`
		} `json:"audio_embd_layer"`
	} `json:"embd_layer"`
	AudioProcessor *struct {
		Config *struct {
			AttentionDim int `json:"attention_dim"`
			NumBlocks    int `json:"num_blocks"`
			LinearUnits  int `json:"linear_units"`
			InputSize    int `json:"input_size"`
		} `json:"config"`
	} `json:"audio_processor"`
}

func newPhi4MM(raw []byte, pre *preprocessorConfig) (*phi4MM, error) {
	var cfg phi4Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: config.json: %v", ErrBadConfig, err)
	}
	// SigLIP-so400m at 448 px, 2×2 pooling: phi4mm.py's
	// VISION_ENCODER_TO_PROCESSING_CONFIG, which no config file changes.
	p := &phi4MM{crop: 448, patch: 14, compression: 2, dynamicHD: positive(pre.DynamicHD, 36), audioCompression: 8, rate: 16000}
	if p.dynamicHD > 256 {
		return nil, fmt.Errorf("%w: dynamic_hd %d", ErrBadConfig, p.dynamicHD)
	}
	if e := cfg.EmbdLayer; e != nil && e.AudioEmbdLayer != nil && e.AudioEmbdLayer.CompressionRate > 0 {
		p.audioCompression = e.AudioEmbdLayer.CompressionRate
	}
	p.out = positive(cfg.HiddenSize, 3072)
	// The image tower runs to layer_idx -2: 26 of SigLIP's 27 layers.
	p.vision = vit{layers: 26, hidden: 1152, inter: 4304, patchIn: 3 * p.patch * p.patch, headDim: 1152 / 16}
	p.audio = conformer{dim: 1024, blocks: 24, units: 1536, mels: 80, reduction: 8}
	if a := cfg.AudioProcessor; a != nil && a.Config != nil {
		c := a.Config
		p.audio.dim = positive(c.AttentionDim, p.audio.dim)
		p.audio.blocks = positive(c.NumBlocks, p.audio.blocks)
		p.audio.units = positive(c.LinearUnits, p.audio.units)
		p.audio.mels = positive(c.InputSize, p.audio.mels)
	}
	return p, nil
}

func (p *phi4MM) modalities() []media.Kind { return []media.Kind{media.KindImage, media.KindAudio} }

func (p *phi4MM) placeholder(k media.Kind) string { return p.numberedTarget(k, 1) }

// numberedTarget is get_placeholder_str: the n-th item's own placeholder.
func (p *phi4MM) numberedTarget(k media.Kind, n int) string {
	if k == media.KindAudio {
		return fmt.Sprintf("<|audio_%d|>", n)
	}
	return fmt.Sprintf("<|image_%d|>", n)
}

// grid returns the crop grid (columns, rows) of a w×h image:
// _find_target_aspect_ratio with min_num 1.
func (p *phi4MM) grid(w, h int) (cols, rows int) {
	cols = int(math.Ceil(float64(w) / float64(p.crop)))
	rows = int(math.Ceil(float64(h) / float64(p.crop)))
	if cols*rows <= p.dynamicHD {
		return cols, rows
	}
	// find_closest_aspect_ratio over the grids of at most dynamic_hd crops
	// by crop count: InternVL's rule (internvl.go), the same code.
	v := internVL{tile: p.crop, minTiles: 1, maxTiles: p.dynamicHD, dynamic: true}
	g := v.closestGrid(w, h)
	return g[0], g[1]
}

// imageTokens is vLLM's _compute_num_image_tokens. An image whose scaled
// side would be under 10 px is refused, as the HF image processor vLLM
// runs on it raises ("the aspect ratio is very extreme").
func (p *phi4MM) imageTokens(w, h int) (int, error) {
	cols, rows := p.grid(w, h)
	tw, th := cols*p.crop, rows*p.crop
	// _get_padding_size: the image scaled to fit, the rest padding.
	rw, rh := float64(tw)/float64(w), float64(th)/float64(h)
	var padW, padH int
	nw, nh := tw, th
	if rw < rh {
		nh = int(float64(h) * rw)
		padH = th - nh
	} else {
		nw = int(float64(w) * rh)
		padW = tw - nw
	}
	if nw < 10 || nh < 10 {
		return 0, fmt.Errorf("%w: the aspect ratio is very extreme (%dx%d scales to %dx%d)", ErrBadItem, w, h, nw, nh)
	}
	fw, fh := tw/p.patch, th/p.patch
	switch {
	case padW >= p.patch:
		fw -= padW / p.patch
	case padH >= p.patch:
		fh -= padH / p.patch
	}
	c := p.compression
	pw, ph := (fw+c-1)/c, (fh+c-1)/c // rounded up: a partial pool still yields a token
	side := p.crop / p.patch / c
	return side*side + 1 + pw*ph + ph + side, nil
}

// audioTokens is get_audio_num_frames and _compute_audio_embed_size on
// the clip as vLLM's data parser resamples it (scipy, an integer ratio).
func (p *phi4MM) audioTokens(it media.Item) (int, error) {
	if it.Duration <= 0 {
		return 0, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	n := phi4Resampled(it, p.rate)
	frames := floorDiv(n-400, 160) + 1
	if frames < 1 {
		return 0, fmt.Errorf("%w: waveform too short for given parameters (%d samples at %d Hz)", ErrBadItem, n, p.rate)
	}
	return (frames + p.audioCompression - 1) / p.audioCompression, nil
}

// phi4Resampled is the clip's length after vLLM's resample_audio_scipy to
// rate: resample_poly by the integer ratio of the rates (44.1 kHz is
// halved, 22.05 kHz is left as is, 8 kHz doubled), whose output has
// ⌈n·up/down⌉ samples.
func phi4Resampled(it media.Item, rate int) int {
	orig := it.SampleRate
	if orig <= 0 {
		orig = rate
	}
	n := int((int64(it.Duration)*int64(orig) + 5e8) / 1e9)
	switch {
	case orig > rate:
		down := orig / rate
		return (n + down - 1) / down
	case orig < rate:
		return n * (rate / orig)
	}
	return n
}

func (p *phi4MM) replacement(it media.Item) (Replacement, error) {
	var n int
	var err error
	token := phi4ImageToken
	switch {
	case it.Kind == media.KindAudio:
		token = phi4AudioToken
		n, err = p.audioTokens(it)
	case it.Kind == media.KindEmbeds:
		if n = it.EmbedTokens; n <= 0 {
			err = fmt.Errorf("%w: image embeddings without a token count", ErrBadItem)
		}
	case it.Width <= 0 || it.Height <= 0:
		err = fmt.Errorf("%w: image without a size", ErrBadItem)
	default:
		n, err = p.imageTokens(it.Width, it.Height)
	}
	if err != nil {
		return Replacement{}, err
	}
	return Replacement{Target: p.placeholder(it.Kind), Pieces: []Piece{{Token: token, Count: n, Embed: true}}}, nil
}

func (p *phi4MM) encoderFLOPs(it media.Item) (float64, error) {
	if it.Kind == media.KindAudio {
		n, err := p.audioTokens(it)
		if err != nil {
			return 0, err
		}
		frames := floorDiv(phi4Resampled(it, p.rate)-400, 160) + 1
		// The Conformer on the frames reduced 8×, then the two-layer
		// projection into the LLM width per token.
		d, o := float64(p.audio.dim), float64(p.out)
		return p.audio.flops(frames) + 2*float64(n)*(d*o+o*o), nil
	}
	if it.Width <= 0 || it.Height <= 0 {
		return 0, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	n, err := p.imageTokens(it.Width, it.Height)
	if err != nil {
		return 0, err
	}
	cols, rows := p.grid(it.Width, it.Height)
	crops := float64(cols*rows + 1) // and the global crop
	side := p.crop / p.patch
	tokens := float64(n)
	in, o := float64(4*p.vision.hidden), float64(p.out)
	// SigLIP on every crop's 32×32 patches, then img_projection (the
	// pooled 4·1152 width to the LLM's, then LLM to LLM) per token.
	return crops*p.vision.flops(side*side, 0) + 2*tokens*(in*o+o*o), nil
}

// encoderWork is encoderFLOPs as operators: SigLIP per crop (each its own
// sequence) and img_projection per token; for audio the Conformer, its
// blocks written as a tower whose gated MLP of width 2·units + d holds
// both feed-forward modules and the convolution module's pointwise
// layers (3·d·(2u + d) = 6du + 3d²), then the projection per token.
func (p *phi4MM) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Kind == media.KindAudio {
		n, err := p.audioTokens(it)
		if err != nil {
			return nil, err
		}
		frames := floorDiv(phi4Resampled(it, p.rate)-400, 160) + 1
		c := p.audio
		r := max((frames+c.reduction-1)/c.reduction, 1)
		w := &engine.EncoderWork{Rows: r, SeqLen: r, Layers: c.blocks, Hidden: c.dim, MLP: 2*c.units + c.dim,
			HeadDim: c.dim / 16, GatedMLP: true, GEMMs: [][3]int{{n, p.out, c.dim}, {n, p.out, p.out}}}
		return w, nil
	}
	n, err := p.imageTokens(it.Width, it.Height)
	if err != nil {
		return nil, err
	}
	cols, rows := p.grid(it.Width, it.Height)
	crops := cols*rows + 1
	side := p.crop / p.patch
	seq := side * side
	return p.vision.work(crops*seq, seq, p.vision.patchEmbed(crops*seq),
		[3]int{n, p.out, 4 * p.vision.hidden}, [3]int{n, p.out, p.out}), nil
}

// conformer is Phi-4-multimodal's audio encoder shape: blocks of two
// feed-forward modules (GLU), self-attention and a convolution module,
// on the mel frames reduced by the time reduction.
type conformer struct {
	dim, blocks, units, mels, reduction int
}

// blockParams is one block's weights: attention 4d², the convolution
// module's pointwise layers 3d² (d→2d GLU, d→d), two GLU feed-forwards
// 3·d·units each.
func (c conformer) blockParams() float64 {
	d, m := float64(c.dim), float64(c.units)
	return 4*d*d + 3*d*d + 2*3*d*m
}

func (c conformer) params() float64 { return float64(c.blocks) * c.blockParams() }

func (c conformer) flops(frames int) float64 {
	p := float64(max((frames+c.reduction-1)/c.reduction, 1))
	d := float64(c.dim)
	return 2*p*c.params() + float64(c.blocks)*4*p*p*d
}
