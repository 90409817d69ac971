package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"testing"
)

// modelDir writes a model directory's processor files.
func modelDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A Phi-4-multimodal model directory through the binary: its
// preprocessor_config.json's dynamic_hd, not the catalogue's 36, sets the
// crops. With dynamic_hd 4, a 1344×896 image (3×2 crops, too many) takes
// the 2×2 grid (1.5 is as far from 1:1 as from 2:1, and the image covers
// over half of the larger grid); scaled to 896 wide it is 597 high, so
// 299 px of padding drop 21 of the 64 feature rows: 43 rows pooled to 22,
// 64 columns to 32 — 256 + 1 + 32·22 + 22 + 16 = 999 tokens (the
// catalogue's model: 1841).
func TestE2E_Phi4DirectoryConfigSetsTheCrops(t *testing.T) {
	dir := modelDir(t, map[string]string{
		"config.json":              `{"architectures":["Phi4MMForCausalLM"],"model_type":"phi4mm","hidden_size":3072,"embd_layer":{"audio_embd_layer":{"compression_rate":8}}}`,
		"preprocessor_config.json": `{"dynamic_hd":4,"processor_class":"Phi4MMProcessor"}`,
	})
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{"model": dir, "served_model_name": []string{"phi"}, "log_level": "error"}))
	var ans chatAnswer
	status, raw := srv.postJSON(t, "/v1/chat/completions", map[string]any{"model": "phi", "max_tokens": 1, "messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Describe it."},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": e2ePNG(t, 1344, 896, 5)}}}}}}, &ans)
	if status != 200 {
		t.Fatalf("chat: %d %s", status, raw)
	}
	var plain struct{ Count int }
	if status, raw := srv.postJSON(t, "/tokenize", map[string]any{"model": "phi", "messages": []any{
		map[string]any{"role": "user", "content": "Describe it."}}}, &plain); status != 200 {
		t.Fatalf("tokenize: %d %s", status, raw)
	}
	// The built-in tokenizer: the text, the placeholder's line break, the image.
	if got := ans.Usage.PromptTokens - plain.Count - 1; got != 999 {
		t.Errorf("the image is %d prompt tokens, want 999 (prompt %d, text %d)", got, ans.Usage.PromptTokens, plain.Count)
	}
}

// A Whisper model directory through the binary: its chunk_length (15 s
// here, 30 in the published models) sets the windows of a transcription —
// a 20-s clip is two windows, so two verbose_json segments, the second
// starting at 15 s — and the streamed usage is vLLM's: the decoder
// prompt's tokens plus the clip's 100 mel frames a second.
func TestE2E_WhisperDirectoryConfigSetsTheWindows(t *testing.T) {
	dir := modelDir(t, map[string]string{
		"config.json":              `{"architectures":["WhisperForConditionalGeneration"],"model_type":"whisper","d_model":1280,"encoder_layers":32,"max_source_positions":1500,"max_target_positions":448}`,
		"preprocessor_config.json": `{"chunk_length":15,"feature_size":128,"hop_length":160,"sampling_rate":16000}`,
	})
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{"model": dir, "served_model_name": []string{"whisper"}, "log_level": "error"}))
	clip := wav16k(20)
	var verbose struct {
		Segments []struct{ Start float64 }
	}
	if status, raw := postAudio(t, srv, clip, map[string]string{"response_format": "verbose_json", "seed": "1"}, &verbose); status != 200 {
		t.Fatalf("verbose_json: %d %s", status, raw)
	}
	if len(verbose.Segments) != 2 || verbose.Segments[1].Start != 15 {
		t.Errorf("segments %+v, want two, the second at 15 s", verbose.Segments)
	}
	status, raw := postAudio(t, srv, clip, map[string]string{"stream": "true", "stream_include_usage": "true"}, nil)
	if status != 200 {
		t.Fatalf("stream: %d %s", status, raw)
	}
	var decoder struct{ Count int }
	srv.postJSON(t, "/tokenize", map[string]any{"model": "whisper", "prompt": "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>", "add_special_tokens": false}, &decoder)
	var usage struct {
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: {")); ok && bytes.Contains(data, []byte(`"usage"`)) {
			_ = json.Unmarshal(append([]byte("{"), data...), &usage)
		}
	}
	if usage.Usage == nil || decoder.Count == 0 || usage.Usage.PromptTokens != decoder.Count+2000 {
		t.Errorf("stream usage %+v, want prompt_tokens %d (decoder) + 2000", usage.Usage, decoder.Count)
	}
}

// wav16k is a 16 kHz mono 16-bit WAV of the given seconds.
func wav16k(seconds int) []byte {
	n := 16000 * seconds
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(32000), uint16(2), uint16(16)} {
		w(v)
	}
	b.WriteString("data")
	w(uint32(2 * n))
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}

// postAudio sends a transcription form and decodes a 200's JSON into out.
func postAudio(t *testing.T, srv *running, clip []byte, fields map[string]string, out any) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "clip.wav")
	_, _ = fw.Write(clip)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	_ = mw.Close()
	resp, err := srv.client.Post(srv.url+"/v1/audio/transcriptions", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return resp.StatusCode, raw
}
