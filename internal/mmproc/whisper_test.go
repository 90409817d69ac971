package mmproc

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

func TestWhisper(t *testing.T) {
	p := mustModel(t, "openai/whisper-large-v3", ModelFiles{})
	tr, ok := p.Transcription()
	if !ok || p.Family() != FamilyWhisper || tr != DefaultTranscription {
		t.Fatalf("%s: %+v, %v", p.Family(), tr, ok)
	}
	if _, ok := mustModel(t, "Qwen/Qwen2-Audio-7B-Instruct", ModelFiles{}).Transcription(); ok {
		t.Error("Qwen2-Audio is not a transcription model")
	}
	// No chat placeholder: vLLM serves Whisper through the speech endpoints only.
	clip := media.Item{Kind: media.KindAudio, Duration: 3 * time.Second, SampleRate: 16000}
	if _, err := p.Tokens(clip); !errors.Is(err, ErrModality) || p.Placeholder(media.KindAudio) != "" {
		t.Errorf("chat audio: %v", err)
	}
	// Every window is padded to 30 s: the encoder's cost per window is
	// fixed, about 2 × 1500 positions × 635M weights ≈ 1.9 TFLOP plus attention.
	a, _ := p.EncoderFLOPs(clip)
	b, _ := p.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: 29 * time.Second})
	if a != b || a < 1.9e12 || a > 2.4e12 {
		t.Errorf("window flops %g and %g", a, b)
	}
	// The encoder is Whisper large's, about 635M weights; small's about 88M.
	if w := p.rules.(*whisper).enc.params(); math.Abs(w/635e6-1) > 0.08 {
		t.Errorf("large-v3 encoder: %.0fM weights", w/1e6)
	}
	small := mustModel(t, "openai/whisper-small", ModelFiles{})
	if w := small.rules.(*whisper).enc.params(); math.Abs(w/88e6-1) > 0.08 {
		t.Errorf("small encoder: %.0fM weights", w/1e6)
	}
	// A model directory's config: another window length is read, a silly one refused.
	d := mustModel(t, "/m", ModelFiles{Config: []byte(`{"model_type":"whisper","max_source_positions":750,"max_target_positions":224}`),
		PreprocessorConfig: []byte(`{"chunk_length":15,"hop_length":160,"sampling_rate":16000}`)})
	if tr, _ := d.Transcription(); tr.WindowSeconds != 15 || tr.EncoderPositions != 750 || tr.MaxDecoderTokens != 224 || tr.Windows(20) != 2 {
		t.Errorf("directory config: %+v", tr)
	}
	if _, err := ForModel("/m", ModelFiles{Config: []byte(`{"model_type":"whisper"}`), PreprocessorConfig: []byte(`{"chunk_length":1}`)}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("chunk_length 1: %v", err)
	}
}
