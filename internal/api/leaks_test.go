package api

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Answers that refuse a request leak nothing the client did not know
// (issue 34 H12).

// A huge previous_response_id is not echoed back whole in the 404.
func TestResponses_HugeUnknownIDIsNotEchoed(t *testing.T) {
	env := startServer(t, nil)
	id := strings.Repeat("é", 500_000) // 1 MB; a two-byte rune straddles the cut
	r := env.post("/v1/responses", `{"input":"hi","previous_response_id":"`+id+`"}`)
	if r.Status != http.StatusNotFound {
		t.Fatalf("status %d", r.Status)
	}
	msg, _, param, _ := errorOf(t, r)
	want := "Response with id '" + strings.Repeat("é", 64) + "…' not found."
	if msg != want || param != "response_id" || len(r.Body) > 1024 {
		t.Errorf("answer of %d bytes: %.300q", len(r.Body), msg)
	}
	// A short id is echoed as vLLM does.
	msg, _, _, _ = errorOf(t, env.post("/v1/responses", `{"input":"hi","previous_response_id":"resp_nope"}`))
	if msg != "Response with id 'resp_nope' not found." {
		t.Errorf("short id: %q", msg)
	}
}

// Under --lora-path-check exists every failed check but the rank gives the
// one "no adapter" answer: a missing path, a file, an empty directory, a
// config that is not JSON (whose parse error once echoed its first byte),
// and an adapter_config.json symlinked to a file outside the adapter.
func TestLoRAPathCheckRevealsNothing(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(secret, `xsecret`)
	empty := mkdir("empty")
	notJSON := mkdir("notjson")
	write(filepath.Join(notJSON, "adapter_config.json"), "xyz")
	linked := mkdir("linked")
	if err := os.Symlink(secret, filepath.Join(linked, "adapter_config.json")); err != nil {
		t.Fatal(err)
	}
	linkedJSON := mkdir("linkedjson")
	write(filepath.Join(dir, "outside.json"), `{"r":8}`)
	if err := os.Symlink(filepath.Join(dir, "outside.json"), filepath.Join(linkedJSON, "adapter_config.json")); err != nil {
		t.Fatal(err)
	}
	good := mkdir("good")
	write(filepath.Join(good, "adapter_config.json"), `{"r":8}`)

	env := startLoRAServer(t, map[string]any{"lora_path_check": "exists"})
	for _, p := range []string{filepath.Join(dir, "missing"), secret, empty, notJSON, linked, linkedJSON} {
		r := env.post("/v1/load_lora_adapter", `{"lora_name":"x","lora_path":"`+p+`"}`)
		msg, typ, _, _ := errorOf(t, r)
		if r.Status != http.StatusNotFound || typ != "NotFoundError" || msg != "Loading lora x failed: No adapter found for "+p {
			t.Errorf("%s: %d %s %q", filepath.Base(p), r.Status, typ, msg)
		}
	}
	if r := env.post("/v1/load_lora_adapter", `{"lora_name":"x","lora_path":"`+good+`"}`); r.Status != http.StatusOK {
		t.Errorf("a real adapter: %d %s", r.Status, r.Body)
	}
}

// chat_template on /v1/messages and /v1/responses is refused as on chat
// completions (no --trust-request-chat-template), never silently ignored.
func TestChatTemplateOnEverySurfaceIsRefusedUntrusted(t *testing.T) {
	env := startServer(t, nil)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template":"{{ 'x' }}"}`},
		{"/v1/messages", `{"model":"mocker-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template":"{{ 'x' }}"}`},
		{"/v1/responses", `{"input":"hi","max_output_tokens":2,"chat_template":"{{ 'x' }}"}`},
	} {
		r := env.post(c.path, c.body)
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "--trust-request-chat-template") {
			t.Errorf("%s: %d %.300s", c.path, r.Status, r.Body)
		}
	}
}
