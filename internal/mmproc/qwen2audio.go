package mmproc

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/media"
)

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
	q.enc.headDim = q.enc.hidden / positive(ac.AttnHeads, 20)
	q.positions = positive(ac.MaxSourcePos, q.nSamples/q.hop/2)
	q.out = cfg.textHidden(4096)
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

// resampled returns how many samples a clip has once resampled to the
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
	var tokens int
	if it.Kind == media.KindAudioEmbeds {
		// vLLM's replacement takes audio_embeds' first dimension as the
		// feature count.
		if tokens = it.EmbedTokens; tokens <= 0 {
			return Replacement{}, fmt.Errorf("%w: audio embeddings without a token count", ErrBadItem)
		}
	} else {
		if it.Duration <= 0 {
			return Replacement{}, fmt.Errorf("%w: audio without a duration", ErrBadItem)
		}
		n := min(resampled(it, q.rate), q.nSamples)
		frames := (n + q.hop - 1) / q.hop // the attention mask taken every hop samples
		conv := floorDiv(frames-1, 2) + 1
		if tokens = floorDiv(conv-2, 2) + 1; tokens <= 0 {
			return Replacement{}, fmt.Errorf("%w: the audio (%v, %d samples at %d Hz) is too short to be represented inside the model", ErrBadItem, it.Duration, n, q.rate)
		}
	}
	return Replacement{
		Target: "<|AUDIO|>",
		Pieces: []Piece{{Token: "<|AUDIO|>", Count: tokens, Embed: true}},
		// vLLM's replacement is [bos] + tokens + [eos], located around the
		// template's own markers: its range starts one token early.
		Before: []string{"<|audio_bos|>"},
		After:  []string{"<|audio_eos|>"},
	}, nil
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
