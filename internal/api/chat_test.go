package api

import "testing"

// A request's own chat_template is refused (vLLM does so unless the
// operator trusts request templates), not silently ignored.
func TestChat_RequestChatTemplateIsRefused(t *testing.T) {
	env := startServer(t, nil)
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1,"chat_template":"{{ messages }}"}`)
	msg, _, param, _ := errorOf(t, r)
	if r.Status != 400 || param != any("chat_template") ||
		msg != "Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template." {
		t.Errorf("status %d, param %q, message %q", r.Status, param, msg)
	}
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1}`); r.Status != 200 {
		t.Errorf("the next request got %d: %s", r.Status, r.Body)
	}
}
