package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/chattemplate"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// pngBytes encodes a w×h PNG filled with one gray level.
func pngBytes(t testing.TB, w, h int, level uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = level
	}
	img.Pix[0] = level ^ 0xff // not all one color
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func dataURL(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// qwen25VLTokens is Qwen2.5-VL's image token count, transcribed here from
// the processor's published rule (smart_resize to multiples of 28 within
// [56·56, 28·28·16384] pixels, then one token per 28×28 area) as an
// independent check of the server's count.
func qwen25VLTokens(w, h int) int {
	const factor, minPixels, maxPixels = 28, 56 * 56, 28 * 28 * 16384
	round := func(x float64) int { return int(math.RoundToEven(x/factor)) * factor }
	hb, wb := max(factor, round(float64(h))), max(factor, round(float64(w)))
	if hb*wb > maxPixels {
		beta := math.Sqrt(float64(h*w) / maxPixels)
		hb = max(factor, int(math.Floor(float64(h)/beta/factor))*factor)
		wb = max(factor, int(math.Floor(float64(w)/beta/factor))*factor)
	} else if hb*wb < minPixels {
		beta := math.Sqrt(minPixels / float64(h*w))
		hb = int(math.Ceil(float64(h)*beta/factor)) * factor
		wb = int(math.Ceil(float64(w)*beta/factor)) * factor
	}
	return hb / factor * (wb / factor)
}

func chatWithImage(text, url string, maxTokens int) string {
	b, _ := json.Marshal(map[string]any{"max_tokens": maxTokens, "messages": []any{map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "text", "text": text},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}}}}})
	return string(b)
}

func TestMultimodal_ChatImageBecomesTheProcessorsTokens(t *testing.T) {
	env := startServer(t, nil) // the stand-in processor: Qwen2.5-VL's
	for _, size := range [][2]int{{1024, 1024}, {640, 480}, {1, 1}, {3000, 200}} {
		img := pngBytes(t, size[0], size[1], 7)
		body := chatWithImage("What is in this picture?", dataURL("image/png", img), 3)
		r := env.post("/v1/chat/completions", body)
		if r.Status != 200 {
			t.Fatalf("%v: %d %s", size, r.Status, r.Body)
		}
		prompt := int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64))
		tk := env.post("/tokenize", strings.Replace(body, `"max_tokens":3,`, "", 1))
		if tk.Status != 200 {
			t.Fatalf("tokenize: %d %s", tk.Status, tk.Body)
		}
		var got struct {
			Count  int      `json:"count"`
			Tokens []uint32 `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(tk.Body), &got); err != nil {
			t.Fatal(err)
		}
		want := qwen25VLTokens(size[0], size[1])
		standIn := uint32(tokenizer.VocabSize - 1)
		n := 0
		for _, id := range got.Tokens {
			if id == standIn {
				n++
			}
		}
		first := slices.Index(got.Tokens, standIn)
		if n != want || got.Count != prompt || !slices.Equal(got.Tokens[first:first+n], slices.Repeat([]uint32{standIn}, n)) {
			t.Errorf("%v: %d image tokens in one run at %d, want %d; /tokenize count %d, usage %d", size, n, first, want, got.Count, prompt)
		}
		// Without the image the prompt loses exactly the image's tokens and
		// the placeholder line's newline.
		text := env.post("/tokenize", `{"messages":[{"role":"user","content":"What is in this picture?"}]}`)
		if c := int(jsonOf(t, text.Body)["count"].(float64)); c != prompt-want-1 {
			t.Errorf("%v: text-only prompt %d tokens, with the image %d (image %d)", size, c, prompt, want)
		}
	}
}

// kvStore records the Stored events of each request in turn.
type kvStore struct {
	mu     sync.Mutex
	stored []kv.Event
}

func (k *kvStore) PublishKVEvents(b engine.KVEventBatch) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range b.Events {
		if e.Kind == kv.Stored {
			k.stored = append(k.stored, e)
		}
	}
}

func (k *kvStore) take() []kv.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.stored
	k.stored = nil
	return out
}

func TestMultimodal_DifferentImagesShareOnlyTheBlocksBeforeTheImage(t *testing.T) {
	cfg := testConfig(t, map[string]any{"block_size": 16, "prefix_caching_hash_algo": "sha256_cbor"})
	rec := &kvStore{}
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{})
	text := strings.Repeat("a long shared question about the picture ", 12)
	imgA, imgB := pngBytes(t, 256, 256, 1), pngBytes(t, 256, 256, 2)
	send := func(img []byte) (prompt int, events []kv.Event) {
		r := env.post("/v1/chat/completions", chatWithImage(text, dataURL("image/png", img), 1))
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64)), rec.take()
	}
	p, evA := send(imgA)
	var hashesA []uint64
	var mmKeys [][]kv.MMKey
	for _, e := range evA {
		hashesA = append(hashesA, e.BlockHashes...)
		for i := range e.BlockHashes {
			var k []kv.MMKey
			if i < len(e.MMKeys) {
				k = e.MMKeys[i]
			}
			mmKeys = append(mmKeys, k)
		}
	}
	// The image's run: where the stand-in tokens are in the prompt.
	tk := env.post("/tokenize", strings.Replace(chatWithImage(text, dataURL("image/png", imgA), 1), `"max_tokens":1,`, "", 1))
	var tok struct{ Tokens []uint32 }
	_ = json.Unmarshal([]byte(tk.Body), &tok)
	off := slices.Index(tok.Tokens, uint32(tokenizer.VocabSize-1))
	n := qwen25VLTokens(256, 256)
	if off < 0 || len(hashesA) != p/16 {
		t.Fatalf("image at %d; %d blocks stored for a %d-token prompt", off, len(hashesA), p)
	}
	// Every block the run touches carries vLLM's (hash, offset) key.
	id, exact, err := media.Hash(media.KindImage, imgA, media.HashOptions{ModelID: cfg.Model})
	if err != nil || exact != media.Exact {
		t.Fatal(err, exact)
	}
	for b := range hashesA {
		start, end := b*16, b*16+16
		var want []kv.MMKey
		if start < off+n && end > off {
			want = []kv.MMKey{{Identifier: id, Offset: off - start}}
		}
		if !slices.Equal(mmKeys[b], want) {
			t.Errorf("block %d extra keys %v, want %v", b, mmKeys[b], want)
		}
	}
	// Image B: the blocks before the image's first block are cache hits
	// (not stored again); every block from there on is new.
	_, evB := send(imgB)
	var hashesB []uint64
	for _, e := range evB {
		hashesB = append(hashesB, e.BlockHashes...)
	}
	shared := off / 16
	if len(hashesB) != len(hashesA)-shared {
		t.Fatalf("image B stored %d blocks, want %d (shared %d)", len(hashesB), len(hashesA)-shared, shared)
	}
	if evB[0].HasParent != (shared > 0) || (shared > 0 && evB[0].ParentBlockHash != hashesA[shared-1]) {
		t.Errorf("image B's first stored block's parent %x, want A's block %d %x", evB[0].ParentBlockHash, shared-1, hashesA[shared-1])
	}
	for _, h := range hashesB {
		if slices.Contains(hashesA, h) {
			t.Errorf("block %x of image B equals one of image A", h)
		}
	}
	// Image A again: every full block is a hit, nothing is stored.
	if _, ev := send(imgA); len(ev) != 0 {
		t.Errorf("the same image again stored %d events", len(ev))
	}
}

// lyingPNG is a PNG whose IDAT chunk declares more bytes than follow.
func lyingPNG(t *testing.T) []byte {
	b := pngBytes(t, 64, 64, 3)
	i := bytes.Index(b, []byte("IDAT"))
	binary.BigEndian.PutUint32(b[i-4:], 1<<30)
	return b
}

func TestMultimodal_BadMediaIsA400InEachSurfacesShape(t *testing.T) {
	env := startServer(t, map[string]any{"max_request_body_bytes": 200 << 20, "limit_mm_per_prompt": map[string]any{"image": 1}})
	huge := "data:image/png;base64," + strings.Repeat("A", 100<<20)
	two := `[{"type":"image_url","image_url":{"url":"` + dataURL("image/png", pngBytes(t, 8, 8, 1)) + `"}},{"type":"image_url","image_url":{"url":"` + dataURL("image/png", pngBytes(t, 8, 8, 2)) + `"}}]`
	wav := dataURL("audio/wav", []byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	for _, tc := range []struct {
		name, content, msg string
	}{
		{"corrupt base64", `[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!!notbase64!!!"}}]`, "The media data is corrupt"},
		{"lying header", `[{"type":"image_url","image_url":{"url":"` + dataURL("image/png", lyingPNG(t)) + `"}}]`, "The media data is corrupt"},
		{"100 MB data URL", `[{"type":"image_url","image_url":{"url":"` + huge + `"}}]`, "limit 20971520"},
		{"audio for a vision model", `[{"type":"input_audio","input_audio":{"data":"` + wav[len("data:audio/wav;base64,"):] + `","format":"wav"}}]`, "At most 0 audio(s) may be provided in one prompt."},
		{"too many images", two, "At most 1 image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit."},
		{"not an image", `[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8gd29ybGQ="}}]`, "The media format is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.post("/v1/chat/completions", `{"messages":[{"role":"user","content":`+tc.content+`}]}`)
			msg, typ, _, code := errorOf(t, r)
			if r.Status != 400 || typ != "BadRequestError" || code != 400 || !strings.Contains(msg, tc.msg) {
				t.Errorf("chat: %d %s", r.Status, r.Body)
			}
			// The Messages and Responses translations of image parts (a
			// 30 MB data URL stands for the 100 MB one: the same refusal,
			// a third of the bytes to move on a shared test machine).
			if !strings.Contains(tc.content, "image_url") {
				return
			}
			content := tc.content
			if len(content) > 50<<20 {
				content = `[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("A", 30<<20) + `"}}]`
			}
			var parts []map[string]any
			_ = json.Unmarshal([]byte(content), &parts)
			var blocks, inputs []any
			for _, p := range parts {
				url := p["image_url"].(map[string]any)["url"].(string)
				comma := strings.IndexByte(url, ',')
				blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64",
					"media_type": url[5:strings.IndexByte(url, ';')], "data": url[comma+1:]}})
				inputs = append(inputs, map[string]any{"type": "input_image", "image_url": url})
			}
			mb, _ := json.Marshal(map[string]any{"model": "mocker-model", "max_tokens": 2,
				"messages": []any{map[string]any{"role": "user", "content": blocks}}})
			r = env.post("/v1/messages", string(mb))
			m := jsonOf(t, r.Body)
			e, _ := m["error"].(map[string]any)
			if r.Status != 400 || m["type"] != "error" || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), tc.msg) {
				t.Errorf("messages: %d %.300s", r.Status, r.Body)
			}
			rb, _ := json.Marshal(map[string]any{"input": []any{map[string]any{"role": "user", "content": inputs}}})
			r = env.post("/v1/responses", string(rb))
			msg, typ, _, _ = errorOf(t, r)
			if r.Status != 400 || typ != "BadRequestError" || !strings.Contains(msg, tc.msg) {
				t.Errorf("responses: %d %.300s", r.Status, r.Body)
			}
		})
	}
	if r := env.post("/v1/chat/completions", chatWithImage("still serving", dataURL("image/png", pngBytes(t, 32, 32, 1)), 2)); r.Status != 200 {
		t.Errorf("after bad input: %d %s", r.Status, r.Body)
	}
}

func TestMultimodal_MessagesAndResponsesImagesCountAsChatsDo(t *testing.T) {
	env := startServer(t, nil)
	img := pngBytes(t, 500, 300, 9)
	chat := env.post("/v1/chat/completions", chatWithImage("Describe it.", dataURL("image/png", img), 2))
	want := jsonOf(t, chat.Body)["usage"].(map[string]any)["prompt_tokens"].(float64)
	mb, _ := json.Marshal(map[string]any{"model": "mocker-model", "max_tokens": 2, "messages": []any{map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "text", "text": "Describe it."}, map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(img)}}}}}})
	r := env.post("/v1/messages", string(mb))
	if r.Status != 200 {
		t.Fatalf("messages: %d %s", r.Status, r.Body)
	}
	if got := jsonOf(t, r.Body)["usage"].(map[string]any)["input_tokens"].(float64); got != want {
		t.Errorf("messages input_tokens %v, chat prompt_tokens %v", got, want)
	}
	rb, _ := json.Marshal(map[string]any{"max_output_tokens": 2, "input": []any{map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "Describe it."},
			map[string]any{"type": "input_image", "image_url": dataURL("image/png", img)}}}}})
	r = env.post("/v1/responses", string(rb))
	if r.Status != 200 {
		t.Fatalf("responses: %d %s", r.Status, r.Body)
	}
	if got := jsonOf(t, r.Body)["usage"].(map[string]any)["input_tokens"].(float64); got != want {
		t.Errorf("responses input_tokens %v, chat prompt_tokens %v", got, want)
	}
	// An unfetched http(s) image is sized from --mm-unfetched-media.
	r = env.post("/v1/chat/completions", chatWithImage("Describe it.", "https://example.com/cat.png", 2))
	if r.Status != 200 {
		t.Fatalf("http image: %d %s", r.Status, r.Body)
	}
	if got := jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64); int(got) != int(want)-qwen25VLTokens(500, 300)+qwen25VLTokens(1024, 1024) {
		t.Errorf("http image prompt %v", got)
	}
}

// A template that loops over content ("openai" format, like Qwen2-VL's)
// gets each image as {"type": "image"} and renders its own placeholder; a
// template that takes content as a string gets the placeholder line
// before the text. Both expand to the same image tokens.
func TestMultimodal_TemplatesGetItemsInTheirContentFormat(t *testing.T) {
	loop := `{% for m in messages %}<|im_start|>{{ m.role }}
{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p.type == 'image' %}<|image_pad|>{% elif p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>
{% endfor %}<|im_start|>assistant
`
	str := `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}<|im_start|>assistant
`
	img := pngBytes(t, 320, 240, 4)
	body := strings.Replace(chatWithImage("Look.", dataURL("image/png", img), 1), `"max_tokens":1,`, "", 1)
	for _, tc := range []struct {
		name, tmpl, rendered string
	}{
		{"openai format", loop, "<|im_start|>user\nLook.<|im_end|>\n<|im_start|>assistant"},
		{"string format", str, "<|im_start|>user\n\nLook.<|im_end|>\n<|im_start|>assistant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parsed, err := chattemplate.Parse(tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			r := chattemplate.NewRenderer(parsed, "", "")
			if got := r.StringContent(); got != (tc.name == "string format") {
				t.Fatalf("detected string content %v", got)
			}
			env := startServer(t, nil, settings.Deps{ChatTemplate: r})
			tk := env.post("/tokenize", body)
			if tk.Status != 200 {
				t.Fatalf("%d %s", tk.Status, tk.Body)
			}
			var got struct{ Tokens []uint32 }
			_ = json.Unmarshal([]byte(tk.Body), &got)
			standIn := uint32(tokenizer.VocabSize - 1)
			n := qwen25VLTokens(320, 240)
			first := slices.Index(got.Tokens, standIn)
			if first < 0 || !slices.Equal(got.Tokens[first:first+n], slices.Repeat([]uint32{standIn}, n)) {
				t.Fatalf("no run of %d image tokens in %v", n, got.Tokens)
			}
			// Without the run, the ids are the template's text around the
			// placeholder, tokenized as plain text.
			rest := append(slices.Clone(got.Tokens[:first]), got.Tokens[first+n:]...)
			if want := tokenizer.Encode(tc.rendered); !slices.Equal(rest, want) {
				t.Errorf("text tokens %v, want %v (%q)", rest, want, tc.rendered)
			}
		})
	}
}

func TestMultimodal_LocalFilesAndDomainsAsVLLMAllowsThem(t *testing.T) {
	dir := t.TempDir()
	img := pngBytes(t, 64, 64, 3)
	inside := filepath.Join(dir, "cat.png")
	if err := os.WriteFile(inside, img, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "dog.png")
	if err := os.WriteFile(outside, img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.png")); err != nil {
		t.Fatal(err)
	}
	closed := startServer(t, nil)
	r := closed.post("/v1/chat/completions", chatWithImage("hi", "file://"+inside, 1))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || msg != "Cannot load local files without `--allowed-local-media-path`." {
		t.Errorf("no local path: %d %s", r.Status, r.Body)
	}
	env := startServer(t, map[string]any{"allowed_local_media_path": dir, "allowed_media_domains": []any{"images.example.com"}})
	if r := env.post("/v1/chat/completions", chatWithImage("hi", "file://"+inside, 1)); r.Status != 200 {
		t.Errorf("inside: %d %s", r.Status, r.Body)
	}
	for _, u := range []string{"file://" + outside, "file://" + filepath.Join(dir, "link.png"), "file://" + dir + "/../" + filepath.Base(filepath.Dir(outside)) + "/dog.png"} {
		r := env.post("/v1/chat/completions", chatWithImage("hi", u, 1))
		if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, "must be a subpath of `--allowed-local-media-path`") {
			t.Errorf("%s: %d %s", u, r.Status, r.Body)
		}
	}
	r = env.post("/v1/chat/completions", chatWithImage("hi", "https://evil.example.org/x.png", 1))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || msg != "The URL must be from one of the allowed domains: ['images.example.com']. Input URL domain: evil.example.org" {
		t.Errorf("other domain: %d %s", r.Status, r.Body)
	}
	if r := env.post("/v1/chat/completions", chatWithImage("hi", "https://images.example.com/x.png", 1)); r.Status != 200 {
		t.Errorf("allowed domain: %d %s", r.Status, r.Body)
	}
}

// The processor cache's counters: a repeated item is a hit; an unfetched
// URL is counted by modality.
func TestMultimodal_CacheAndUnfetchedMetrics(t *testing.T) {
	cfg := testConfig(t, nil)
	reg := metrics.New(metrics.Options{Model: cfg.ServedName(), BlockSize: cfg.EffectiveBlockSize(), NumGPUBlocks: cfg.NumGPUBlocks,
		MaxModelLen: cfg.MaxModelLen, EnablePrefixCaching: true}, "test")
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{Metrics: reg.Handler(), MM: reg})
	img := dataURL("image/png", pngBytes(t, 64, 64, 3))
	for range 3 {
		if r := env.post("/v1/chat/completions", chatWithImage("hi", img, 1)); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	env.post("/v1/chat/completions", chatWithImage("hi", "https://example.com/a.png", 1))
	m := env.Get("/metrics").Body
	for _, want := range []string{
		`vllm:mm_cache_queries_total{engine="0",model_name="mocker-model"} 3`,
		`vllm:mm_cache_hits_total{engine="0",model_name="mocker-model"} 2`,
		`mocker_mm_unfetched_items_total{modality="image"} 1`,
		`mocker_mm_unfetched_items_total{modality="audio"} 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
