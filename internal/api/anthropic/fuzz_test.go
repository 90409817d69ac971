package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// FuzzMessagesBody reads arbitrary /v1/messages bodies into the chat forms
// the surface hands to the pipeline: every body is refused with a 4xx
// naming its problem, or gives chat messages (and tools, when given) that
// are a JSON array. Never a panic.
func FuzzMessagesBody(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","max_tokens":3,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`,
		`{"model":"m","max_tokens":1,"messages":[]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"chat_template":"{{ x }}","chat_template_kwargs":{"a":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		o, e := wire.DecodeBody(httptest.NewRecorder(), r, 1<<20)
		if e == nil {
			var in any
			in, e = messagesInputOf(o)
			if e == nil {
				for _, k := range []string{"messages", "tools"} {
					raw, ok := in.(map[string]json.RawMessage)[k]
					var arr []json.RawMessage
					if (k == "messages" || ok) && json.Unmarshal(raw, &arr) != nil {
						t.Fatalf("%s is not a JSON array: %.200s", k, raw)
					}
				}
				return
			}
		}
		if e.Status < 400 || e.Status > 499 || e.Message == "" {
			t.Fatalf("refusal %d %q", e.Status, e.Message)
		}
	})
}

// messagesInputOf runs the surface's body reader and returns the chat
// fields it built.
func messagesInputOf(o wire.Object) (any, *wire.APIError) {
	in, e := messagesInput(o, wire.Num{I: 1, Set: true})
	if e != nil {
		return nil, e
	}
	return in.Body.M, nil
}
