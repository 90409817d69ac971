package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/openai/openai-go/v3"
)

// wavBytes is a 16 kHz mono 16-bit PCM WAV of the given length (a quiet
// sine-free ramp: the samples do not matter, the header does).
func wavBytes(seconds float64) []byte {
	n := int(16000 * seconds)
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(32000), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(2*n))
	for i := range n {
		_ = binary.Write(&b, binary.LittleEndian, int16(i%64))
	}
	return b.Bytes()
}

// audioModel serves Qwen2-Audio's processor: 3 s of audio are 75 tokens.
var audioModel = map[string]any{"mm_processor_model": "Qwen/Qwen2-Audio-7B-Instruct"}

func TestSDK_ChatImageAndAudioParts(t *testing.T) {
	img := pngBytes(t, 640, 480, 5)
	env := startServer(t, nil)
	c := env.sdkClient()
	ctx := context.Background()
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", MaxTokens: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL("image/png", img)}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 640×480 → Qwen2.5-VL's 644×476 → 23×17 tokens.
	text := jsonOf(t, env.post("/tokenize", `{"messages":[{"role":"user","content":"What is in this picture?"}]}`).Body)["count"].(float64)
	if want := int64(text) + 1 + int64(qwen25VLTokens(640, 480)); resp.Usage.PromptTokens != want || resp.Choices[0].Message.Content == "" {
		t.Errorf("image: prompt_tokens %d, want %d; content %q", resp.Usage.PromptTokens, want, resp.Choices[0].Message.Content)
	}

	audio := startServer(t, audioModel)
	ca := audio.sdkClient()
	wav := base64.StdEncoding.EncodeToString(wavBytes(3))
	resp, err = ca.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", MaxTokens: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: wav, Format: "wav"}),
			openai.TextContentPart("Transcribe it."),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	tk := audio.post("/tokenize", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"`+wav+`","format":"wav"}},{"type":"text","text":"Transcribe it."}]}]}`)
	var got struct{ Tokens []uint32 }
	_ = json.Unmarshal([]byte(tk.Body), &got)
	n := 0
	for _, id := range got.Tokens {
		if id == uint32(tokenizer.VocabSize-2) {
			n++
		}
	}
	if n != 75 || resp.Usage.PromptTokens != int64(len(got.Tokens)) {
		t.Errorf("audio: %d audio tokens (want 75), prompt_tokens %d of /tokenize's %d", n, resp.Usage.PromptTokens, len(got.Tokens))
	}
	// The vision model refuses audio with vLLM's message, through the SDK.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", MaxTokens: openai.Int(3),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: wav, Format: "wav"}),
		})},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != "At most 0 audio(s) may be provided in one prompt." {
		t.Errorf("audio to a vision model: %v", err)
	}
}

// The npm SDKs (openai v6, @anthropic-ai/sdk, scripts/npm-ref) send image
// and audio parts (testdata/sdk/multimodal.mjs): chat with an image data
// URL, streamed and not; chat with input_audio (to an audio model);
// Responses with input_image; Messages with a base64 image block and a URL
// image block.
func TestNodeSDK_ImageAndAudioRequests(t *testing.T) {
	modules := testutil.NodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.SkipOrFail(t, "node not found: %v", err)
	}
	vision := startServer(t, sdkKeyed)
	audio := startServer(t, map[string]any{"api_key": []any{"sk-test"}, "mm_processor_model": "Qwen/Qwen2-Audio-7B-Instruct"})
	img := pngBytes(t, 640, 480, 5)
	in, _ := json.Marshal(map[string]string{"png": base64.StdEncoding.EncodeToString(img),
		"wav": base64.StdEncoding.EncodeToString(wavBytes(3)), "vision": vision.URL, "audio": audio.URL})
	script, _ := filepath.Abs(filepath.Join("testdata", "sdk", "multimodal.mjs"))
	cmd := exec.Command(node, script)
	cmd.Env = append(cmd.Environ(), "SDK_MODULES="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%.4000s\n%s", err, out, stderr.String())
	}
	var res struct {
		ChatImage, ChatImageStream, ChatAudio, ResponsesImage, MessagesBase64, MessagesURL struct {
			PromptTokens int    `json:"prompt_tokens"`
			Text         string `json:"text"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := int(jsonOf(t, vision.post("/tokenize", `{"messages":[{"role":"user","content":"What is in this picture?"}]}`, "Authorization", "Bearer sk-test").Body)["count"].(float64))
	want := text + 1 + qwen25VLTokens(640, 480)
	for name, r := range map[string]struct {
		PromptTokens int    `json:"prompt_tokens"`
		Text         string `json:"text"`
	}{"chat image": res.ChatImage, "chat image stream": res.ChatImageStream, "responses image": res.ResponsesImage, "messages base64 image": res.MessagesBase64} {
		if r.PromptTokens != want || r.Text == "" {
			t.Errorf("%s: prompt tokens %d, want %d; text %q", name, r.PromptTokens, want, r.Text)
		}
	}
	// An unfetched URL image: the default 1024×1024 size.
	if w := text + 1 + qwen25VLTokens(1024, 1024); res.MessagesURL.PromptTokens != w {
		t.Errorf("messages URL image: %d prompt tokens, want %d", res.MessagesURL.PromptTokens, w)
	}
	if res.ChatAudio.PromptTokens <= 75 || res.ChatAudio.Text == "" {
		t.Errorf("chat audio: %+v", res.ChatAudio)
	}
}

// The Vercel AI SDK's image parts (testdata/sdk/vercel_image.mjs): bytes
// and a URL over chat completions, bytes over the Responses API. The
// packages (ai, @ai-sdk/openai) come with the agent-loop tests' npm-ref
// additions; without them the test says so and skips.
func TestVercelAISDK_ImageParts(t *testing.T) {
	modules := testutil.NodeModules(t)
	if _, err := os.Stat(filepath.Join(modules, "ai", "package.json")); err != nil {
		t.Skip("the npm-ref modules have no Vercel AI SDK (ai, @ai-sdk/openai)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.SkipOrFail(t, "node not found: %v", err)
	}
	env := startServer(t, sdkKeyed)
	img := pngBytes(t, 640, 480, 5)
	in, _ := json.Marshal(map[string]string{"png": base64.StdEncoding.EncodeToString(img), "base": env.URL})
	script, _ := filepath.Abs(filepath.Join("testdata", "sdk", "vercel_image.mjs"))
	cmd := exec.Command(node, script)
	cmd.Env = append(cmd.Environ(), "SDK_MODULES="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%.4000s\n%s", err, out, stderr.String())
	}
	var res map[string]struct {
		InputTokens int    `json:"input_tokens"`
		Text        string `json:"text"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := int(jsonOf(t, env.post("/tokenize", `{"messages":[{"role":"user","content":"What is in this picture?"}]}`,
		"Authorization", "Bearer sk-test").Body)["count"].(float64))
	for name, want := range map[string]int{
		"chat_bytes":      text + 1 + qwen25VLTokens(640, 480),
		"chat_url":        text + 1 + qwen25VLTokens(1024, 1024),
		"responses_bytes": text + 1 + qwen25VLTokens(640, 480),
	} {
		if r := res[name]; r.InputTokens != want || r.Text == "" {
			t.Errorf("%s: %d input tokens, want %d; text %q", name, r.InputTokens, want, r.Text)
		}
	}
}
