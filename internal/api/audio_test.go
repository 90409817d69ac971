package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// wavClip is a 16 kHz mono 16-bit PCM WAV file of the given length (a
// tone would do as well: only the header's duration matters).
func wavClip(d time.Duration) []byte {
	samples := int(d.Seconds() * 16000)
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*samples))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))     // PCM
	w(uint16(1))     // mono
	w(uint32(16000)) // sample rate
	w(uint32(32000)) // byte rate
	w(uint16(2))     // block align
	w(uint16(16))    // bits per sample
	b.WriteString("data")
	w(uint32(2 * samples))
	for i := range samples {
		w(int16((i % 64) * 256))
	}
	return b.Bytes()
}

// postForm sends a multipart form with the file (when data is not nil)
// and the fields, and returns the status and body.
func postForm(t *testing.T, url string, data []byte, fields map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if data != nil {
		fw, _ := mw.CreateFormFile("file", "clip.wav")
		_, _ = fw.Write(data)
	}
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	_ = mw.Close()
	resp, err := http.Post(url, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

// The openai-go client's audio.transcriptions.create and
// audio.translations.create against a real server: the transcript is the
// planned tokens' text, usage the clip's duration rounded up (vLLM's
// TranscriptionResponse), the translation without usage.
func TestAudio_OpenAIGoClient(t *testing.T) {
	env := startServer(t, nil)
	c := openai.NewClient(option.WithBaseURL(env.URL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	clip := wavClip(2500 * time.Millisecond)
	tr, err := c.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(clip), "clip.wav", "audio/wav"), Model: "mocker-model"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text == "" || tr.Usage.Type != "duration" || tr.Usage.Seconds != 3 {
		t.Errorf("transcription = %+v, want text and usage {duration 3}", tr)
	}
	again, err := c.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(clip), "clip.wav", "audio/wav"), Model: "mocker-model"})
	if err != nil || again.Text != tr.Text {
		t.Errorf("the same clip transcribed %q then %q (%v): want the same seeded text", tr.Text, again.Text, err)
	}
	tl, err := c.Audio.Translations.New(context.Background(), openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(clip), "clip.wav", "audio/wav"), Model: "mocker-model"})
	if err != nil || tl.Text == "" {
		t.Errorf("translation = %+v, %v", tl, err)
	}
	_, _, raw := postForm(t, env.URL+"/v1/audio/translations", clip, nil)
	if strings.Contains(string(raw), "usage") {
		t.Errorf("translation body %s has usage; vLLM's TranslationResponse has none", raw)
	}
}

// Every response_format: the text alone, verbose_json's segments (one per
// 30-s window, vLLM's TranscriptionSegment fields), SubRip and WebVTT cues
// of the same segments.
func TestAudio_ResponseFormats(t *testing.T) {
	env := startServer(t, nil)
	url := env.URL + "/v1/audio/transcriptions"
	clip := wavClip(65 * time.Second) // three windows: 30 + 30 + 5 s
	code, _, raw := postForm(t, url, clip, map[string]string{"response_format": "json", "seed": "7"})
	var whole struct{ Text string }
	if code != 200 || json.Unmarshal(raw, &whole) != nil || whole.Text == "" {
		t.Fatalf("json: %d %s", code, raw)
	}
	code, hdr, raw := postForm(t, url, clip, map[string]string{"response_format": "text", "seed": "7"})
	if code != 200 || string(raw) != whole.Text || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("text: %d %q (%s), want the json answer's text %q", code, raw, hdr.Get("Content-Type"), whole.Text)
	}
	code, _, raw = postForm(t, url, clip, map[string]string{"response_format": "verbose_json", "seed": "7", "language": "de"})
	var verbose struct {
		Duration string
		Language string
		Text     string
		Segments []struct {
			ID               int
			Start, End       float64
			Text             string
			Tokens           []int
			CompressionRatio float64 `json:"compression_ratio"`
		}
	}
	if code != 200 || json.Unmarshal(raw, &verbose) != nil {
		t.Fatalf("verbose_json: %d %s", code, raw)
	}
	if verbose.Duration != "65" || verbose.Language != "de" || verbose.Text != whole.Text || len(verbose.Segments) != 3 {
		t.Fatalf("verbose_json = %s", raw)
	}
	joined := ""
	for i, s := range verbose.Segments {
		joined += s.Text
		if s.ID != i || s.Start != float64(30*i) || len(s.Tokens) == 0 || s.CompressionRatio <= 0 {
			t.Errorf("segment %d = %+v", i, s)
		}
	}
	if joined != whole.Text || verbose.Segments[2].End != 65 {
		t.Errorf("segments join to %q (last ends at %v), want %q and 65", joined, verbose.Segments[2].End, whole.Text)
	}
	code, _, raw = postForm(t, url, clip, map[string]string{"response_format": "srt", "seed": "7"})
	if code != 200 || !strings.HasPrefix(string(raw), "1\n00:00:00,000 --> 00:00:30,000\n") ||
		!strings.Contains(string(raw), "\n3\n00:01:00,000 --> 00:01:05,000\n") {
		t.Errorf("srt: %d\n%s", code, raw)
	}
	code, hdr, raw = postForm(t, url, clip, map[string]string{"response_format": "vtt", "seed": "7"})
	if code != 200 || !strings.HasPrefix(string(raw), "WEBVTT\n\n00:00:00.000 --> 00:00:30.000\n") ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/vtt") {
		t.Errorf("vtt: %d %s\n%s", code, hdr.Get("Content-Type"), raw)
	}
}

// stream=true sends vLLM's transcription.chunk deltas, the windows in
// order, each window's last with its finish_reason, the usage chunk when
// stream_include_usage is set, then [DONE]; the deltas join to the
// non-streamed text.
func TestAudio_Stream(t *testing.T) {
	env := startServer(t, nil)
	url := env.URL + "/v1/audio/transcriptions"
	clip := wavClip(40 * time.Second)
	_, _, raw := postForm(t, url, clip, map[string]string{"seed": "3"})
	var whole struct{ Text string }
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatal(err)
	}
	code, _, raw := postForm(t, url, clip, map[string]string{"seed": "3", "stream": "true", "stream_include_usage": "true"})
	if code != 200 {
		t.Fatalf("stream: %d %s", code, raw)
	}
	var text strings.Builder
	finishes, done := 0, false
	var usage *struct{ PromptTokens, CompletionTokens int }
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Object  string
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil || ch.Object != "transcription.chunk" {
			t.Fatalf("chunk %s: %v", line, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finishes++
			}
		}
		if ch.Usage != nil {
			usage = &struct{ PromptTokens, CompletionTokens int }{ch.Usage.PromptTokens, ch.Usage.CompletionTokens}
		}
	}
	// vLLM's streamed prompt_tokens: the decoder prompt's tokens plus
	// get_num_audio_tokens, the clip's log-mel frames (100 a second), not
	// the windows' encoder positions.
	tk := env.post("/tokenize", `{"prompt":"<|startoftranscript|><|en|><|transcribe|><|notimestamps|>","add_special_tokens":false}`)
	decoder := int(jsonOf(t, tk.Body)["count"].(float64))
	if text.String() != whole.Text || finishes != 2 || !done || usage == nil || usage.PromptTokens != decoder+40*100 || usage.CompletionTokens == 0 {
		t.Errorf("stream text %q (want %q), %d finishes (want 2), done %v, usage %+v (want prompt_tokens %d)", text.String(), whole.Text, finishes, done, usage, decoder+4000)
	}
	// With a prompt the decoder text starts "<|prev|>", so vLLM puts the
	// decoder start token in front of it.
	_, _, raw = postForm(t, url, clip, map[string]string{"stream": "true", "stream_include_usage": "true", "prompt": "Earlier words."})
	tk = env.post("/tokenize", `{"prompt":"<|startoftranscript|><|prev|>Earlier words.<|startoftranscript|><|en|><|transcribe|><|notimestamps|>","add_special_tokens":false}`)
	withPrev := int(jsonOf(t, tk.Body)["count"].(float64))
	if !strings.Contains(string(raw), fmt.Sprintf(`"prompt_tokens":%d,`, withPrev+4000)) {
		t.Errorf("stream with a prompt: want prompt_tokens %d in %s", withPrev+4000, raw[max(0, len(raw)-300):])
	}
	code, _, raw = postForm(t, url, clip, map[string]string{"stream": "true", "response_format": "verbose_json"})
	if code != 400 || !strings.Contains(string(raw), "doesn't support streaming") {
		t.Errorf("verbose_json stream: %d %s, want vLLM's 400", code, raw)
	}
}

// Bad input is refused in the endpoint's error shape with bounded memory:
// a 2 GB upload from its Content-Length before any byte is read, an
// unbounded chunked one once it passes the body limit, a file over vLLM's
// 25 MB, a form without its file part, a file that is not audio.
func TestAudio_BadInput(t *testing.T) {
	env := startServer(t, map[string]any{"max_request_body_bytes": 32 << 20})
	url := env.URL + "/v1/audio/transcriptions"

	// 2 GB declared: the answer comes before the body is sent.
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n", int64(2)<<30)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("2 GB upload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(body), `"code":413`) {
		t.Errorf("2 GB upload: %d %s", resp.StatusCode, body)
	}

	// 2 GB chunked, no length: refused once the limit is passed.
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n"))
		zeros := make([]byte, 1<<20)
		for range 2048 {
			if _, err := pw.Write(zeros); err != nil {
				return
			}
		}
		pw.Close()
	}()
	defer pr.Close()
	req, _ := http.NewRequest(http.MethodPost, url, pr)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	start := time.Now()
	resp, err = http.DefaultClient.Do(req)
	if err == nil {
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("chunked 2 GB upload: %d %s", resp.StatusCode, body)
		}
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("chunked 2 GB upload took %v to refuse", time.Since(start))
	}

	for _, c := range []struct {
		name  string
		data  []byte
		want  int
		param string
		text  string
	}{
		{"over 25 MB", make([]byte, 26<<20), 400, "file", "Maximum file size exceeded."},
		{"no file part", nil, 400, "file", "Field required"},
		{"not audio", []byte("just some text, not a clip"), 400, "file", "Invalid or unsupported audio file"},
	} {
		code, _, raw := postForm(t, url, c.data, map[string]string{"model": "mocker-model"})
		var e struct {
			Error struct {
				Message string
				Param   string
				Code    int
			}
		}
		if err := json.Unmarshal(raw, &e); err != nil || code != c.want || e.Error.Code != c.want ||
			e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.text) {
			t.Errorf("%s: %d %s, want %d naming %s: %q", c.name, code, raw, c.want, c.param, c.text)
		}
	}
	code, _, raw := postForm(t, url, wavClip(time.Second), map[string]string{"response_format": "xml"})
	if code != 400 || !strings.Contains(string(raw), `"param":"response_format"`) {
		t.Errorf("response_format xml: %d %s", code, raw)
	}
	resp, err = http.Post(url, "application/json", strings.NewReader(`{"file":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("JSON body: %d %s", resp.StatusCode, body)
	}
}

// The openai npm client's audio.transcriptions.create and
// audio.translations.create (scripts/npm-ref) against a real server.
func TestAudio_OpenAINodeSDK(t *testing.T) {
	modules := testutil.NodeModules(t)
	env := startServer(t, nil)
	clip := filepath.Join(t.TempDir(), "clip.wav")
	if err := os.WriteFile(clip, wavClip(1500*time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "audio_sdk.cjs"))
	cmd := exec.Command("node", script, env.URL, clip)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var res struct {
		Transcription struct {
			Text  string
			Usage struct {
				Type    string
				Seconds int
			}
		}
		Text        string
		Translation struct{ Text string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	if res.Transcription.Text == "" || res.Transcription.Usage.Type != "duration" || res.Transcription.Usage.Seconds != 2 ||
		res.Text != res.Transcription.Text || res.Translation.Text == "" {
		t.Errorf("node SDK results: %s", out)
	}
}

// Under --response-mode echo a chat echoes its last message, while a
// transcript is still planned: an audio request has no text to echo.
func TestAudio_EchoModePlansTranscripts(t *testing.T) {
	env := startServer(t, map[string]any{"response_mode": "echo"})
	c := openai.NewClient(option.WithBaseURL(env.URL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	chat, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "mocker-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say it back")}})
	if err != nil || chat.Choices[0].Message.Content != "say it back" {
		t.Fatalf("chat echo = %+v, %v", chat, err)
	}
	code, _, raw := postForm(t, env.URL+"/v1/audio/transcriptions", wavClip(5*time.Second), map[string]string{"response_format": "text"})
	if code != 200 || len(raw) == 0 || strings.Contains(string(raw), ",") {
		t.Errorf("transcript under echo mode: %d %q, want planned words, not echoed ids", code, raw)
	}
}
