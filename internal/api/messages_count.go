package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

// handleCountTokens serves POST /v1/messages/count_tokens (vLLM's
// Anthropic count_tokens): the request is translated and rendered like a
// Messages request, without max_tokens and without running the engine, and
// the answer is the prompt's token count. Errors have Anthropic's shape.
func handleCountTokens(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e != nil {
			writeAnthropicError(w, e)
			return
		}
		for _, k := range []string{"max_tokens", "stream", "stop_sequences"} {
			delete(o.m, k) // not part of a count request
		}
		// The smallest output keeps the context-length check meaningful.
		o.m["max_tokens"] = json.RawMessage("1")
		g, e := messagesSurface{}.parse(s, o, r)
		if e != nil {
			writeAnthropicError(w, e)
			return
		}
		n := strconv.Itoa(len(g.prompts[0].ids))
		httperr.Write(w, http.StatusOK, []byte(`{"input_tokens":`+n+`,"context_management":{"original_input_tokens":`+n+`}}`))
	})
}
