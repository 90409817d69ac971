package mmproc

import (
	"errors"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

// FuzzForModel: any config.json and preprocessor_config.json either load
// with a typed error or give a processor whose counts never panic and are
// positive for a sized item.
func FuzzForModel(f *testing.F) {
	for _, id := range Known() {
		k := catalogue[id]
		f.Add(k.config, k.preprocessor, 640, 480, int64(time.Second))
	}
	f.Add(`{"model_type":"llama4"}`, `{"max_patches":0,"size":{"height":-5}}`, 1, 1, int64(1))
	f.Fuzz(func(t *testing.T, cfg, pre string, w, h int, dur int64) {
		p, err := ForModel("fuzz", ModelFiles{Config: []byte(cfg), PreprocessorConfig: []byte(pre)})
		if err != nil {
			if !errors.Is(err, ErrUnknownModel) && !errors.Is(err, ErrBadConfig) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		w, h = w%20000, h%20000
		for _, it := range []media.Item{
			{Kind: media.KindImage, Width: w, Height: h},
			{Kind: media.KindVideo, Width: w, Height: h, Frames: w % 100},
			{Kind: media.KindAudio, Duration: time.Duration(dur % int64(time.Hour)), SampleRate: h % 200000},
		} {
			n, err := p.Tokens(it)
			if err == nil && n <= 0 {
				t.Fatalf("%s %+v: %d tokens", p.Family(), it, n)
			}
			if err != nil && !errors.Is(err, ErrBadItem) && !errors.Is(err, ErrModality) {
				t.Fatalf("untyped error %v", err)
			}
			_, _ = p.EncoderFLOPs(it)
		}
	})
}
