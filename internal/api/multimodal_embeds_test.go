package api

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
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
	return chatWithSystem("", text, parts...)
}

// chatWithSystem puts a system message first (when system is not ""), so
// the text before the user's parts is known whatever the template does
// with a message's parts.
func chatWithSystem(system, text string, parts ...map[string]any) string {
	content := []any{map[string]any{"type": "text", "text": text}}
	for _, p := range parts {
		content = append(content, p)
	}
	var msgs []any
	if system != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": system})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": content})
	b, _ := json.Marshal(map[string]any{"max_tokens": 2, "messages": msgs})
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
		{"dict form, a grid that is no tensor", []map[string]any{embedsPart(map[string]any{"image_embeds": torchEmbeds(t, "embeds_4x8_f4.pt"), "image_grid_thw": "AAAA"})}, "The media format is not supported"},
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

// The same tensor reuses its blocks; another tensor of the same shape
// shares only the blocks before its placeholders, whose extra keys are the
// payload's hash.
func TestMultimodal_ImageEmbedsEnterTheBlockHashes(t *testing.T) {
	cfg := testConfig(t, map[string]any{"block_size": 16, "enable_mm_embeds": true})
	rec := &kvStore{}
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{})
	text := strings.Repeat("a long shared question about the features ", 12)
	a, b := torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "embeds_4x8_f2.pt")
	send := func(payload string) (int, []kv.Event) {
		p := promptTokens(t, env.post("/v1/chat/completions", chatWithSystem(text, "what?", embedsPart(payload))))
		return p, rec.take()
	}
	p, evA := send(a)
	var hashesA []uint64
	var keys [][]kv.MMKey
	for _, e := range evA {
		hashesA = append(hashesA, e.BlockHashes...)
		for i := range e.BlockHashes {
			var k []kv.MMKey
			if i < len(e.MMKeys) {
				k = e.MMKeys[i]
			}
			keys = append(keys, k)
		}
	}
	tk := env.post("/tokenize", strings.Replace(chatWithSystem(text, "what?", embedsPart(a)), `"max_tokens":2,`, "", 1))
	var tok struct{ Tokens []uint32 }
	_ = json.Unmarshal([]byte(tk.Body), &tok)
	off := slices.Index(tok.Tokens, uint32(tokenizer.VocabSize-1))
	if off < 16 || len(hashesA) != p/16 || len(tok.Tokens) != p {
		t.Fatalf("embeddings at %d; %d blocks for %d tokens (/tokenize %d)", off, len(hashesA), p, len(tok.Tokens))
	}
	raw, _ := base64.StdEncoding.DecodeString(a)
	id, _, err := media.Hash(media.KindEmbeds, raw, media.HashOptions{ModelID: cfg.Model})
	if err != nil {
		t.Fatal(err)
	}
	for blk := range hashesA {
		var want []kv.MMKey
		if start := blk * 16; start < off+4 && start+16 > off {
			want = []kv.MMKey{{Identifier: id, Offset: off - start}}
		}
		if !slices.Equal(keys[blk], want) {
			t.Errorf("block %d extra keys %v, want %v", blk, keys[blk], want)
		}
	}
	_, evB := send(b)
	var hashesB []uint64
	for _, e := range evB {
		hashesB = append(hashesB, e.BlockHashes...)
	}
	if shared := off / 16; len(hashesB) != len(hashesA)-shared {
		t.Errorf("tensor B stored %d blocks, want %d (shared %d)", len(hashesB), len(hashesA)-shared, shared)
	}
	for _, h := range hashesB {
		if slices.Contains(hashesA, h) {
			t.Errorf("block %x of tensor B equals one of tensor A", h)
		}
	}
	if _, ev := send(a); len(ev) != 0 {
		t.Errorf("the same tensor again stored %d events", len(ev))
	}
}
