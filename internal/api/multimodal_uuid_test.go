package api

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// chatParts is a one-message chat request with the given content parts.
func chatParts(t *testing.T, parts ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": parts}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func usagePrompt(t *testing.T, body string) int {
	t.Helper()
	return int(jsonOf(t, body)["usage"].(map[string]any)["prompt_tokens"].(float64))
}

// A part sent once with a uuid can be sent again as the uuid alone, in each
// shape vLLM's chat parser reads as "no data": the request has the same
// prompt, the same block extra keys (the uuid) and hits every block.
func TestMultimodal_UUIDOnlyPartReusesTheCachedItem(t *testing.T) {
	cfg := testConfig(t, map[string]any{"block_size": 16})
	rec := &kvStore{}
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{})
	text := map[string]any{"type": "text", "text": strings.Repeat("describe the picture in detail ", 8)}
	img := dataURL("image/png", pngBytes(t, 640, 480, 9))
	first := env.post("/v1/chat/completions", chatParts(t, text,
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}, "uuid": "sku-1234-a"}))
	if first.Status != 200 {
		t.Fatalf("%d %s", first.Status, first.Body)
	}
	want := usagePrompt(t, first.Body)
	stored := rec.take()
	var ids []string
	for _, e := range stored {
		for _, keys := range e.MMKeys {
			for _, k := range keys {
				ids = append(ids, k.Identifier)
			}
		}
	}
	if len(ids) == 0 || ids[0] != "sku-1234-a" {
		t.Fatalf("block extra keys %v, want the uuid", ids)
	}
	for name, part := range map[string]map[string]any{
		"image_url null":     {"type": "image_url", "image_url": nil, "uuid": "sku-1234-a"},
		"url null":           {"type": "image_url", "image_url": map[string]any{"url": nil}, "uuid": "sku-1234-a"},
		"empty object":       {"type": "image_url", "image_url": map[string]any{}, "uuid": "sku-1234-a"},
		"empty url":          {"type": "image_url", "image_url": map[string]any{"url": ""}, "uuid": "sku-1234-a"},
		"empty string":       {"type": "image_url", "image_url": "", "uuid": "sku-1234-a"},
		"responses' type":    {"type": "input_image", "image_url": nil, "uuid": "sku-1234-a"},
		"image before text ": {"type": "image_url", "image_url": nil, "uuid": "sku-1234-a"},
	} {
		parts := []any{text, part}
		if strings.HasPrefix(name, "image before") {
			parts = []any{part, text}
		}
		r := env.post("/v1/chat/completions", chatParts(t, parts...))
		if r.Status != 200 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
			continue
		}
		if got := usagePrompt(t, r.Body); got != want {
			t.Errorf("%s: prompt_tokens %d, want the first request's %d", name, got, want)
		}
		if ev := rec.take(); len(ev) != 0 && !strings.HasPrefix(name, "image before") {
			t.Errorf("%s: %d blocks stored again; the same uuid is the same item", name, len(ev))
		}
	}
	// /tokenize sees the same expansion.
	tk := env.post("/tokenize", `{"messages":[{"role":"user","content":[`+
		`{"type":"image_url","image_url":null,"uuid":"sku-1234-a"}]}]}`)
	if tk.Status != 200 {
		t.Fatalf("tokenize: %d %s", tk.Status, tk.Body)
	}
	if n := countID(t, tk.Body); n != qwen25VLTokens(640, 480) {
		t.Errorf("/tokenize of the uuid-only part has %d image tokens, want %d", n, qwen25VLTokens(640, 480))
	}
}

// countID counts the image stand-in id in a /tokenize answer.
func countID(t *testing.T, body string) int {
	t.Helper()
	var got struct{ Tokens []uint32 }
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range got.Tokens {
		if id == uint32(131071) {
			n++
		}
	}
	return n
}

// A uuid the processor cache does not hold is vLLM's cache-miss error,
// naming the item's index among its modality's items; so is any uuid-only
// part when the cache is off.
func TestMultimodal_UUIDOnlyMissIsVLLMsError(t *testing.T) {
	env := startServer(t, nil)
	img := dataURL("image/png", pngBytes(t, 64, 64, 1))
	named := map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}, "uuid": "known"}
	unknown := map[string]any{"type": "image_url", "image_url": nil, "uuid": "never-sent"}
	r := env.post("/v1/chat/completions", chatParts(t, named, unknown))
	if r.Status != 400 || !strings.Contains(r.Body, "Cache miss for image at index 1 but data is not provided.") {
		t.Errorf("unknown uuid: %d %s", r.Status, r.Body)
	}
	// The item of another modality under the same uuid is not reused.
	if r := env.post("/v1/chat/completions", chatParts(t, named)); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	video := map[string]any{"type": "video_url", "video_url": nil, "uuid": "known"}
	if r := env.post("/v1/chat/completions", chatParts(t, video)); r.Status != 400 ||
		!strings.Contains(r.Body, "Cache miss for video at index 0 but data is not provided.") {
		t.Errorf("video under an image's uuid: %d %s", r.Status, r.Body)
	}
	// No uuid: a null image_url is a missing field, as vLLM's validation.
	if r := env.post("/v1/chat/completions", chatParts(t, map[string]any{"type": "image_url", "image_url": nil})); r.Status != 400 ||
		!strings.Contains(r.Body, "image_url") {
		t.Errorf("null image_url without uuid: %d %s", r.Status, r.Body)
	}
	off := startServer(t, map[string]any{"mm_processor_cache_gb": 0})
	off.post("/v1/chat/completions", chatParts(t, named))
	if r := off.post("/v1/chat/completions", chatParts(t, map[string]any{"type": "image_url", "image_url": nil, "uuid": "known"})); r.Status != 400 ||
		!strings.Contains(r.Body, "Cache miss for image at index 0 but data is not provided.") {
		t.Errorf("cache off: %d %s", r.Status, r.Body)
	}
}

// input_audio with a uuid and empty data, an audio_url of null, and an
// unfetched http(s) image named by a uuid all reuse their items; uuid-only
// embeddings are refused by name.
func TestMultimodal_UUIDOnlyAudioRemoteAndEmbeds(t *testing.T) {
	env := startServer(t, map[string]any{"mm_processor_model": "Qwen/Qwen2-Audio-7B-Instruct", "enable_mm_embeds": true})
	wav := wavBytes(2.5)
	withData := map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": base64.StdEncoding.EncodeToString(wav), "format": "wav"}, "uuid": "clip-7"}
	r := env.post("/v1/chat/completions", chatParts(t, withData))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	want := usagePrompt(t, r.Body)
	for name, part := range map[string]map[string]any{
		"input_audio empty data": {"type": "input_audio", "input_audio": map[string]any{"data": "", "format": "wav"}, "uuid": "clip-7"},
		"input_audio no data":    {"type": "input_audio", "input_audio": map[string]any{"format": "wav"}, "uuid": "clip-7"},
		"audio_url null":         {"type": "audio_url", "audio_url": nil, "uuid": "clip-7"},
	} {
		r := env.post("/v1/chat/completions", chatParts(t, part))
		if r.Status != 200 || usagePrompt(t, r.Body) != want {
			t.Errorf("%s: %d %s, want prompt_tokens %d", name, r.Status, r.Body, want)
		}
	}
	emb := map[string]any{"type": "audio_embeds", "audio_embeds": nil, "uuid": "clip-7"}
	if r := env.post("/v1/chat/completions", chatParts(t, emb)); r.Status != 400 || !strings.Contains(r.Body, "uuid-only audio_embeds") {
		t.Errorf("uuid-only audio_embeds: %d %s", r.Status, r.Body)
	}

	img := startServer(t, nil)
	remote := map[string]any{"type": "image_url", "image_url": "https://example.com/cat.png", "uuid": "cat"}
	r = img.post("/v1/chat/completions", chatParts(t, remote))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	again := img.post("/v1/chat/completions", chatParts(t, map[string]any{"type": "image_url", "image_url": nil, "uuid": "cat"}))
	if again.Status != 200 || usagePrompt(t, again.Body) != usagePrompt(t, r.Body) {
		t.Errorf("uuid-only after an unfetched URL: %d %s", again.Status, again.Body)
	}
}
