package main

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestE2E_SGLangMultimodalPadValues is scenario G6 through the binary:
// --engine-type sglang, Qwen3's tokenizer (Qwen2.5-VL's vision tokens), page
// size 16 and a real ZMQ subscriber. SGLang pads an image's <|image_pad|>
// run with the item's pad value before its radix cache sees the prompt, so
// the KV events carry the pad value where the client's prompt has the
// placeholder; a second image with the same text shares exactly the pages
// before the image, and the first image again shares every page.
func TestE2E_SGLangMultimodalPadValues(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	const (
		page        = 16
		imagePad    = 151655 // <|image_pad|> in Qwen2.5-VL's (and Qwen3's) vocabulary
		imageTokens = 256    // a 448×448 image: (448/28)²
	)
	const text = "Describe this picture in one careful sentence, please, with every detail you can see."
	system := strings.Repeat("You are a careful visual assistant who answers with precision. ", 6)

	var port int
	var srv *running
	var model string // vLLM's model_config.model, which the item hash takes
	testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
		port = bases[0]
		cfg := loadConfig(t, map[string]any{
			"engine_type": "sglang", "tokenizer": dir, "served_model_name": []string{"qwen"},
			"block_size": page, "num_gpu_blocks": 4096, "max_model_len": 4096, "log_level": "error",
			"zmq_kv_events_port": port,
		})
		model = cfg.Model
		var err error
		srv, err = e2eTryStartProduction(t, cfg)
		return err
	})
	events := newKVCollector(t, fmt.Sprintf("tcp://127.0.0.1:%d", port), page)
	events.signed = true
	deadline := time.Now().Add(5 * time.Second)
	for k := 0; !events.take(t, 150*time.Millisecond); k++ {
		if time.Now().After(deadline) {
			t.Fatal("no KV event within 5 s of probing")
		}
		srv.postJSON(t, "/v1/completions", map[string]any{"model": "qwen",
			"prompt": strings.Repeat(fmt.Sprintf("probe %d ", k), 20), "max_tokens": 1}, nil)
	}
	events.drain(t, 50*time.Millisecond)

	// ask sends the chat and returns the prompt as the client sees it
	// (return_token_ids: the placeholders, unpadded).
	ask := func(img string) []uint32 {
		var ans chatAnswer
		status, raw := srv.postJSON(t, "/v1/chat/completions", map[string]any{"model": "qwen", "max_tokens": 1,
			"return_token_ids": true, "messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}},
				map[string]any{"type": "text", "text": text}}}}}, &ans)
		if status != 200 {
			t.Fatalf("chat: %d %s", status, raw)
		}
		return ans.PromptTokenIDs
	}
	// collect returns the pages announced since the last call, by hash.
	collect := func(n int) map[uint64]kvBlock {
		events.blocks = map[uint64]kvBlock{}
		testutil.WaitUntil(t, 5*time.Second, func() string {
			events.drain(t, 20*time.Millisecond)
			if len(events.blocks) < n {
				return fmt.Sprintf("%d of %d pages announced", len(events.blocks), n)
			}
			return ""
		})
		return events.blocks
	}
	// padValue is the pad value the docs derive for an image data URL:
	// SGLang's data_hash mod 2^30 over the item's multimodal hash.
	padValue := func(url string) uint32 {
		data, err := base64.StdEncoding.DecodeString(url[strings.Index(url, ",")+1:])
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := media.Hash(media.KindImage, data, media.HashOptions{ModelID: model})
		if err != nil {
			t.Fatal(err)
		}
		return kv.RadixPadValue(h)
	}

	imgA, imgB := e2ePNG(t, 448, 448, 10), e2ePNG(t, 448, 448, 200)
	ids := ask(imgA)
	offset := slices.Index(ids, imagePad)
	if offset < 0 || len(ids) < offset+imageTokens || slices.ContainsFunc(ids[offset:offset+imageTokens], func(id uint32) bool { return id != imagePad }) ||
		slices.Contains(ids[offset+imageTokens:], imagePad) {
		t.Fatalf("the prompt has no single run of %d <|image_pad|>: %v", imageTokens, ids)
	}
	padded := func(v uint32) []uint32 {
		key := slices.Clone(ids)
		for i := offset; i < offset+imageTokens; i++ {
			key[i] = v
		}
		return key
	}
	vA, vB := padValue(imgA), padValue(imgB)
	if vA == vB || vA >= kv.RadixPadMod || vB >= kv.RadixPadMod {
		t.Fatalf("pad values %d and %d", vA, vB)
	}
	keyA, keyB := padded(vA), padded(vB)
	full, shared := len(ids)/page, offset/page
	if shared < 2 {
		t.Fatalf("the image starts at %d: too few pages before it", offset)
	}

	// Image A: every whole page of the padded prompt is stored, chained, with
	// the page hashes a consumer recomputes from the token ids.
	pagesA := collect(full)
	refA := kv.RadixPageHashes(keyA, page)
	if len(pagesA) != full {
		t.Fatalf("image A: %d pages announced, want %d", len(pagesA), full)
	}
	for i, h := range refA {
		blk, ok := pagesA[h]
		if !ok {
			t.Fatalf("image A: page %d (hash %x) not announced", i, h)
		}
		if !slices.Equal(blk.tokens, keyA[i*page:(i+1)*page]) {
			t.Errorf("image A page %d: token_ids %v, want %v", i, blk.tokens, keyA[i*page:(i+1)*page])
		}
		if i > 0 && (!blk.hasParent || blk.parent != refA[i-1]) {
			t.Errorf("image A page %d is not chained to page %d", i, i-1)
		}
		if slices.Contains(blk.tokens, imagePad) {
			t.Errorf("image A page %d carries <|image_pad|>, not the pad value", i)
		}
	}

	// Image B, same text: the client's prompt is the same; the pages before
	// the image's first page are hits (announced no more), the others new
	// and padded with B's value.
	if got := ask(imgB); !slices.Equal(got, ids) {
		t.Fatalf("image B's prompt differs from image A's")
	}
	pagesB := collect(full - shared)
	refB := kv.RadixPageHashes(keyB, page)
	if len(pagesB) != full-shared {
		t.Errorf("image B announced %d pages, want %d (the %d before the image are shared)", len(pagesB), full-shared, shared)
	}
	for i := shared; i < full; i++ {
		blk, ok := pagesB[refB[i]]
		if !ok {
			t.Errorf("image B: page %d not announced", i)
			continue
		}
		if !slices.Equal(blk.tokens, keyB[i*page:(i+1)*page]) {
			t.Errorf("image B page %d: token_ids %v", i, blk.tokens)
		}
	}
	if blk := pagesB[refB[shared]]; !blk.hasParent || blk.parent != refA[shared-1] {
		t.Errorf("image B's first new page is not chained to image A's page %d", shared-1)
	}

	// Image A again: every page is a hit, none is announced.
	ask(imgA)
	events.blocks = map[uint64]kvBlock{}
	events.drain(t, 300*time.Millisecond)
	if len(events.blocks) != 0 {
		t.Errorf("image A again announced %d pages", len(events.blocks))
	}
	t.Logf("%d-token prompt (image at %d): %d pages, %d shared across images; pad values %d, %d", len(ids), offset, full, shared, vA, vB)
}
