package api

import "net/http"

// mountSurfaces adds the generation endpoints of the other APIs
// (docs/http-api.md): the Responses API with its store, Anthropic
// Messages (errors in Anthropic's shape, gates included) and embeddings. Like chat, the
// generation routes wait for the startup gate and refuse work while
// draining.
func (s *Server) mountSurfaces(r interface {
	Method(method, pattern string, h http.Handler)
}) {
	gate := func(h http.Handler) http.Handler { return s.startupGate(s.drainGate(h)) }
	// The Messages routes answer their gates in Anthropic's shape too.
	anthropicGate := func(h http.Handler) http.Handler {
		return s.startupGateIn(s.drainGateIn(h, writeAnthropicError), writeAnthropicError)
	}
	responses := responsesSurface{store: newResponseStore(responseStoreSize)}
	r.Method(http.MethodPost, "/v1/responses", gate(handleSurface(s, responses)))
	r.Method(http.MethodGet, "/v1/responses/{id}", handleRetrieveResponse(responses.store))
	r.Method(http.MethodPost, "/v1/responses/{id}/cancel", handleCancelResponse(responses.store))
	r.Method(http.MethodPost, "/v1/messages", anthropicGate(handleSurface(s, messagesSurface{})))
	r.Method(http.MethodPost, "/v1/messages/count_tokens", handleCountTokens(s))
	embeddings := embeddingsSurface{basis: newEmbedBasis(s.opts.Seed, s.opts.EmbeddingDim)}
	r.Method(http.MethodPost, "/v1/embeddings", gate(handleSurface(s, embeddings)))
}
