package mmproc

import (
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// whisper is Whisper, an encoder-decoder speech model vLLM serves only
// through /v1/audio/transcriptions and /v1/audio/translations (its
// get_placeholder_str is None: no chat placeholder). A request's audio is
// cut into windows of chunk_length seconds; each window is one engine
// request whose encoder prompt is max_source_positions positions (the
// 30-s log-mel spectrogram, padded, halved by the stride-2 conv) and whose
// decoder prompt is the task's special tokens.
type whisper struct {
	t    Transcription
	enc  vit
	mels int
}

// Transcription is what vLLM's speech-to-text serving takes from a Whisper
// model's configs (SpeechToTextConfig and the processor): the window
// length, the encoder positions per window, the feature extractor's rate
// and hop, and the decoder's length limit.
type Transcription struct {
	// WindowSeconds is max_audio_clip_s: the feature extractor's
	// chunk_length (30).
	WindowSeconds int
	// EncoderPositions is the encoder prompt of every window,
	// max_source_positions (1500), whatever the window's length.
	EncoderPositions int
	// SampleRate and HopLength are the feature extractor's (16 kHz, 160).
	SampleRate, HopLength int
	// MaxDecoderTokens is max_target_positions (448): the model's
	// max_model_len.
	MaxDecoderTokens int
}

// DefaultTranscription is Whisper large-v3's: what a server whose model is
// not Whisper uses for the speech-to-text endpoints.
var DefaultTranscription = Transcription{WindowSeconds: 30, EncoderPositions: 1500, SampleRate: 16000, HopLength: 160, MaxDecoderTokens: 448}

// Transcription returns the model's speech-to-text settings when it is a
// Whisper model.
func (p *Processor) Transcription() (Transcription, bool) {
	if w, ok := p.rules.(*whisper); ok {
		return w.t, true
	}
	return Transcription{}, false
}

// Windows returns how many windows vLLM's serving cuts a clip of d
// seconds into (speech_to_text.py _split_audio): a clip no longer than
// max_audio_clip_s is one; a longer one is cut, each cut at the quietest
// of the 0.1-s windows (min_energy_split_window_size 1600 samples) that
// start in the last overlap_chunk_second (1 s) of the chunk, the first
// of equally quiet ones. That depends on the samples; reading headers
// only, the mock cuts where vLLM cuts audio whose windows are equally
// loud (silence, a steady tone): 1 s before each window's end. Speech
// may be cut up to 0.8 s later, which can save a window on a long clip.
func (t Transcription) Windows(d float64) int {
	n := math.Round(d * float64(t.SampleRate))
	chunk := float64(t.WindowSeconds * t.SampleRate)
	step := chunk - float64(t.SampleRate) // the first cut candidate
	if n <= chunk {
		return 1
	}
	return 1 + int(math.Ceil((n-chunk)/step))
}

// AudioTokens is vLLM's get_num_audio_tokens for a clip of d (with its
// sample rate, 0 meaning the model's): the log-mel frames of the whole
// clip, ceil(duration × rate / hop), which the streamed usage adds to the
// decoder prompt's length.
func (t Transcription) AudioTokens(d float64) int {
	if d <= 0 {
		return 0
	}
	// librosa.get_duration of the resampled clip is samples / rate; the
	// arithmetic is vLLM's, in its order.
	rate := float64(t.SampleRate)
	dur := math.Round(d*rate) / rate
	return int(math.Ceil(dur * rate / float64(t.HopLength)))
}

func newWhisper(cfg *hfConfig, pre *preprocessorConfig) (*whisper, error) {
	ac := cfg.whisperAudio()
	w := &whisper{t: Transcription{
		WindowSeconds:    positive(pre.ChunkLength, 30),
		EncoderPositions: positive(ac.MaxSourcePos, 1500),
		SampleRate:       positive(pre.SamplingRate, 16000),
		HopLength:        positive(pre.HopLength, 160),
		MaxDecoderTokens: positive(cfg.MaxTargetPositions, 448),
	}}
	if w.t.WindowSeconds < 2 || w.t.WindowSeconds > 3600 {
		return nil, fmt.Errorf("%w: chunk_length %d", ErrBadConfig, w.t.WindowSeconds)
	}
	w.mels = positive(ac.NumMelBins, 128)
	w.enc = vit{layers: positive(ac.EncoderLayers, 32), hidden: positive(ac.DModel, 1280), inter: positive(ac.EncoderFFN, 5120)}
	w.enc.headDim = w.enc.hidden / positive(ac.AttnHeads, w.enc.hidden/64) // 64-wide heads in every Whisper
	return w, nil
}

// whisperAudio reads Whisper's encoder sizes, which sit at the top of its
// config.json rather than under audio_config.
func (c *hfConfig) whisperAudio() audioConfig {
	a := audioConfig{DModel: c.DModel, EncoderLayers: c.EncoderLayers, EncoderFFN: c.EncoderFFNDim, NumMelBins: c.NumMelBins,
		MaxSourcePos: c.MaxSourcePositions, AttnHeads: c.EncoderAttnHeads}
	if c.AudioConfig != nil {
		a = *c.AudioConfig
	}
	return a
}

func (w *whisper) modalities() []media.Kind      { return []media.Kind{media.KindAudio} }
func (w *whisper) placeholder(media.Kind) string { return "" }

func (w *whisper) replacement(media.Item) (Replacement, error) {
	return Replacement{}, fmt.Errorf("%w: Whisper takes audio through /v1/audio/transcriptions and /v1/audio/translations only (vLLM has no chat placeholder for it)", ErrModality)
}

// encoderWork is one window's encoder pass as operators: the two
// convolutions as GEMMs (kernel 3), then the layers.
func (w *whisper) encoderWork(media.Item) (*engine.EncoderWork, error) {
	p, d := w.t.EncoderPositions, w.enc.hidden
	return w.enc.work(p, p, [3]int{2 * p, d, 3 * w.mels}, [3]int{p, d, 3 * d}), nil
}

// encoderFLOPs is one window's encoder pass: the two convolutions over
// the padded 3000 mel frames and the layers over the 1500 positions.
// Duration does not matter: every window is padded to the full length.
func (w *whisper) encoderFLOPs(media.Item) (float64, error) {
	p, d := float64(w.t.EncoderPositions), float64(w.enc.hidden)
	conv := 2*(2*p)*3*float64(w.mels)*d + 2*p*3*d*d
	return conv + w.enc.flops(w.t.EncoderPositions, 0), nil
}
