package mmproc

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

func TestPhi4MM(t *testing.T) {
	p := mustModel(t, "microsoft/Phi-4-multimodal-instruct", ModelFiles{})
	if p.Family() != FamilyPhi4MM || p.Supports(media.KindVideo) {
		t.Fatalf("family %s, modalities %v", p.Family(), p.Modalities())
	}
	// Each item has its own placeholder, numbered per modality.
	for _, c := range []struct {
		k    media.Kind
		n    int
		want string
	}{{media.KindImage, 1, "<|image_1|>"}, {media.KindImage, 3, "<|image_3|>"}, {media.KindEmbeds, 2, "<|image_2|>"}, {media.KindAudio, 2, "<|audio_2|>"}, {media.KindVideo, 1, ""}} {
		if got := p.ItemTarget(c.k, c.n); got != c.want {
			t.Errorf("ItemTarget(%s, %d) = %q, want %q", c.k, c.n, got, c.want)
		}
	}
	// Other families: the one placeholder for every item.
	if got := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{}).ItemTarget(media.KindImage, 4); got != "<|image_pad|>" {
		t.Errorf("qwen ItemTarget %q", got)
	}
	// The example in vLLM's Phi4MMImageEncoder.forward: 1344×896 is 3×2
	// crops exactly, 1841 tokens, all one run of <|endoftext10|>.
	r, err := p.Replace(img(1344, 896))
	if err != nil || len(r.Pieces) != 1 || r.Pieces[0] != (Piece{"<|endoftext10|>", 1841, true}) || r.Target != "<|image_1|>" {
		t.Fatalf("1344x896: %+v, %v", r, err)
	}
	// Audio: 1 s at 16 kHz is 98 frames, 13 tokens of <|endoftext11|>.
	r, err = p.Replace(media.Item{Kind: media.KindAudio, Duration: time.Second, SampleRate: 16000})
	if err != nil || r.Pieces[0] != (Piece{"<|endoftext11|>", 13, true}) || r.Target != "<|audio_1|>" {
		t.Fatalf("1 s audio: %+v, %v", r, err)
	}
	// Under 25 ms has no frame: refused, as vLLM refuses it.
	if _, err := p.Tokens(media.Item{Kind: media.KindAudio, Duration: 20 * time.Millisecond, SampleRate: 16000}); !errors.Is(err, ErrBadItem) {
		t.Errorf("20 ms: %v", err)
	}
	// vLLM resamples by the integer ratio of the rates: 44.1 kHz is
	// halved (22,050 samples a second), so 1 s is 22050 samples' worth.
	if n, _ := p.Tokens(media.Item{Kind: media.KindAudio, Duration: time.Second, SampleRate: 44100}); n != ((22050-400)/160+1+7)/8 {
		t.Errorf("44.1 kHz: %d", n)
	}
	// Encoder FLOPs: SigLIP per crop plus the global crop; audio grows with length.
	one, _ := p.EncoderFLOPs(img(448, 448))
	six, _ := p.EncoderFLOPs(img(1344, 896))
	if one <= 0 || six < 3.4*one || six > 3.6*one {
		t.Errorf("image flops: 2 crops %g, 7 crops %g", one, six)
	}
	a1, _ := p.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: time.Second, SampleRate: 16000})
	a10, _ := p.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: 10 * time.Second, SampleRate: 16000})
	if a1 <= 0 || a10 < 9*a1 || a10 > 11*a1 {
		t.Errorf("audio flops: 1 s %g, 10 s %g", a1, a10)
	}
	// Tower sizes against the published ones: SigLIP-so400m (about 400M
	// for all 27 layers) and the audio encoder (460M with its projections,
	// Phi-4-Mini report).
	pr := p.rules.(*phi4MM)
	siglip := pr.vision
	siglip.layers = 27
	if w := siglip.params(); math.Abs(w/400e6-1) > 0.08 {
		t.Errorf("SigLIP %.0fM", w/1e6)
	}
	d, o := float64(pr.audio.dim), float64(pr.out)
	if w := pr.audio.params() + 2*(d*o+o*o); math.Abs(w/460e6-1) > 0.08 {
		t.Errorf("audio encoder %.0fM", w/1e6)
	} else {
		t.Logf("audio encoder and its two projections: %.0fM weights, published 460M", w/1e6)
	}
}
