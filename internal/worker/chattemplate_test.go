package worker

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// promptTokens posts a chat request and returns its status and
// usage.prompt_tokens.
func promptTokens(t *testing.T, url, extra string) (int, int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":1`+extra+`}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body.Usage.PromptTokens, body.Error.Message
}

// --trust-request-chat-template makes a request's chat_template render the
// prompt (vLLM's flag); without it the request is refused.
func TestTrustRequestChatTemplate(t *testing.T) {
	// 40 words from the request's template, whatever the messages.
	tmpl := `,"chat_template":"{% for i in range(40) %}word {% endfor %}{{ messages[0].content }}"`

	w := New(testConfig(t), Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	defer http.DefaultClient.CloseIdleConnections()
	if status, _, msg := promptTokens(t, w.URL(), tmpl); status != http.StatusBadRequest ||
		!strings.Contains(msg, "--trust-request-chat-template") {
		t.Errorf("untrusted: %d %q", status, msg)
	}

	trusted := New(testcfg.Load(t, map[string]any{"port": 0, "log_level": "warn", "trust_request_chat_template": true}), Options{})
	if err := trusted.Start(); err != nil {
		t.Fatal(err)
	}
	defer trusted.Stop()
	status, plain, _ := promptTokens(t, trusted.URL(), "")
	if status != http.StatusOK {
		t.Fatalf("no template: %d", status)
	}
	status, own, msg := promptTokens(t, trusted.URL(), tmpl)
	if status != http.StatusOK || own < 40 || own == plain {
		t.Errorf("trusted template: %d, %d prompt tokens (server's template: %d) %q", status, own, plain, msg)
	}
	if status, _, msg := promptTokens(t, trusted.URL(), `,"chat_template":"{% for %}"`); status != http.StatusBadRequest ||
		!strings.Contains(msg, "Invalid chat template") {
		t.Errorf("broken template: %d %q", status, msg)
	}
}
