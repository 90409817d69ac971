package mmproc

import (
	"math"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

// An item's encoder work (the operator shapes the hardware model prices)
// has the FLOPs encoderFLOPs counts for it, within 0.1% (the patch
// embedding of a CLS position the FLOP count includes), for every family
// and a range of sizes: the two describe the same tower.
func TestEncoderWorkMatchesFLOPs(t *testing.T) {
	img := func(w, h int) media.Item { return media.Item{Kind: media.KindImage, Width: w, Height: h} }
	audio := media.Item{Kind: media.KindAudio, Duration: 7 * time.Second, SampleRate: 16000, Channels: 1}
	for _, tc := range []struct {
		model string
		items []media.Item
	}{
		{"Qwen/Qwen2-VL-7B-Instruct", []media.Item{img(224, 224), img(1920, 1080)}},
		{"Qwen/Qwen2.5-VL-7B-Instruct", []media.Item{img(56, 56), img(1024, 1024), img(3000, 400)}},
		{"Qwen/Qwen3-VL-8B-Instruct", []media.Item{img(512, 512), img(1280, 720)}},
		{"google/gemma-3-27b-it", []media.Item{img(640, 480)}},
		{"llava-hf/llava-1.5-7b-hf", []media.Item{img(336, 336)}},
		{"llava-hf/llava-v1.6-mistral-7b-hf", []media.Item{img(336, 336), img(1000, 500), img(2000, 3000)}},
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", []media.Item{img(336, 336), img(1344, 672)}},
		{"mistral-community/pixtral-12b", []media.Item{img(1024, 768)}},
		{"mistralai/Mistral-Small-3.1-24B-Instruct-2503", []media.Item{img(1540, 1540)}},
		{"Qwen/Qwen2-Audio-7B-Instruct", []media.Item{audio}},
		{"OpenGVLab/InternVL3-8B", []media.Item{img(448, 448), img(1920, 1080)}},
		{"Qwen/Qwen2.5-Omni-7B", []media.Item{img(1024, 1024), audio, {Kind: media.KindAudio, Duration: 3 * time.Minute, SampleRate: 44100}}},
		{"openai/whisper-large-v3", []media.Item{audio}},
		{"microsoft/Phi-4-multimodal-instruct", []media.Item{img(448, 448), img(1344, 896), img(4000, 300), audio}},
	} {
		p, err := ForModel(tc.model, ModelFiles{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range tc.items {
			flops, err := p.EncoderFLOPs(it)
			if err != nil {
				t.Fatalf("%s %dx%d: %v", tc.model, it.Width, it.Height, err)
			}
			w, err := p.EncoderWork(it)
			if err != nil || w == nil {
				t.Fatalf("%s %dx%d: work %v, %v", tc.model, it.Width, it.Height, w, err)
			}
			if w.Rows <= 0 || w.SeqLen <= 0 || w.SeqLen > w.Rows || w.HeadDim <= 0 || w.Hidden%w.HeadDim != 0 {
				t.Errorf("%s %dx%d: work %+v", tc.model, it.Width, it.Height, *w)
			}
			if got := w.FLOPs(); math.Abs(got/flops-1) > 1e-3 {
				t.Errorf("%s %dx%d: work %.4g FLOPs, encoderFLOPs %.4g", tc.model, it.Width, it.Height, got, flops)
			}
		}
	}
	p, _ := ForModel("Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	// A video's temporal patches are sequences of their own (the tower's
	// cu_seqlens): 32 frames are 16 of 640×360's 46×26 patches.
	video := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 32, FPS: 2, Duration: 16 * time.Second}
	if w, err := p.EncoderWork(video); err != nil || w.SeqLen != 46*26 || w.Rows != 16*w.SeqLen {
		t.Errorf("video: work %+v, %v; want 16 sequences of 46×26 patches", w, err)
	}
	if w, err := p.EncoderWork(media.Item{Kind: media.KindEmbeds, EmbedTokens: 10}); w != nil || err != nil {
		t.Errorf("embeddings: work %v, %v; want none (the client ran the encoder)", w, err)
	}
}
