package mmproc

import (
	"math"
	"testing"
)

// tower returns the encoder shape of a catalogue model.
func tower(t *testing.T, id string) vit {
	t.Helper()
	switch r := mustModel(t, id, ModelFiles{}).rules.(type) {
	case *qwenVL:
		return r.enc
	case *gemma3:
		return r.enc
	case *llava:
		e := r.enc
		e.layers++ // the whole tower, not only up to the feature layer
		return e
	case *pixtral:
		e := r.enc
		e.mergeIn = 0 // the tower alone
		return e
	case *qwen2Audio:
		return r.enc
	case *internVL:
		return r.enc
	case *qwenOmni:
		return r.vision.enc
	default:
		t.Fatalf("%s: no tower", id)
		return vit{}
	}
}

// TestTowerSizes checks the shapes the FLOP model multiplies by against the
// towers' published parameter counts (weights the model was not fitted to):
// the Qwen2-VL and Qwen2.5-VL reports give a 675M ViT (merger included);
// SigLIP-so400m, CLIP ViT-L/14 and the Pixtral-ViT are named for their
// sizes (about 400M, 304M, 400M); Whisper-large's encoder, Qwen2-Audio's
// tower, is about 635M of its 1.55B; InternVL 2.5/3's InternViT-300M is
// named for its size. Biases, norms and position embeddings
// are outside the model, so it may fall a little short: within 8%.
func TestTowerSizes(t *testing.T) {
	for _, c := range []struct {
		id        string
		published float64
	}{
		{"Qwen/Qwen2.5-VL-7B-Instruct", 675e6},
		{"Qwen/Qwen2-VL-7B-Instruct", 675e6},
		{"google/gemma-3-4b-it", 400e6},
		{"llava-hf/llava-1.5-7b-hf", 304e6},
		{"mistral-community/pixtral-12b", 400e6},
		{"Qwen/Qwen2-Audio-7B-Instruct", 635e6},
		{"OpenGVLab/InternVL2_5-8B", 300e6},
		{"Qwen/Qwen2.5-Omni-7B", 675e6}, // its vision tower is Qwen2.5-VL's
	} {
		got := tower(t, c.id).params()
		if err := got/c.published - 1; math.Abs(err) > 0.08 {
			t.Errorf("%s: %.0fM weights, published %.0fM (%+.1f%%)", c.id, got/1e6, c.published/1e6, 100*err)
		} else {
			t.Logf("%s: %.0fM weights, published %.0fM (%+.1f%%)", c.id, got/1e6, c.published/1e6, 100*err)
		}
	}
}
