package api

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// TestMultimodal_SGLangPadsItemsAsItsProcessorGroupsThem: under
// --engine-type sglang the radix cache sees each image's placeholder run
// padded with its SGLang item's pad value. A Qwen-VL image is an item of
// its own (SGLang splits by image_grid_thw), so two requests that differ in
// their second image share the pages up to it; LLaVA's images are one
// bundled item with one pad value, so they share only the pages before the
// first image; Qwen2-Audio's clips likewise (audio is never split). The
// stored pages' token ids are the client's prompt with those values in the
// runs.
func TestMultimodal_SGLangPadsItemsAsItsProcessorGroupsThem(t *testing.T) {
	const page = 16
	image := func(b []byte) map[string]any {
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", b)}}
	}
	audio := func(b []byte) map[string]any {
		return map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": base64.StdEncoding.EncodeToString(b), "format": "wav"}}
	}
	// Three clips of one length, so one token count: only their bytes differ.
	clips := [3][]byte{wavBytes(2), wavBytes(2), wavBytes(2)}
	clips[1][len(clips[1])-1] ^= 1
	clips[2][len(clips[2])-2] ^= 1
	pngs := [3][]byte{pngBytes(t, 256, 256, 1), pngBytes(t, 256, 256, 2), pngBytes(t, 256, 256, 3)}
	for _, tc := range []struct {
		name    string
		model   string
		kind    media.Kind
		part    func([]byte) map[string]any
		items   [3][]byte
		standIn uint32 // the built-in tokenizer's placeholder id of the modality
		bundled bool
	}{
		{"Qwen2.5-VL, one item per image", "Qwen/Qwen2.5-VL-7B-Instruct", media.KindImage, image, pngs, tokenizer.VocabSize - 1, false},
		{"LLaVA-1.5, one bundled item", "llava-hf/llava-1.5-7b-hf", media.KindImage, image, pngs, tokenizer.VocabSize - 1, true},
		{"Qwen2-Audio, one bundled item", "Qwen/Qwen2-Audio-7B-Instruct", media.KindAudio, audio, clips, tokenizer.VocabSize - 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, map[string]any{"engine_type": "sglang", "block_size": page, "mm_processor_model": tc.model})
			rec := &kvStore{}
			env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{})
			system := strings.Repeat("a long system prompt that fills a few pages ", 8)
			body := func(img1, img2 []byte, tokenize bool, extra ...any) string {
				m := map[string]any{"messages": []any{
					map[string]any{"role": "system", "content": system},
					map[string]any{"role": "user", "content": []any{
						tc.part(img1), map[string]any{"type": "text", "text": strings.Repeat("what is in the first one? ", 4)}}},
					map[string]any{"role": "user", "content": []any{
						tc.part(img2), map[string]any{"type": "text", "text": "and in the second one?"}}}}}
				if !tokenize {
					m["max_tokens"] = 1
				}
				for i := 0; i+1 < len(extra); i += 2 {
					m[extra[i].(string)] = extra[i+1]
				}
				b, _ := json.Marshal(m)
				return string(b)
			}
			img1, img2, img3 := tc.items[0], tc.items[1], tc.items[2]
			tk := env.post("/tokenize", body(img1, img2, true))
			var tok struct{ Tokens []uint32 }
			if tk.Status != 200 || json.Unmarshal([]byte(tk.Body), &tok) != nil {
				t.Fatalf("/tokenize: %d %s", tk.Status, tk.Body)
			}
			// The images' runs of the built-in tokenizer's stand-in id.
			var runs [][2]int
			for i, id := range tok.Tokens {
				if id != tc.standIn {
					continue
				}
				if n := len(runs); n > 0 && runs[n-1][1] == i {
					runs[n-1][1]++
				} else {
					runs = append(runs, [2]int{i, i + 1})
				}
			}
			if len(runs) != 2 || runs[0][0] < 2*page || runs[1][0]/page <= runs[0][0]/page+1 {
				t.Fatalf("image runs %v in a %d-token prompt", runs, len(tok.Tokens))
			}
			hash := func(img []byte) string {
				h, _, err := media.Hash(tc.kind, img, media.HashOptions{ModelID: cfg.Model})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			values := func(a, b []byte) [2]uint32 {
				if tc.bundled {
					v := kv.RadixPadValue(hash(a), hash(b))
					return [2]uint32{v, v}
				}
				return [2]uint32{kv.RadixPadValue(hash(a)), kv.RadixPadValue(hash(b))}
			}
			padded := func(v [2]uint32) []uint32 {
				key := slices.Clone(tok.Tokens)
				for k, r := range runs {
					for i := r[0]; i < r[1]; i++ {
						key[i] = v[k]
					}
				}
				return key
			}
			send := func(a, b []byte, extra ...any) []kv.Event {
				if r := env.post("/v1/chat/completions", body(a, b, false, extra...)); r.Status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				return rec.take()
			}
			full := len(tok.Tokens) / page
			var gotA []uint32
			for _, e := range send(img1, img2) {
				gotA = append(gotA, e.TokenIDs...)
			}
			if wantA := padded(values(img1, img2))[:full*page]; !slices.Equal(gotA, wantA) {
				t.Fatalf("image pair 1, 2: stored token ids\n%v\nwant\n%v", gotA, wantA)
			}
			// Only the second image changes.
			shared := runs[1][0] / page
			if tc.bundled {
				shared = runs[0][0] / page
			}
			evB := send(img1, img3)
			var gotB []uint32
			for _, e := range evB {
				gotB = append(gotB, e.TokenIDs...)
			}
			if wantB := padded(values(img1, img3))[shared*page : full*page]; !slices.Equal(gotB, wantB) {
				t.Errorf("image pair 1, 3: stored %d pages, want the %d from page %d on", len(gotB)/page, full-shared, shared)
			}
			if len(evB) == 0 || !evB[0].HasParent {
				t.Errorf("image pair 1, 3: its first stored page has no parent")
			}
			// truncate_prompt_tokens cuts the prompt's start: the runs move
			// with it, and the shifted prompt shares no page.
			const cut = 5
			var gotT []uint32
			for _, e := range send(img1, img2, "truncate_prompt_tokens", len(tok.Tokens)-cut) {
				gotT = append(gotT, e.TokenIDs...)
			}
			if wantT := padded(values(img1, img2))[cut:]; !slices.Equal(gotT, wantT[:len(wantT)/page*page]) {
				t.Errorf("truncated by %d: stored token ids\n%v\nwant\n%v", cut, gotT, wantT[:len(wantT)/page*page])
			}
		})
	}
}
