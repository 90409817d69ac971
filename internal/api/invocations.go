package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// adapterHeader names the LoRA adapter of a SageMaker invocation.
const adapterHeader = "X-Amzn-SageMaker-Adapter-Identifier"

// invocation is one handler POST /invocations may dispatch to: vLLM's
// request type name (for the error) and the body shape that selects it.
type invocation struct {
	name  string
	match func(o wire.Object) bool
	h     http.Handler
}

// handleInvocations is SageMaker's POST /invocations as vLLM serves it
// (vllm/entrypoints/sagemaker/api_router.py): the body goes to the first
// handler, in vLLM's order — chat, completions, embeddings, classify,
// rerank, score, pooling, each only when the model has it — whose request
// type it validates as. vLLM tries pydantic validation of each type in
// turn; the mock tests the fields each type requires and their JSON kinds,
// which is what separates the types, and then the chosen handler checks
// everything else in its own way. A body that fits none is a 400 naming
// the types tried. An X-Amzn-SageMaker-Adapter-Identifier header becomes
// the body's model, as vLLM's SageMaker decorators inject it.
func handleInvocations(s *pipeline.Server, inv []invocation) http.Handler {
	var live []invocation
	for _, i := range inv {
		if i.h != nil {
			live = append(live, i)
		}
	}
	names := make([]string, len(live))
	for i, v := range live {
		names[i] = "'" + v.name + "'"
	}
	noneMsg := "Cannot find suitable handler for request. Expected one of: [" + strings.Join(names, ", ") + "]"
	limit := s.Opts().HTTP.MaxRequestBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ReadBodies has read the body (at most limit+1 bytes); keep it
		// to hand to the chosen handler, which decodes it again.
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			wire.WriteError(w, wire.ErrBadRequest("", "Invalid request body: %v", err))
			return
		}
		peek := r.Clone(r.Context())
		peek.Body = io.NopCloser(bytes.NewReader(body))
		o, e := wire.DecodeBody(w, peek, limit)
		if e != nil {
			wire.WriteError(w, e)
			return
		}
		if id := r.Header.Get(adapterHeader); id != "" {
			// SageMaker's LoRA routing: the header names the adapter,
			// injected as the body's model (vLLM's inject_adapter_id).
			model, _ := json.Marshal(id)
			o.M["model"] = model
			if body, err = json.Marshal(o.M); err != nil {
				wire.WriteError(w, wire.ErrBadRequest("", "Invalid request body: %v", err))
				return
			}
		}
		for _, v := range live {
			if v.match(o) {
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
				v.h.ServeHTTP(w, r)
				return
			}
		}
		wire.WriteError(w, wire.ErrInvalid("", "%s", noneMsg))
	})
}

// kindOf is the JSON kind of a present, non-null field: one of
// "string", "array", "object", or "" (absent, null or another kind).
func kindOf(o wire.Object, key string) string {
	raw, ok := o.M[key]
	if !ok || wire.IsNull(raw) || len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return ""
}

// isChat: ChatCompletionRequest requires messages, a list.
func isChat(o wire.Object) bool { return kindOf(o, "messages") == "array" }

// isCompletion: CompletionRequest requires prompt (a string, strings or
// token ids; vLLM also allows null with prompt_embeds, which the mock
// does not serve).
func isCompletion(o wire.Object) bool {
	k := kindOf(o, "prompt")
	return k == "string" || k == "array"
}

// isInputOrMessages: the embedding and classification requests are a
// completion form (input: a string, strings or token ids) or a chat form
// (messages).
func isInputOrMessages(o wire.Object) bool {
	k := kindOf(o, "input")
	return k == "string" || k == "array" || isChat(o)
}

// isRerank: RerankRequest requires query and documents.
func isRerank(o wire.Object) bool {
	q, d := kindOf(o, "query"), kindOf(o, "documents")
	return (q == "string" || q == "object") && (d == "array" || d == "object")
}

// isScore: ScoreRequest is one of its four field pairs.
func isScore(o wire.Object) bool {
	for _, p := range [...][2]string{{"queries", "documents"}, {"queries", "items"}, {"data_1", "data_2"}, {"text_1", "text_2"}} {
		if kindOf(o, p[0]) != "" && kindOf(o, p[1]) != "" {
			return true
		}
	}
	return false
}

// isPooling: PoolingRequest is the completion or chat form, or a plugin's
// data.
func isPooling(o wire.Object) bool { return isInputOrMessages(o) || o.Has("data") }
