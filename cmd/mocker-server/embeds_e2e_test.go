package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An image_embeds part through the binary (the flag parsed and composed
// as in production) with Qwen3's real tokenizer: the prompt is the image
// prompt's, its run of 256 <|image_pad|> (a 448×448 image) replaced by as
// many pads as the torch.save tensor has rows.
// Qwen2.5-VL's dict form of image_embeds does the same with t·h·w/4 rows.
func TestE2E_ImageEmbedsAreTheTensorsRows(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{
		"tokenizer": dir, "served_model_name": []string{"qwen"}, "max_model_len": 4096,
		"enable_mm_embeds": true, "log_level": "error",
	}))
	ask := func(part map[string]any) chatAnswer {
		var ans chatAnswer
		status, raw := srv.postJSON(t, "/v1/chat/completions", map[string]any{"model": "qwen", "max_tokens": 1,
			"return_token_ids": true, "messages": []any{map[string]any{"role": "user", "content": []any{
				part, map[string]any{"type": "text", "text": "What do these features show?"}}}}}, &ans)
		if status != 200 {
			t.Fatalf("chat: %d %s", status, raw)
		}
		return ans
	}
	img := ask(map[string]any{"type": "image_url", "image_url": map[string]any{"url": e2ePNG(t, 448, 448, 9)}})
	// The image's run: the one id repeated 256 times.
	start := -1
	for i := 0; i+256 <= len(img.PromptTokenIDs); i++ {
		run := img.PromptTokenIDs[i : i+256]
		if slices.Equal(run, slices.Repeat(run[:1], 256)) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("no 256-token image run in %v", img.PromptTokenIDs)
	}
	pad := img.PromptTokenIDs[start]
	fixture := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "internal", "media", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for name, rows := range map[string]int{"embeds_4x8_bf16.pt": 4, "embeds_T_8x4_f4.pt": 8, "embeds_16x8_f4.pt+grid_1x8x8.pt": 16} {
		var part map[string]any
		if embeds, grid, dict := strings.Cut(name, "+"); dict {
			// Qwen2.5-VL's dict form: a 1×8×8 grid is 8·8/2² = 16 rows.
			part = map[string]any{"type": "image_embeds", "image_embeds": map[string]any{
				"image_embeds": fixture(embeds), "image_grid_thw": fixture(grid)}}
		} else {
			part = map[string]any{"type": "image_embeds", "image_embeds": fixture(name)}
		}
		got := ask(part)
		want := slices.Concat(img.PromptTokenIDs[:start], slices.Repeat([]uint32{pad}, rows), img.PromptTokenIDs[start+256:])
		if got.Usage.PromptTokens != img.Usage.PromptTokens-256+rows || !slices.Equal(got.PromptTokenIDs, want) {
			t.Errorf("%s: prompt_tokens %d (image %d), ids\n %v\nwant\n %v", name, got.Usage.PromptTokens, img.Usage.PromptTokens, got.PromptTokenIDs, want)
		}
	}
}
