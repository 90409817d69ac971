package anthropic

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// HandleCountTokens serves POST /v1/messages/count_tokens (vLLM's
// Anthropic count_tokens): the request is translated and rendered like a
// Messages request, without max_tokens and without running the engine, and
// the answer is the prompt's token count. Errors have Anthropic's shape.
func HandleCountTokens(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := wire.DecodeBody(w, r, s.Opts().HTTP.MaxRequestBodyBytes)
		if e != nil {
			WriteAnthropicError(w, e)
			return
		}
		for _, k := range []string{"max_tokens", "stream", "stop_sequences"} {
			delete(o.M, k) // not part of a count request
		}
		// The smallest output keeps the context-length check meaningful.
		o.M["max_tokens"] = json.RawMessage("1")
		g, e := MessagesSurface{}.Parse(s, o, r)
		if e != nil {
			WriteAnthropicError(w, e)
			return
		}
		n := strconv.Itoa(len(g.Prompts[0].IDs))
		httperr.Write(w, http.StatusOK, []byte(`{"input_tokens":`+n+`,"context_management":{"original_input_tokens":`+n+`}}`))
	})
}
