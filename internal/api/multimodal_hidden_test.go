package api

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// npyZeros is a C-order float32 .npy array of the shape, as
// np.save(np.zeros(shape, np.float32)) writes it, in base64.
func npyZeros(rows, cols int) string {
	header := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = append(b, byte(len(header)), byte(len(header)>>8))
	b = append(b, header...)
	b = append(b, make([]byte, 4*rows*cols)...)
	return base64.StdEncoding.EncodeToString(b)
}

// vLLM refuses embeddings whose rows are not the language model's hidden
// size (EmbeddingItems._validate_hidden_size), with its messages: one
// shape for parts of one shape (stacked), the item's index otherwise. The
// served model's width is known from the catalogue here; a stand-in
// --mm-processor-model says nothing about it, and the dict form is not
// checked (as vLLM's DictEmbeddingItems).
func TestMultimodal_EmbedsHiddenSize(t *testing.T) {
	img := startServer(t, map[string]any{"model": "Qwen/Qwen2.5-VL-7B-Instruct", "enable_mm_embeds": true})
	part := func(b64 string) map[string]any { return embedsPart(b64) }
	ok := img.post("/v1/chat/completions", chatWithParts("what is this?", part(npyZeros(4, 3584))))
	if ok.Status != 200 {
		t.Fatalf("3584-wide embeddings on a 3584-wide model: %d %s", ok.Status, ok.Body)
	}
	for _, tc := range []struct {
		name  string
		parts []map[string]any
		msg   string
	}{
		{"one part", []map[string]any{part(npyZeros(4, 8))},
			"Image embedding hidden dimension mismatch: got 8, but model expects 3584. Embedding shape: (1, 4, 8)"},
		{"two parts of one shape", []map[string]any{part(npyZeros(4, 8)), part(npyZeros(4, 8))},
			"Image embedding hidden dimension mismatch: got 8, but model expects 3584. Embedding shape: (2, 4, 8)"},
		{"parts of two shapes", []map[string]any{part(npyZeros(4, 3584)), part(npyZeros(5, 8))},
			"Image embedding [1] hidden dimension mismatch: got 8, but model expects 3584. Embedding shape: (5, 8)"},
	} {
		r := img.post("/v1/chat/completions", chatWithParts("what is this?", tc.parts...))
		if r.Status != 400 || !strings.Contains(r.Body, tc.msg) {
			t.Errorf("%s: %d %s, want 400 %q", tc.name, r.Status, r.Body, tc.msg)
		}
	}
	// The dict form carries its own grid and is not checked.
	dict := map[string]any{"type": "image_embeds", "image_embeds": map[string]any{
		"image_embeds": torchEmbeds(t, "embeds_4x8_f4.pt"), "image_grid_thw": torchEmbeds(t, "grid_1x4x4.pt")}}
	if r := img.post("/v1/chat/completions", chatWithParts("what is this?", dict)); r.Status != 200 {
		t.Errorf("dict form: %d %s", r.Status, r.Body)
	}

	audio := startServer(t, map[string]any{"model": "Qwen/Qwen2-Audio-7B-Instruct", "enable_mm_embeds": true})
	apart := func(b64 string) map[string]any { return map[string]any{"type": "audio_embeds", "audio_embeds": b64} }
	if r := audio.post("/v1/chat/completions", chatWithParts("listen", apart(npyZeros(3, 4096)))); r.Status != 200 {
		t.Errorf("4096-wide audio embeddings: %d %s", r.Status, r.Body)
	}
	r := audio.post("/v1/chat/completions", chatWithParts("listen", apart(npyZeros(3, 16))))
	if want := "Audio embedding hidden dimension mismatch: got 16, but model expects 4096. Embedding shape: (1, 3, 16)"; r.Status != 400 || !strings.Contains(r.Body, want) {
		t.Errorf("16-wide audio embeddings: %d %s", r.Status, r.Body)
	}

	standIn := startServer(t, map[string]any{"enable_mm_embeds": true})
	if r := standIn.post("/v1/chat/completions", chatWithParts("what is this?", part(npyZeros(4, 8)))); r.Status != 200 {
		t.Errorf("stand-in processor: %d %s", r.Status, r.Body)
	}
}
