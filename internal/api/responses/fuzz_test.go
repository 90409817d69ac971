package responses

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// FuzzResponsesBody reads arbitrary /v1/responses bodies the way the
// surface does (the request fields, then the conversation, continuing a
// stored response): every body is either refused with a 4xx naming its
// problem, or read into a conversation that encodes as JSON. Never a
// panic; a long unknown previous_response_id is never echoed whole.
func FuzzResponsesBody(f *testing.F) {
	for _, seed := range []string{
		`{"input":"hi","max_output_tokens":3}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"input":"hi","instructions":"be brief","previous_response_id":"resp_prev"}`,
		`{"input":[{"type":"bogus"}]}`,
		`{"input":"hi","background":true}`,
		`{"input":"hi","include":["message.output_text.logprobs"],"top_logprobs":2}`,
		`{"input":"hi","chat_template":"{{ x }}"}`,
	} {
		f.Add([]byte(seed))
	}
	prev := &StoredResponse{Body: []byte(`{}`), conversation: nil}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/responses", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		o, e := wire.DecodeBody(httptest.NewRecorder(), r, 1<<20)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		req, _, e := readResponsesRequest(o)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		var from *StoredResponse
		if req.previousResponseID != nil {
			from = prev
			if nf := errResponseNotFound(*req.previousResponseID); len(nf.Message) > maxEchoedIDBytes+64 {
				t.Fatalf("404 message of %d bytes", len(nf.Message))
			}
		}
		conv, e := responsesConversation(o, req.instructions, from)
		if e != nil {
			checkRefusal(t, e)
			return
		}
		if _, err := json.Marshal(conv); err != nil {
			t.Fatalf("conversation does not encode: %v", err)
		}
	})
}

func checkRefusal(t *testing.T, e *wire.APIError) {
	t.Helper()
	if e.Status < 400 || e.Status > 499 || e.Message == "" {
		t.Fatalf("refusal %d %q", e.Status, e.Message)
	}
}
