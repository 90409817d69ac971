package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// qwenBoundCase is a Qwen2.5-VL image case of mmproc's cases.json with
// min/max pixel bounds: its token count is testdata/ref.py's Python
// evaluation of the processor's smart_resize within those bounds.
type qwenBoundCase struct {
	Model                string
	Kind                 string
	Width, Height        int
	MinPixels, MaxPixels int `json:"-"`
	Tokens               *int
}

func qwenBoundCases(t *testing.T) []qwenBoundCase {
	t.Helper()
	b, err := os.ReadFile("../mmproc/testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	var out []qwenBoundCase
	for _, r := range rows {
		lo, ok := r["min_pixels"].(float64)
		if r["model"] != "Qwen/Qwen2.5-VL-7B-Instruct" || r["kind"] != "image" || !ok || r["tokens"] == nil {
			continue
		}
		n := int(r["tokens"].(float64))
		out = append(out, qwenBoundCase{Width: int(r["width"].(float64)), Height: int(r["height"].(float64)),
			MinPixels: int(lo), MaxPixels: int(r["max_pixels"].(float64)), Tokens: &n})
	}
	if len(out) < 6 {
		t.Fatalf("%d bounded Qwen2.5-VL cases in cases.json", len(out))
	}
	return out
}

func promptTokensOf(t *testing.T, r response) int {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%d %.300s", r.Status, r.Body)
	}
	u := jsonOf(t, r.Body)["usage"].(map[string]any)
	if v, ok := u["prompt_tokens"]; ok {
		return int(v.(float64))
	}
	return int(u["input_tokens"].(float64))
}

// TestMultimodal_RequestKwargsChangeTheImagesTokens: a chat request's
// mm_processor_kwargs (sent by openai-go as an extra body field) give the
// image the count of Qwen's rule within those bounds, on chat, /tokenize
// and the Responses API alike; a text-only request with them is unchanged.
func TestMultimodal_RequestKwargsChangeTheImagesTokens(t *testing.T) {
	env := startServer(t, nil) // the stand-in processor: Qwen2.5-VL's
	c := env.sdkClient()
	const text = "What is in this picture?"
	imgs := map[[2]int][]byte{}
	for _, tc := range qwenBoundCases(t) {
		size := [2]int{tc.Width, tc.Height}
		img, ok := imgs[size]
		if !ok {
			img = pngBytes(t, tc.Width, tc.Height, 3)
			imgs[size] = img
		}
		url := dataURL("image/png", img)
		kw := map[string]any{"min_pixels": tc.MinPixels, "max_pixels": tc.MaxPixels}
		name := fmt.Sprintf("%dx%d in [%d, %d]", tc.Width, tc.Height, tc.MinPixels, tc.MaxPixels)
		base := promptTokensOf(t, env.post("/v1/chat/completions", chatWithImage(text, url, 1)))
		want := base - qwen25VLTokens(tc.Width, tc.Height) + *tc.Tokens
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "mocker-model", MaxTokens: openai.Int(1),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart(text),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
			})},
		}, option.WithJSONSet("mm_processor_kwargs", kw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if int(resp.Usage.PromptTokens) != want {
			t.Errorf("%s: chat prompt_tokens %d, want %d (%d without kwargs)", name, resp.Usage.PromptTokens, want, base)
		}
		kwJSON, _ := json.Marshal(kw)
		tk := env.post("/tokenize", strings.Replace(chatWithImage(text, url, 1), `"max_tokens":1,`, `"mm_processor_kwargs":`+string(kwJSON)+`,`, 1))
		if got := int(jsonOf(t, tk.Body)["count"].(float64)); got != want {
			t.Errorf("%s: /tokenize count %d, want %d", name, got, want)
		}
		rb, _ := json.Marshal(map[string]any{"max_output_tokens": 1, "mm_processor_kwargs": kw, "input": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": text},
				map[string]any{"type": "input_image", "image_url": url}}}}})
		if got := promptTokensOf(t, env.post("/v1/responses", string(rb))); got != want {
			t.Errorf("%s: responses input_tokens %d, want %d", name, got, want)
		}
	}
	if len(imgs) < 5 {
		t.Fatalf("only %d image sizes tried", len(imgs))
	}
	plain := `{"max_tokens":1,"messages":[{"role":"user","content":"` + text + `"}]}`
	withKw := `{"max_tokens":1,"mm_processor_kwargs":{"max_pixels":1.5},"messages":[{"role":"user","content":"` + text + `"}]}`
	if a, b := promptTokensOf(t, env.post("/v1/chat/completions", plain)), promptTokensOf(t, env.post("/v1/chat/completions", withKw)); a != b {
		t.Errorf("text only: %d tokens, %d with kwargs (vLLM calls no processor)", a, b)
	}
}

// TestMultimodal_ServerKwargsAndARequestsOverThem: --mm-processor-kwargs
// bound every image; a request's kwargs merge over them key by key.
func TestMultimodal_ServerKwargsAndARequestsOverThem(t *testing.T) {
	want := map[[4]int]int{}
	for _, c := range qwenBoundCases(t) {
		want[[4]int{c.Width, c.Height, c.MinPixels, c.MaxPixels}] = *c.Tokens
	}
	env := startServer(t, map[string]any{"mm_processor_kwargs": map[string]any{"min_pixels": 100000, "max_pixels": 200000}})
	img := pngBytes(t, 1024, 1024, 4)
	body := chatWithImage("Describe it.", dataURL("image/png", img), 1)
	text := promptTokensOf(t, env.post("/v1/chat/completions", body)) - want[[4]int{1024, 1024, 100000, 200000}]
	for _, tc := range []struct {
		kw     string
		bounds [2]int
	}{
		{`{"min_pixels": 200704, "max_pixels": 1003520}`, [2]int{200704, 1003520}},
		{`{"images_kwargs": {"min_pixels": 3136, "max_pixels": 12544}}`, [2]int{3136, 12544}},
		{`{"size": {"shortest_edge": 100000, "longest_edge": 200000}, "max_pixels": 200000}`, [2]int{100000, 200000}},
	} {
		b := strings.Replace(body, `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":`+tc.kw+`,`, 1)
		w, ok := want[[4]int{1024, 1024, tc.bounds[0], tc.bounds[1]}]
		if got := promptTokensOf(t, env.post("/v1/chat/completions", b)); !ok || got != text+w {
			t.Errorf("%s over the server's: %d prompt tokens, want %d", tc.kw, got, text+w)
		}
	}
	// Only max_pixels from the request: min_pixels stays the server's
	// 100000, above the new max, which the processor refuses.
	b := strings.Replace(body, `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":{"max_pixels":50000},`, 1)
	if r := env.post("/v1/chat/completions", b); r.Status != 400 || !strings.Contains(r.Body, "min_pixels 100000 > max_pixels 50000") {
		t.Errorf("max under the server's min: %d %s", r.Status, r.Body)
	}
}

// TestMultimodal_KwargsAreInTheItemsHash: vLLM hashes an item with the
// request's mm_processor_kwargs (not the server's), so the same image
// under other kwargs shares no block past the image, even when its token
// count is the same; the same kwargs again hit every block, and the
// processor cache keeps the two apart.
func TestMultimodal_KwargsAreInTheItemsHash(t *testing.T) {
	cfg := testConfig(t, map[string]any{"block_size": 16, "prefix_caching_hash_algo": "sha256_cbor",
		"mm_processor_kwargs": map[string]any{"max_pixels": 401408}})
	rec := &kvStore{}
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{})
	text := strings.Repeat("a long shared question about the picture ", 12)
	img := pngBytes(t, 256, 256, 6)
	body := chatWithImage(text, dataURL("image/png", img), 1)
	// fps is not a key Qwen's image processor reads: the count stays,
	// only the hash changes.
	const kwText = `{"fps": 2, "max_pixels": 401408}`
	withKw := strings.Replace(body, `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":`+kwText+`,`, 1)
	keys := func(evs []kv.Event) (hashes []uint64, ids []string) {
		for _, e := range evs {
			hashes = append(hashes, e.BlockHashes...)
			for _, ks := range e.MMKeys {
				for _, k := range ks {
					ids = append(ids, k.Identifier)
				}
			}
		}
		return hashes, ids
	}
	pA := promptTokensOf(t, env.post("/v1/chat/completions", body))
	hashesA, idsA := keys(rec.take())
	pB := promptTokensOf(t, env.post("/v1/chat/completions", withKw))
	hashesB, idsB := keys(rec.take())
	if pA != pB || len(hashesA) != pA/16 {
		t.Fatalf("prompts %d and %d tokens, %d blocks stored", pA, pB, len(hashesA))
	}
	plain, _, _ := media.Hash(media.KindImage, img, media.HashOptions{ModelID: cfg.Model})
	fs, err := media.FieldsFromJSON([]byte(kwText))
	if err != nil {
		t.Fatal(err)
	}
	hashed, _, _ := media.Hash(media.KindImage, img, media.HashOptions{ModelID: cfg.Model, MMProcessorKwargs: fs})
	if len(idsA) == 0 || len(idsB) == 0 || plain == hashed {
		t.Fatalf("extra keys %v / %v", idsA, idsB)
	}
	for _, id := range idsA {
		if id != plain {
			t.Errorf("without request kwargs: extra key %s, want the hash without kwargs %s (the server's are not hashed)", id, plain)
		}
	}
	for _, id := range idsB {
		if id != hashed {
			t.Errorf("with request kwargs: extra key %s, want %s", id, hashed)
		}
	}
	// B stored every block from the image's first on (A's blocks before
	// it were hits), none of them A's.
	tk := env.post("/tokenize", strings.Replace(body, `"max_tokens":1,`, "", 1))
	var tok struct{ Tokens []uint32 }
	_ = json.Unmarshal([]byte(tk.Body), &tok)
	off := slices.Index(tok.Tokens, uint32(tokenizer.VocabSize-1))
	if off < 0 || len(hashesB) != len(hashesA)-off/16 {
		t.Errorf("image at %d: B stored %d blocks of %d", off, len(hashesB), len(hashesA))
	}
	for _, h := range hashesB {
		if slices.Contains(hashesA, h) {
			t.Errorf("block %x of the request with kwargs is one of the request without", h)
		}
	}
	// The same kwargs again reuse every block (and the processor cache
	// entry). In another key order they are another item: vLLM hashes
	// the kwargs mapping in its insertion order.
	promptTokensOf(t, env.post("/v1/chat/completions", withKw))
	if evs := rec.take(); len(evs) != 0 {
		t.Errorf("the same image and kwargs again stored %d events", len(evs))
	}
	const reordered = `{"max_pixels": 401408, "fps": 2}`
	promptTokensOf(t, env.post("/v1/chat/completions", strings.Replace(withKw, kwText, reordered, 1)))
	fs, _ = media.FieldsFromJSON([]byte(reordered))
	other, _, _ := media.Hash(media.KindImage, img, media.HashOptions{ModelID: cfg.Model, MMProcessorKwargs: fs})
	hashesC, idsC := keys(rec.take())
	if len(hashesC) != len(hashesB) || len(idsC) == 0 || other == hashed {
		t.Errorf("reordered kwargs stored %d blocks, want %d", len(hashesC), len(hashesB))
	}
	for _, id := range idsC {
		if id != other {
			t.Errorf("reordered kwargs: extra key %s, want %s", id, other)
		}
	}
	promptTokensOf(t, env.post("/v1/chat/completions", body))
	if evs := rec.take(); len(evs) != 0 {
		t.Errorf("the image without kwargs again stored %d events", len(evs))
	}
	// A part's uuid names the item, but under kwargs vLLM hashes the uuid
	// with them (_hash_mm_items).
	withUUID := strings.Replace(body, `"type":"image_url"`, `"type":"image_url","uuid":"photo-1"`, 1)
	for _, tc := range []struct{ body, want string }{
		{withUUID, "photo-1"},
		{strings.Replace(withUUID, `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":`+kwText+`,`, 1), ""},
	} {
		if tc.want == "" {
			fs, _ := media.FieldsFromJSON([]byte(kwText))
			tc.want, _ = media.HashID("image", "photo-1", media.HashOptions{ModelID: cfg.Model, MMProcessorKwargs: fs})
		}
		promptTokensOf(t, env.post("/v1/chat/completions", tc.body))
		_, ids := keys(rec.take())
		if len(ids) == 0 {
			t.Errorf("uuid %s: no extra keys stored", tc.want)
		}
		for _, id := range ids {
			if id != tc.want {
				t.Errorf("uuid part: extra key %s, want %s", id, tc.want)
			}
		}
	}
	// The uuid alone finds the item under the kwargs it was sent with,
	// and is vLLM's cache miss under others (its cache key is the uuid
	// hashed with the kwargs).
	uuidOnly := func(kw string) string {
		b, _ := json.Marshal(map[string]any{"max_tokens": 1, "messages": []any{map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "text", "text": text},
				map[string]any{"type": "image_url", "image_url": nil, "uuid": "photo-1"}}}}})
		return strings.Replace(string(b), `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":`+kw+`,`, 1)
	}
	if r := env.post("/v1/chat/completions", uuidOnly(kwText)); r.Status != 200 || rec.take() != nil {
		t.Errorf("uuid alone under the same kwargs: %d %.200s", r.Status, r.Body)
	}
	if r := env.post("/v1/chat/completions", uuidOnly(`{"max_pixels": 802816}`)); r.Status != 400 || !strings.Contains(r.Body, "Cache miss for image at index 0 but data is not provided.") {
		t.Errorf("uuid alone under other kwargs: %d %.200s", r.Status, r.Body)
	}
}

// TestMultimodal_BadKwargsAreA400InEachSurfacesShape: kwargs the
// processor refuses, or that are not an object, are a 400 on chat,
// Responses and /tokenize; the server goes on serving.
func TestMultimodal_BadKwargsAreA400InEachSurfacesShape(t *testing.T) {
	env := startServer(t, nil)
	gemma := startServer(t, map[string]any{"model": "google/gemma-3-4b-it"})
	url := dataURL("image/png", pngBytes(t, 64, 64, 2))
	for _, tc := range []struct {
		env          *testEnv
		kw, msg, typ string
	}{
		{env, `{"max_pixels": 1.5}`, "mm_processor_kwargs max_pixels=1.5 is not a positive integer", "BadRequestError"},
		{env, `{"images_kwargs": {"min_pixels": "many"}}`, "mm_processor_kwargs min_pixels=many is not a number", "BadRequestError"},
		{env, `{"min_pixels": 900000, "max_pixels": 3136}`, "min_pixels 900000 > max_pixels 3136", "BadRequestError"},
		// A field of the wrong type is the request's validation error.
		{env, `"max_pixels=3136"`, "Invalid type for field 'mm_processor_kwargs': expected object", "Bad Request"},
		{gemma, `{"do_pan_and_scan": "yes"}`, "mm_processor_kwargs do_pan_and_scan=yes is not a boolean", "BadRequestError"},
	} {
		chat := strings.Replace(chatWithImage("Describe it.", url, 1), `"max_tokens":1,`, `"max_tokens":1,"mm_processor_kwargs":`+tc.kw+`,`, 1)
		r := tc.env.post("/v1/chat/completions", chat)
		msg, typ, _, code := errorOf(t, r)
		if r.Status != 400 || typ != tc.typ || code != 400 || !strings.Contains(msg, tc.msg) {
			t.Errorf("chat %s: %d %s", tc.kw, r.Status, r.Body)
		}
		r = tc.env.post("/tokenize", strings.Replace(chat, `"max_tokens":1,`, "", 1))
		if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, tc.msg) {
			t.Errorf("tokenize %s: %d %s", tc.kw, r.Status, r.Body)
		}
		rb := `{"max_output_tokens":1,"mm_processor_kwargs":` + tc.kw + `,"input":[{"role":"user","content":[{"type":"input_image","image_url":"` + url + `"}]}]}`
		r = tc.env.post("/v1/responses", rb)
		if msg, typ, _, _ := errorOf(t, r); r.Status != 400 || typ != tc.typ || !strings.Contains(msg, tc.msg) {
			t.Errorf("responses %s: %d %.300s", tc.kw, r.Status, r.Body)
		}
	}
	// Not an object is a type error with or without media, as vLLM's
	// request validation answers it.
	for _, path := range []string{"/v1/chat/completions", "/tokenize"} {
		r := env.post(path, `{"mm_processor_kwargs":[1],"messages":[{"role":"user","content":"hi"}]}`)
		if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, "Invalid type for field 'mm_processor_kwargs': expected object") {
			t.Errorf("%s text only: %d %s", path, r.Status, r.Body)
		}
	}
	if r := env.post("/v1/chat/completions", chatWithImage("still serving", url, 1)); r.Status != 200 {
		t.Errorf("after bad kwargs: %d %s", r.Status, r.Body)
	}
}
