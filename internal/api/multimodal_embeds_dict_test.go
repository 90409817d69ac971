package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/conn"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// tensorVector is one of the hashes Python computed from the tensors
// Debian's torch loads, as vLLM's hasher serializes them
// (internal/media/testdata/hashref.py tensors): keyed layout, blake3. A
// fixture of shape (1, tokens, hidden) is hashed as its t[0].
func tensorVector(t *testing.T, modality, fixture, grid, model string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "media", "testdata", "tensor_hash_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Modality, Fixture, Grid, Scheme, Algorithm, Hash string
		ModelID                                          string `json:"model_id"`
		Index                                            *int
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Modality == modality && v.Fixture == fixture && v.Grid == grid && v.ModelID == model &&
			v.Scheme == "keyed" && v.Algorithm == "blake3" && (v.Index != nil) == strings.HasPrefix(fixture, "embeds_1x") {
			return v.Hash
		}
	}
	t.Fatalf("no vector for %s %s %s %s", modality, fixture, grid, model)
	return ""
}

// anyWidth turns vLLM's check of the embeddings' width off: the torch
// fixtures the hash vectors were computed on are 4 and 8 wide, the model
// id only names the hash's model_id, and the model's real width (3584,
// 4096) would refuse them (TestMultimodal_EmbedsHiddenSize tests the check).
func anyWidth(o *settings.Options) { o.Multimodal.EmbedsHiddenSize = 0 }

// itemKeys sends a chat request and returns its prompt tokens and the
// identifiers of the items in the extra keys of the blocks it stored.
func itemKeys(t *testing.T, env *testEnv, rec *kvStore, body string) (int, []string) {
	t.Helper()
	p := promptTokens(t, env.post("/v1/chat/completions", body))
	var ids []string
	for _, e := range rec.take() {
		for _, keys := range e.MMKeys {
			for _, k := range keys {
				if !slices.Contains(ids, k.Identifier) {
					ids = append(ids, k.Identifier)
				}
			}
		}
	}
	return p, ids
}

func dictPart(embeds, grid string) map[string]any {
	return embedsPart(map[string]any{"image_embeds": embeds, "image_grid_thw": grid})
}

// The block extra keys of an image_embeds item are vLLM's hash of the
// loaded tensor, equal to the value Python computes from torch's own
// loading of the same file; Qwen2.5-VL's dict form costs t·h·w/4 tokens
// and is hashed as the mapping of its two tensors.
func TestMultimodal_ImageEmbedsHashIsVLLMs(t *testing.T) {
	const model = "Qwen/Qwen2.5-VL-7B-Instruct"
	cfg := testConfig(t, map[string]any{"model": model, "block_size": 16, "enable_mm_embeds": true})
	rec := &kvStore{}
	env := startServerEdited(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{},
		conn.ConnContext, anyWidth)
	text := strings.Repeat("a long shared question about the features ", 8)
	ask := strings.Repeat("what are they? ", 12) // full blocks after the item
	plain := promptTokens(t, env.post("/v1/chat/completions", chatWithSystem(text, ask)))
	rec.take()
	for _, tc := range []struct {
		name, fixture, grid string
		part                map[string]any
		rows                int
	}{
		{"float32 tensor", "embeds_4x8_f4.pt", "", embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt")), 4},
		{"bfloat16 tensor", "embeds_4x8_bf16.pt", "", embedsPart(torchEmbeds(t, "embeds_4x8_bf16.pt")), 4},
		{"transposed view", "embeds_T_8x4_f4.pt", "", embedsPart(torchEmbeds(t, "embeds_T_8x4_f4.pt")), 8},
		{"numpy array", "embeds_77x16_f4.npy", "", embedsPart(torchEmbeds(t, "embeds_77x16_f4.npy")), 77},
		{"a batch of one", "embeds_1x4x8_f4.pt", "", embedsPart(torchEmbeds(t, "embeds_1x4x8_f4.pt")), 4},
		{"dict form 1×4×4", "embeds_4x8_f4.pt", "grid_1x4x4.pt", dictPart(torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "grid_1x4x4.pt")), 4},
		{"dict form 1×8×8", "embeds_16x8_f4.pt", "grid_1x8x8.pt", dictPart(torchEmbeds(t, "embeds_16x8_f4.pt"), torchEmbeds(t, "grid_1x8x8.pt")), 16},
		{"dict form, int32 grid", "embeds_4x8_bf16.pt", "grid_i4_1x4x4.pt", dictPart(torchEmbeds(t, "embeds_4x8_bf16.pt"), torchEmbeds(t, "grid_i4_1x4x4.pt")), 4},
	} {
		p, ids := itemKeys(t, env, rec, chatWithSystem(text, ask, tc.part))
		want := tensorVector(t, "image", tc.fixture, tc.grid, model)
		if len(ids) != 1 || ids[0] != want {
			t.Errorf("%s: item identifiers %v, want [%s]", tc.name, ids, want)
		}
		// The vision markers around the rows: 2 tokens with the built-in
		// tokenizer's stand-in template line.
		if around := p - plain - tc.rows; around < 1 || around > 4 {
			t.Errorf("%s: prompt_tokens %d for %d rows over %d plain", tc.name, p, tc.rows, plain)
		}
		tk := env.post("/tokenize", strings.Replace(chatWithSystem(text, ask, tc.part), `"max_tokens":2,`, "", 1))
		var tok struct{ Tokens []uint32 }
		_ = json.Unmarshal([]byte(tk.Body), &tok)
		n := 0
		for _, id := range tok.Tokens {
			if id == tokenizer.VocabSize-1 {
				n++
			}
		}
		if n != tc.rows || len(tok.Tokens) != p {
			t.Errorf("%s: /tokenize has %d of %d image tokens, %d tokens for prompt_tokens %d", tc.name, n, tc.rows, len(tok.Tokens), p)
		}
	}
	// The same dict again reuses every block; the same embeddings with
	// another (equal-count) grid dtype is another item.
	a := chatWithSystem(text, ask, dictPart(torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "grid_1x4x4.pt")))
	if _, ids := itemKeys(t, env, rec, a); len(ids) != 0 {
		t.Errorf("the same dict-form item stored new blocks keyed %v", ids)
	}
	_, ids := itemKeys(t, env, rec, chatWithSystem(text, ask, dictPart(torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "grid_i4_1x4x4.pt"))))
	if len(ids) != 1 || ids[0] == tensorVector(t, "image", "embeds_4x8_f4.pt", "grid_1x4x4.pt", model) {
		t.Errorf("an int32 grid gave identifiers %v", ids)
	}
}

func TestMultimodal_ImageEmbedsDictRefusals(t *testing.T) {
	env := startServer(t, map[string]any{"enable_mm_embeds": true, "max_media_item_bytes": 4096})
	e4, e16 := torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "embeds_16x8_f4.pt")
	for _, tc := range []struct {
		name  string
		part  map[string]any
		msg   string
		param string
	}{
		{"float grid", dictPart(e4, torchEmbeds(t, "grid_f4_1x4x4.pt")), "image_grid_thw must be an integer tensor (t, h, w); got float32.", ".image_embeds.image_grid_thw"},
		{"grid of two images", dictPart(e4, torchEmbeds(t, "grid_2x3.pt")), "size_per_item should be a 1-D tensor, but found shape: torch.Size([1, 2])", ".image_embeds.image_grid_thw"},
		{"grid not matching the rows", dictPart(e4, torchEmbeds(t, "grid_1x8x8.pt")), "image_grid_thw [1 8 8] gives 16 image tokens (t·h·w / 2²) but image_embeds has 4 rows.", ".image_embeds"},
		{"rows not matching the grid", dictPart(e16, torchEmbeds(t, "grid_1x4x4.pt")), "gives 4 image tokens (t·h·w / 2²) but image_embeds has 16 rows.", ".image_embeds"},
		{"no grid", embedsPart(map[string]any{"image_embeds": e4}), "The data should contain the fields: {'image_embeds', 'image_grid_thw'}, but only found the following keys: {'image_embeds'}", ".image_embeds"},
		{"another key", embedsPart(map[string]any{"image_embeds": e4, "image_grid_thw": e4, "second_per_grid_ts": e4}), `"second_per_grid_ts" is not read`, ".image_embeds.second_per_grid_ts"},
		{"a 1-D tensor as embeddings", dictPart(torchEmbeds(t, "embeds_1d_f4.pt"), torchEmbeds(t, "grid_1x4x4.pt")), "The media data is corrupt", ".image_embeds.image_embeds"},
		{"oversize embeddings", dictPart(torchEmbeds(t, "embeds_77x16_f4.npy"), torchEmbeds(t, "grid_1x4x4.pt")), "limit 4096", ""},
		{"expanded view", embedsPart(torchEmbeds(t, "embeds_expand_4x8_f4.pt")), "repeats elements", ""},
	} {
		r := env.post("/v1/chat/completions", chatWithParts("x", tc.part))
		msg, typ, param, code := errorOf(t, r)
		if r.Status != 400 || typ != "BadRequestError" || code != 400 || !strings.Contains(msg, tc.msg) ||
			(tc.param != "" && param != "messages[0].content[1]"+tc.param) {
			t.Errorf("%s: %d %.400s", tc.name, r.Status, r.Body)
		}
	}
	// A model whose vLLM data parser has no dict form.
	llava := startServer(t, map[string]any{"enable_mm_embeds": true, "mm_processor_model": "llava-hf/llava-1.5-7b-hf"})
	r := llava.post("/v1/chat/completions", chatWithParts("x", dictPart(e4, torchEmbeds(t, "grid_1x4x4.pt"))))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, "read by the Qwen2-VL, Qwen2.5-VL and Qwen3-VL processors only") {
		t.Errorf("dict form on LLaVA: %d %s", r.Status, r.Body)
	}
	if got := promptTokens(t, llava.post("/v1/chat/completions", chatWithParts("x", embedsPart(e4)))); got <= 4 {
		t.Errorf("LLaVA single tensor: prompt_tokens %d", got)
	}
}

// audio_embeds on Qwen2-Audio: one audio item of the tensor's rows between
// the template's audio markers, hashed as vLLM hashes the tensor under the
// audio modality, counted in --limit-mm-per-prompt's audio.
func TestMultimodal_AudioEmbeds(t *testing.T) {
	const model = "Qwen/Qwen2-Audio-7B-Instruct"
	cfg := testConfig(t, map[string]any{"model": model, "block_size": 16, "enable_mm_embeds": true,
		"limit_mm_per_prompt": map[string]any{"audio": 2}})
	rec := &kvStore{}
	env := startServerEdited(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, KVSink: rec} }, settings.Deps{},
		conn.ConnContext, anyWidth)
	text := strings.Repeat("listen to this and tell me what it is ", 8)
	ask := strings.Repeat("what is it? ", 12) // full blocks after the item
	plain := promptTokens(t, env.post("/v1/chat/completions", chatWithSystem(text, ask)))
	wav := map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": dataURL("audio/wav", wavBytes(1))[len("data:audio/wav;base64,"):], "format": "wav"}}
	clip := promptTokens(t, env.post("/v1/chat/completions", chatWithSystem(text, ask, wav)))
	around := clip - plain - 25 // 1 s is 25 Qwen2-Audio tokens
	rec.take()
	audioPart := func(name string) map[string]any {
		return map[string]any{"type": "audio_embeds", "audio_embeds": torchEmbeds(t, name)}
	}
	for name, rows := range map[string]int{"embeds_4x8_f4.pt": 4, "embeds_4x8_bf16.pt": 4, "embeds_16x8_f4.pt": 16} {
		p, ids := itemKeys(t, env, rec, chatWithSystem(text, ask, audioPart(name)))
		if p != plain+around+rows {
			t.Errorf("%s: prompt_tokens %d, want %d plain + %d around + %d rows", name, p, plain, around, rows)
		}
		if name != "embeds_16x8_f4.pt" {
			if want := tensorVector(t, "audio", name, "", model); len(ids) != 1 || ids[0] != want {
				t.Errorf("%s: identifiers %v, want [%s]", name, ids, want)
			}
		}
		tk := env.post("/tokenize", strings.Replace(chatWithSystem(text, ask, audioPart(name)), `"max_tokens":2,`, "", 1))
		var tok struct{ Tokens []uint32 }
		_ = json.Unmarshal([]byte(tk.Body), &tok)
		n := 0
		for _, id := range tok.Tokens {
			if id == tokenizer.VocabSize-2 {
				n++
			}
		}
		if n != rows {
			t.Errorf("%s: /tokenize has %d audio tokens, want %d", name, n, rows)
		}
	}
	// The same tensor as image embeddings is another item (another modality
	// in the hash), refused here since Qwen2-Audio has no image encoder.
	two := promptTokens(t, env.post("/v1/chat/completions", chatWithSystem(text, ask, audioPart("embeds_4x8_f4.pt"), audioPart("embeds_16x8_f4.pt"))))
	if two != plain+2*around+20 {
		t.Errorf("two audio_embeds: prompt_tokens %d, want %d", two, plain+2*around+20)
	}
	for _, tc := range []struct {
		name  string
		parts []map[string]any
		msg   string
	}{
		{"over the audio limit", []map[string]any{audioPart("embeds_4x8_f4.pt"), audioPart("embeds_4x8_f4.pt"), audioPart("embeds_4x8_f4.pt")}, "At most 2 audio(s) may be provided in one prompt."},
		{"mixed with raw audio", []map[string]any{wav, audioPart("embeds_4x8_f4.pt")}, "Mixing raw audio and embedding inputs is not allowed"},
		{"as image embeddings", []map[string]any{embedsPart(torchEmbeds(t, "embeds_4x8_f4.pt"))}, "At most 0 image(s) may be provided in one prompt."},
		{"a stacked batch", []map[string]any{audioPart("embeds_2x5x8_f4.pt")}, "holds 2 items; send one (tokens, hidden) tensor per audio_embeds part"},
		{"dict form", []map[string]any{{"type": "audio_embeds", "audio_embeds": map[string]any{"audio_embeds": torchEmbeds(t, "embeds_4x8_f4.pt")}}}, "The dict form of audio_embeds is not supported"},
	} {
		r := env.post("/v1/chat/completions", chatWithSystem(text, ask, tc.parts...))
		msg, typ, _, code := errorOf(t, r)
		if r.Status != 400 || typ != "BadRequestError" || code != 400 || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %.300s", tc.name, r.Status, r.Body)
		}
	}
	// A limit of 0 leaves embeddings in under --enable-mm-embeds, as
	// vLLM's tracker does (an embeddings-only server), but not raw audio.
	zero := startServer(t, map[string]any{"enable_mm_embeds": true, "mm_processor_model": model, "limit_mm_per_prompt": map[string]any{"audio": 0}})
	if got := promptTokens(t, zero.post("/v1/chat/completions", chatWithParts("x", audioPart("embeds_4x8_f4.pt"), audioPart("embeds_4x8_f4.pt")))); got < 8 {
		t.Errorf("audio_embeds under a limit of 0: prompt_tokens %d", got)
	}
	r := zero.post("/v1/chat/completions", chatWithParts("x", wav))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, "At most 0 audio(s)") {
		t.Errorf("raw audio under a limit of 0: %d %s", r.Status, r.Body)
	}
	// Qwen2.5-Omni's vLLM replacement counts audio tokens from the audio
	// features, which embeddings lack: refused by name.
	omni := startServer(t, map[string]any{"enable_mm_embeds": true, "mm_processor_model": "Qwen/Qwen2.5-Omni-7B"})
	r = omni.post("/v1/chat/completions", chatWithParts("x", audioPart("embeds_4x8_f4.pt")))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || !strings.Contains(msg, "audio_embeds are read for Qwen2-Audio only") {
		t.Errorf("audio_embeds on Qwen2.5-Omni: %d %s", r.Status, r.Body)
	}
	// A text-only model with the limits at 0: refused, never a panic.
	text0 := startServer(t, map[string]any{"enable_mm_embeds": true, "mm_processor_model": "none",
		"limit_mm_per_prompt": map[string]any{"audio": 0, "image": 0}})
	for _, part := range []map[string]any{audioPart("embeds_4x8_f4.pt"), dictPart(torchEmbeds(t, "embeds_4x8_f4.pt"), torchEmbeds(t, "grid_1x4x4.pt"))} {
		if r := text0.post("/v1/chat/completions", chatWithParts("x", part)); r.Status != 400 {
			t.Errorf("embeddings on a text-only model: %d %s", r.Status, r.Body)
		}
	}
	off := startServer(t, map[string]any{"mm_processor_model": model})
	r = off.post("/v1/chat/completions", chatWithParts("x", audioPart("embeds_4x8_f4.pt")))
	if msg, _, _, _ := errorOf(t, r); r.Status != 400 || msg != "You must set `--enable-mm-embeds` to input `audio_embeds`" {
		t.Errorf("without --enable-mm-embeds: %d %s", r.Status, r.Body)
	}
}
