package mmproc

import (
	"encoding/json"
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// qwenOmni is Qwen2.5-Omni's thinker (vLLM's qwen2_5_omni_thinker.py):
// images and videos as Qwen2.5-VL counts them, behind <|IMAGE|> and
// <|VIDEO|>; audio as Qwen2-Audio counts it (Whisper features every 160
// samples, halved by the conv and again by the pool) but with the
// model's own 300-s feature window, replaced by <|AUDIO|> alone — the
// <|audio_bos|>/<|audio_eos|> around it stay outside vLLM's range.
type qwenOmni struct {
	vision *qwenVL
	audio  *qwen2Audio
	// window is the audio tower's attention window in positions after
	// its conv (n_window × 2 mel frames, halved).
	window int
	// audioInVideo is mm_processor_kwargs' use_audio_in_video: a video's
	// sound track is interleaved with its frames (videoWithAudio).
	audioInVideo bool
	// secondsPerChunk (thinker_config.seconds_per_chunk) and
	// tokensPerSecond (vision_config.tokens_per_second) cut that
	// interleaving into chunks.
	secondsPerChunk float64
	tokensPerSecond float64
}

// omniConfig is config.json's thinker_config (or the thinker's own
// config.json) beyond what hfConfig reads.
type omniConfig struct {
	ThinkerConfig *json.RawMessage `json:"thinker_config"`
}

type omniAudioConfig struct {
	NWindow   int `json:"n_window"`
	OutputDim int `json:"output_dim"`
}

func newQwenOmni(raw []byte, cfg *hfConfig, pre *preprocessorConfig) (*qwenOmni, error) {
	// The full model's config nests the thinker's; a thinker-only
	// config.json is the thinker's itself.
	var outer omniConfig
	if err := json.Unmarshal(raw, &outer); err != nil {
		return nil, fmt.Errorf("%w: config.json: %v", ErrBadConfig, err)
	}
	th := cfg
	audioRaw := raw
	if outer.ThinkerConfig != nil {
		th = new(hfConfig)
		if err := json.Unmarshal(*outer.ThinkerConfig, th); err != nil {
			return nil, fmt.Errorf("%w: thinker_config: %v", ErrBadConfig, err)
		}
		audioRaw = *outer.ThinkerConfig
	}
	var extra struct {
		AudioConfig     *omniAudioConfig `json:"audio_config"`
		SecondsPerChunk float64          `json:"seconds_per_chunk"`
		VisionConfig    *struct {
			TokensPerSecond float64 `json:"tokens_per_second"`
		} `json:"vision_config"`
	}
	_ = json.Unmarshal(audioRaw, &extra) // the same bytes parsed above
	vision, err := newQwenVL(FamilyQwen25VL, th, pre, nil)
	if err != nil {
		return nil, err
	}
	// Qwen2.5-Omni's feature extractor: chunk_length 300, n_samples
	// 4,800,000 at 16 kHz.
	apre := *pre
	if apre.NSamples == 0 && apre.ChunkLength == 0 {
		apre.NSamples = 4_800_000
	}
	audio, err := newQwen2Audio(th, &apre)
	if err != nil {
		return nil, err
	}
	// vLLM's defaults: 2-s chunks (the model's config), 25 temporal
	// positions a second (getattr's default in vLLM).
	o := &qwenOmni{vision: vision, audio: audio, window: 100, secondsPerChunk: 2, tokensPerSecond: 25}
	if extra.SecondsPerChunk > 0 {
		o.secondsPerChunk = extra.SecondsPerChunk
	}
	if vc := extra.VisionConfig; vc != nil && vc.TokensPerSecond > 0 {
		o.tokensPerSecond = vc.TokensPerSecond
	}
	audio.out = th.textHidden(3584)
	if ac := extra.AudioConfig; ac != nil {
		if ac.NWindow > 0 {
			o.window = ac.NWindow
		}
		if ac.OutputDim > 0 {
			audio.out = ac.OutputDim
		}
	}
	return o, nil
}

func (o *qwenOmni) modalities() []media.Kind {
	return []media.Kind{media.KindImage, media.KindVideo, media.KindAudio}
}

func (o *qwenOmni) placeholder(k media.Kind) string {
	switch k {
	case media.KindAudio:
		return "<|AUDIO|>"
	case media.KindVideo:
		return "<|VIDEO|>"
	}
	return "<|IMAGE|>"
}

func (o *qwenOmni) replacement(it media.Item) (Replacement, error) {
	var r Replacement
	var err error
	if it.Kind == media.KindVideo && o.audioInVideo {
		return o.videoWithAudio(it)
	}
	if it.Kind == media.KindAudio {
		r, err = o.audio.replacement(it)
		// vLLM's Omni replacement is the audio tokens alone.
		r.Before, r.After = nil, nil
	} else {
		r, err = o.vision.replacement(it)
	}
	if err != nil {
		return Replacement{}, err
	}
	t := o.placeholder(it.Kind)
	r.Target = t
	for i := range r.Pieces {
		r.Pieces[i].Token = t
	}
	return r, nil
}

func (o *qwenOmni) encoderFLOPs(it media.Item) (float64, error) {
	if it.Kind != media.KindAudio {
		return o.vision.encoderFLOPs(it)
	}
	if it.Duration <= 0 {
		return 0, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	// Unlike Qwen2-Audio's, this tower runs on the clip's own frames (no
	// padding to the window), attending within windows of n_window·2 mel
	// frames: the two convolutions, the layers, then the pooled tokens'
	// projection into the LLM width.
	a := o.audio
	n := min(resampled(it, a.rate), a.nSamples)
	frames := (n + a.hop - 1) / a.hop
	p := floorDiv(frames-1, 2) + 1
	tokens := max(floorDiv(p-2, 2)+1, 0)
	P, d := float64(p), float64(a.enc.hidden)
	conv := 2*float64(frames)*float64(3*a.mels)*d + 2*P*3*d*d
	return conv + windowedFLOPs(a.enc, p, o.window) + 2*float64(tokens)*d*float64(a.out), nil
}

// encoderWork is encoderFLOPs as operators: the vision tower's as
// Qwen2.5-VL's; the audio tower over the clip's positions attending within
// windows, after its two convolutions and before the pooled projection.
func (o *qwenOmni) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Kind != media.KindAudio {
		return o.vision.encoderWork(it)
	}
	if it.Duration <= 0 {
		return nil, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	a := o.audio
	n := min(resampled(it, a.rate), a.nSamples)
	frames := (n + a.hop - 1) / a.hop
	p := floorDiv(frames-1, 2) + 1
	tokens := max(floorDiv(p-2, 2)+1, 0)
	d := a.enc.hidden
	w := a.enc.work(p, p, [3]int{frames, d, 3 * a.mels}, [3]int{p, d, 3 * d}, [3]int{tokens, a.out, d})
	// Every layer attends within its window (none over the whole clip).
	w.Window, w.FullLayers = o.window, 0
	return w, nil
}

// windowedFLOPs is a tower whose every layer attends within windows of w
// positions.
func windowedFLOPs(v vit, p, w int) float64 {
	P, d := float64(p), float64(v.hidden)
	ctx := float64(min(p, w))
	return 2*P*(float64(v.patchIn)*d+float64(v.layers)*(4*d*d+v.mlpParams())) + float64(v.layers)*4*P*ctx*d
}

func (o *qwenOmni) withKwargs(kw map[string]any) (rules, error) {
	c := *o
	switch v := kw["use_audio_in_video"].(type) {
	case nil:
	case bool:
		c.audioInVideo = v
	default:
		return nil, fmt.Errorf("%w: mm_processor_kwargs use_audio_in_video=%v is not a boolean", ErrBadConfig, v)
	}
	v, err := o.vision.withKwargs(kw)
	if err != nil {
		return nil, err
	}
	c.vision = v.(*qwenVL)
	return &c, nil
}
