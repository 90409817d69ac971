package api

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// torchEmbeds reads a torch.save fixture written by torch itself
// (internal/media/testdata/gen_torch.py) as the base64 a client sends.
func torchEmbeds(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "media", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func chatWithParts(text string, parts ...map[string]any) string {
	content := []any{map[string]any{"type": "text", "text": text}}
	for _, p := range parts {
		content = append(content, p)
	}
	b, _ := json.Marshal(map[string]any{"max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": content}}})
	return string(b)
}

func embedsPart(v any) map[string]any {
	return map[string]any{"type": "image_embeds", "image_embeds": v}
}

func promptTokens(t *testing.T, r response) int {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	return int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64))
}

// An image_embeds part costs the tensor's rows in placeholder tokens, with
// the same template tokens around them as an image part.
func TestMultimodal_ImageEmbedsCostTheirRows(t *testing.T) {
	env := startServer(t, map[string]any{"enable_mm_embeds": true})
	const text = "Describe these features."
	plain := promptTokens(t, env.post("/v1/chat/completions", chatWithParts(text)))
	img := promptTokens(t, env.post("/v1/chat/completions", chatWithImage(text, dataURL("image/png", pngBytes(t, 640, 480, 3)), 2)))
	around := img - plain - qwen25VLTokens(640, 480) // the template's tokens around one image
	for name, rows := range map[string]int{
		"embeds_4x8_f4.pt": 4, "embeds_4x8_f2.pt": 4, "embeds_4x8_bf16.pt": 4, "embeds_3x16_f8.pt": 3,
		"embeds_view_5x4_f4.pt": 5, "embeds_T_8x4_f4.pt": 8,
	} {
		got := promptTokens(t, env.post("/v1/chat/completions", chatWithParts(text, embedsPart(torchEmbeds(t, name)))))
		if got != plain+around+rows {
			t.Errorf("%s: prompt_tokens %d, want %d text + %d around + %d rows", name, got, plain, around, rows)
		}
	}
	// Two parts: two items, each its rows.
	two := promptTokens(t, env.post("/v1/chat/completions", chatWithParts(text,
		embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt")), embedsPart(torchEmbeds(t, "embeds_T_8x4_f4.pt")))))
	if two != plain+2*around+4+8 {
		t.Errorf("two parts: prompt_tokens %d, want %d", two, plain+2*around+12)
	}
}

func TestMultimodal_ImageEmbedsRefusals(t *testing.T) {
	off := startServer(t, nil)
	r := off.post("/v1/chat/completions", chatWithParts("x", embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt"))))
	if msg, typ, param, _ := errorOf(t, r); r.Status != 400 || typ != "BadRequestError" ||
		msg != "You must set `--enable-mm-embeds` to input `image_embeds`" || param != "messages[0].content[1]" {
		t.Errorf("without --enable-mm-embeds: %d %s", r.Status, r.Body)
	}
	env := startServer(t, map[string]any{"enable_mm_embeds": true})
	png := map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", pngBytes(t, 8, 8, 1))}}
	for _, tc := range []struct {
		name string
		part []map[string]any
		msg  string
	}{
		{"dict form", []map[string]any{embedsPart(map[string]any{"image_embeds": torchEmbeds(t, "embeds_4x8_f4.pt"), "image_grid_thw": "AAAA"})}, "The dict form of image_embeds"},
		{"empty", []map[string]any{embedsPart("")}, "image_embeds must be a base64 torch.save tensor"},
		{"saved dict", []map[string]any{embedsPart(torchEmbeds(t, "embeds_dict.pt"))}, "dict"},
		{"stacked items", []map[string]any{embedsPart(torchEmbeds(t, "embeds_2x5x8_f4.pt"))}, "holds 2 items; send one (tokens, hidden) tensor per image_embeds part"},
		{"integer tensor", []map[string]any{embedsPart(torchEmbeds(t, "embeds_int64.pt"))}, "The media format is not supported"},
		{"one-dimensional", []map[string]any{embedsPart(torchEmbeds(t, "embeds_1d_f4.pt"))}, "The media data is corrupt"},
		{"corrupt base64", []map[string]any{embedsPart("!!not base64!!")}, "The media data is corrupt"},
		{"a PNG", []map[string]any{embedsPart(base64.StdEncoding.EncodeToString(pngBytes(t, 8, 8, 1)))}, "The media format is not supported"},
		{"mixed with an image", []map[string]any{png, embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt"))}, "Mixing raw image and embedding inputs is not allowed"},
	} {
		r := env.post("/v1/chat/completions", chatWithParts("x", tc.part...))
		msg, typ, _, code := errorOf(t, r)
		if r.Status != 400 || typ != "BadRequestError" || code != 400 || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %.300s", tc.name, r.Status, r.Body)
		}
	}
	if got := promptTokens(t, env.post("/v1/chat/completions", chatWithParts("x", embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt"))))); got <= 4 {
		t.Errorf("after bad input: prompt_tokens %d", got)
	}
}
