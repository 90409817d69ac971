package api

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// chatTextAndPart is a user message of one text and one media part.
func chatTextAndPart(text string, part map[string]any) string {
	b, _ := json.Marshal(map[string]any{"max_tokens": 2, "messages": []any{map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "text", "text": text}, part}}}})
	return string(b)
}

func imagePart(url string) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}
}

func audioPart(wav []byte) map[string]any {
	return map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": base64.StdEncoding.EncodeToString(wav), "format": "wav"}}
}

// TestMultimodal_MoreFamiliesCountAsTheirProcessors sends chat requests
// with images and audio to servers whose processor is InternVL 3 and
// Qwen2.5-Omni, and checks usage.prompt_tokens against each family's rule,
// worked out by hand here from the processors' published code:
//
//   - InternVL: crops of 448 px on the grid closest to the image's aspect
//     ratio (up to 12), a thumbnail when there is more than one crop,
//     256 <IMG_CONTEXT> per crop between <img> and </img>;
//   - Qwen2.5-Omni: images as Qwen2.5-VL, audio as Qwen2-Audio (25
//     tokens a second) up to its 300-s feature window;
//   - Phi-4-multimodal: 448-px crops covering the image plus a global
//     one, 2×2-pooled SigLIP features with a newline per row and a
//     separator — (w·h+1)·256 + 1 + (h+1)·16 for an image of w×h whole
//     crops (vLLM's own example: 1344×896 is 1841) — and audio as 25-ms
//     frames every 10 ms compressed 8 to 1: 1 s is 98 frames, 13 tokens;
//   - LLaVA-NeXT: the 336-px base view's 576 features, plus the canvas
//     of image_grid_pinpoints that keeps most of the image (the least
//     waste among equals) in 24×24-feature crops, the letterbox padding
//     cut and one newline per row: 336×336 takes the 336×672 canvas
//     (1×2 crops, 24×48), keeps 24×24, so 576 + 576 + 24 = 1176; 1000×500
//     fills the 672-wide canvas, 576 + 24·48 + 24 = 1752;
//   - LLaVA-OneVision: the same on SigLIP's 27×27 features of 384-px
//     views (729, no CLS) over 1×1 to 6×6 crops: 384×384 is 729 + 27·27
//   - 27 = 1485; 640×480 takes 2×2 crops (768×768: the smallest canvas
//     holding it unshrunk), 54×54 whose height keeps int(480·54/640) = 40,
//     so 729 + 40·54 + 40 = 2929 (under nine crops' worth, no downscale);
//     a 16-frame video is 16 × 14·14 pooled features and one newline, 3137.
//
// With the built-in tokenizer the placeholder is one line of its own, so
// the prompt is the text's tokens, one newline and the item's tokens.
func TestMultimodal_MoreFamiliesCountAsTheirProcessors(t *testing.T) {
	cases := []struct {
		model string
		part  map[string]any
		want  int
	}{
		{"OpenGVLab/InternVL3-8B", imagePart(dataURL("image/png", pngBytes(t, 448, 448, 3))), 1*256 + 2},
		{"OpenGVLab/InternVL3-8B", imagePart(dataURL("image/png", pngBytes(t, 1344, 448, 3))), (3+1)*256 + 2},
		{"OpenGVLab/InternVL3-8B", imagePart(dataURL("image/png", pngBytes(t, 896, 896, 3))), (4+1)*256 + 2},
		{"Qwen/Qwen2.5-Omni-7B", imagePart(dataURL("image/png", pngBytes(t, 1024, 1024, 3))), qwen25VLTokens(1024, 1024)},
		{"Qwen/Qwen2.5-Omni-7B", audioPart(wavBytes(3)), 75},
		{"Qwen/Qwen2.5-Omni-7B", audioPart(wavBytes(60)), 1500},
		{"microsoft/Phi-4-multimodal-instruct", imagePart(dataURL("image/png", pngBytes(t, 1344, 896, 3))), 1841},
		{"microsoft/Phi-4-multimodal-instruct", imagePart(dataURL("image/png", pngBytes(t, 448, 448, 3))), 545},
		{"microsoft/Phi-4-multimodal-instruct", audioPart(wavBytes(1)), 13},
		{"llava-hf/llava-v1.6-mistral-7b-hf", imagePart(dataURL("image/png", pngBytes(t, 336, 336, 3))), 1176},
		{"llava-hf/llava-v1.6-mistral-7b-hf", imagePart(dataURL("image/png", pngBytes(t, 1000, 500, 3))), 1752},
		{"llava-hf/llava-onevision-qwen2-7b-ov-hf", imagePart(dataURL("image/png", pngBytes(t, 384, 384, 3))), 1485},
		{"llava-hf/llava-onevision-qwen2-7b-ov-hf", imagePart(dataURL("image/png", pngBytes(t, 640, 480, 3))), 2929},
		{"llava-hf/llava-onevision-qwen2-7b-ov-hf", map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/mp4", mp4Video(640, 360, 16, 1))}}, 3137},
	}
	envs := map[string]*testEnv{}
	for _, c := range cases {
		env := envs[c.model]
		if env == nil {
			env = startServer(t, map[string]any{"mm_processor_model": c.model})
			envs[c.model] = env
		}
		const text = "Describe it."
		r := env.post("/v1/chat/completions", chatTextAndPart(text, c.part))
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", c.model, r.Status, r.Body)
		}
		prompt := int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64))
		plain := int(jsonOf(t, env.post("/tokenize", `{"messages":[{"role":"user","content":"`+text+`"}]}`).Body)["count"].(float64))
		if got := prompt - plain - 1; got != c.want {
			t.Errorf("%s %s: the item is %d prompt tokens, want %d", c.model, c.part["type"], got, c.want)
		}
	}
	// Phi-4 numbers its placeholders: two images in one message are
	// <|image_1|> and <|image_2|>, each replaced by its own count.
	b, _ := json.Marshal(map[string]any{"max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "Compare."},
		imagePart(dataURL("image/png", pngBytes(t, 1344, 896, 3))),
		imagePart(dataURL("image/png", pngBytes(t, 448, 448, 4)))}}}})
	phi := envs["microsoft/Phi-4-multimodal-instruct"]
	r := phi.post("/v1/chat/completions", string(b))
	plain := int(jsonOf(t, phi.post("/tokenize", `{"messages":[{"role":"user","content":"Compare."}]}`).Body)["count"].(float64))
	if r.Status != 200 || int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64)) != plain+2+1841+545 {
		t.Errorf("two images to Phi-4: %d %s (text alone %d tokens)", r.Status, r.Body, plain)
	}
	// InternVL takes no audio: vLLM's limit message.
	r = envs["OpenGVLab/InternVL3-8B"].post("/v1/chat/completions", chatTextAndPart("x", audioPart(wavBytes(1))))
	if r.Status != 400 {
		t.Errorf("audio to InternVL: %d %s", r.Status, r.Body)
	}
	// Whisper has no chat placeholder: its audio goes through the speech
	// endpoints, a chat audio part is a 400 saying so.
	w := startServer(t, map[string]any{"mm_processor_model": "openai/whisper-large-v3"})
	r = w.post("/v1/chat/completions", chatTextAndPart("x", audioPart(wavBytes(1))))
	if r.Status != 400 || !strings.Contains(r.Body, "/v1/audio/transcriptions") {
		t.Errorf("chat audio to Whisper: %d %s", r.Status, r.Body)
	}
}
