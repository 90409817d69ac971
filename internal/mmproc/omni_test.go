package mmproc

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

func TestQwenOmni(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-Omni-7B", ModelFiles{})
	if p.Family() != FamilyQwen25Omni {
		t.Fatalf("family %s", p.Family())
	}
	for k, want := range map[media.Kind]string{media.KindImage: "<|IMAGE|>", media.KindVideo: "<|VIDEO|>", media.KindAudio: "<|AUDIO|>"} {
		if got := p.Placeholder(k); got != want {
			t.Errorf("%s placeholder %q, want %q", k, got, want)
		}
	}
	// The image count is Qwen2.5-VL's: 1024×1024 → 37×37.
	r, err := p.Replace(img(1024, 1024))
	if err != nil || r.Target != "<|IMAGE|>" || len(r.Pieces) != 1 || r.Pieces[0] != (Piece{"<|IMAGE|>", 1369, true}) {
		t.Fatalf("image: %+v, %v", r, err)
	}
	// Audio: 10 s → 250 tokens, the range the tokens alone (no bos/eos).
	r, err = p.Replace(media.Item{Kind: media.KindAudio, Duration: 10 * time.Second, SampleRate: 16000})
	if err != nil || r.Len() != 250 || r.Before != nil || r.After != nil || r.Pieces[0].Token != "<|AUDIO|>" {
		t.Fatalf("audio: %+v, %v", r, err)
	}
	// Past Qwen2-Audio's 30 s: 5 minutes is 7500 tokens, and more is cut there.
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{60 * time.Second, 1500}, {5 * time.Minute, 7500}, {7 * time.Minute, 7500}} {
		if n, err := p.Tokens(media.Item{Kind: media.KindAudio, Duration: c.d, SampleRate: 16000}); err != nil || n != c.want {
			t.Errorf("%v: %d, %v; want %d", c.d, n, err, c.want)
		}
	}
	// Video: Qwen2.5-VL's frames and bounds, behind <|VIDEO|>.
	v := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 300, Duration: 10 * time.Second}
	if r, err := p.Replace(v); err != nil || r.Target != "<|VIDEO|>" || r.Len() != 16*13*23 {
		t.Errorf("video: %+v, %v", r, err)
	}
	// mm_processor_kwargs: the pixel bounds apply; use_audio_in_video must be a boolean.
	fs, _ := media.FieldsFromJSON([]byte(`{"max_pixels": 1003520}`))
	q, err := p.WithKwargs(fs)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Tokens(img(4096, 4096)); n != 1225 {
		t.Errorf("max_pixels kwarg: %d", n)
	}
	fs, _ = media.FieldsFromJSON([]byte(`{"use_audio_in_video": "yes"}`))
	if _, err := p.WithKwargs(fs); !errors.Is(err, ErrBadConfig) {
		t.Errorf("use_audio_in_video \"yes\": %v", err)
	}
	// The audio tower runs on the clip's own length: cost grows with it
	// (unlike Qwen2-Audio's padded window) and stops at the 300-s cut.
	a := func(d time.Duration) float64 {
		f, err := p.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: d, SampleRate: 16000})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if !(a(time.Second) < a(10*time.Second) && a(10*time.Second) < a(5*time.Minute) && a(5*time.Minute) == a(6*time.Minute)) {
		t.Errorf("audio flops %g %g %g %g", a(time.Second), a(10*time.Second), a(5*time.Minute), a(6*time.Minute))
	}
	// Windowed attention keeps it linear: 60 s costs 2× 30 s within 1%.
	if r := a(60*time.Second) / a(30*time.Second); math.Abs(r-2) > 0.02 {
		t.Errorf("60 s / 30 s flops = %.3f", r)
	}
	// 30 s through the 635M-weight tower: 1500 positions × 2 × ~630M ≈ 1.9 TFLOP.
	if f := a(30 * time.Second); f < 1.8e12 || f > 2.3e12 {
		t.Errorf("30 s: %.3g FLOP", f)
	}
	// The audio tower is Whisper-large-v3's encoder shape (about 635M weights).
	if w := p.rules.(*qwenOmni).audio.enc.params(); math.Abs(w/635e6-1) > 0.08 {
		t.Errorf("audio tower %.0fM weights", w/1e6)
	}
	// Video and image go through the Qwen2.5-VL tower.
	vl := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	x, _ := p.EncoderFLOPs(img(1024, 1024))
	y, _ := vl.EncoderFLOPs(img(1024, 1024))
	if x != y {
		t.Errorf("omni image flops %g, qwen2.5-vl %g", x, y)
	}
	// A thinker-only config.json is read as well.
	th := mustModel(t, "d", ModelFiles{Config: []byte(`{"architectures":["Qwen2_5OmniThinkerForConditionalGeneration"],"audio_config":{"d_model":1280}}`),
		PreprocessorConfig: []byte(`{"chunk_length":300,"n_samples":4800000}`)})
	if n, _ := th.Tokens(media.Item{Kind: media.KindAudio, Duration: time.Minute, SampleRate: 16000}); n != 1500 {
		t.Errorf("thinker config: %d", n)
	}
}

// use_audio_in_video: the video's replacement interleaves its frames with
// its sound track's tokens in 2-s chunks between <|audio_bos|> and
// <|audio_eos|>; a video without sound is refused, and false undoes a
// server-wide true.
func TestQwenOmniAudioInVideo(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-Omni-7B", ModelFiles{})
	on, err := p.WithKwargsJSON([]byte(`{"use_audio_in_video": true}`))
	if err != nil {
		t.Fatal(err)
	}
	// 640×360 over 10 s: 32 frames, 16 temporal patches of 13×23 = 299
	// tokens, one a second; 10 s of audio at 48 kHz is 250 tokens. Chunks
	// of 2 s hold two patches and 50 audio tokens: five chunks carry the
	// audio, the last three chunks none.
	v := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 300, Duration: 10 * time.Second,
		AudioDuration: 10 * time.Second, AudioSampleRate: 48000}
	r, err := on.Replace(v)
	if err != nil {
		t.Fatal(err)
	}
	want := []Piece{{"<|audio_bos|>", 1, false}}
	for k := range 8 {
		want = append(want, Piece{"<|VIDEO|>", 2 * 299, true})
		if k < 5 {
			want = append(want, Piece{"<|AUDIO|>", 50, true})
		}
	}
	want = append(want, Piece{"<|audio_eos|>", 1, false})
	if r.Target != "<|VIDEO|>" || !slices.Equal(r.Pieces, want) {
		t.Fatalf("pieces %+v", r.Pieces)
	}
	// Audio longer than the frames' chunks: the rest follows the last one.
	v.AudioDuration = 60 * time.Second
	r, _ = on.Replace(v)
	if last := r.Pieces[len(r.Pieces)-2]; last != (Piece{"<|AUDIO|>", 1500 - 8*50, true}) || r.Len() != 16*299+1500+2 {
		t.Errorf("60 s of audio: %+v, %d tokens", last, r.Len())
	}
	v.AudioDuration = 0
	if _, err := on.Replace(v); !errors.Is(err, ErrBadItem) {
		t.Errorf("silent video: %v", err)
	}
	off, err := on.WithKwargsJSON([]byte(`{"use_audio_in_video": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := off.Tokens(v); err != nil || n != 16*299 {
		t.Errorf("use_audio_in_video false: %d, %v", n, err)
	}
	// Images and audio items are unchanged by it.
	if n, _ := on.Tokens(img(1024, 1024)); n != 1369 {
		t.Errorf("image under use_audio_in_video: %d", n)
	}
}
