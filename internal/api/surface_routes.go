package api

import (
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/anthropic"
	"github.com/mocker-server/mocker-server/internal/api/audio"
	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/responses"
)

// mountSurfaces adds the generation endpoints of the other APIs
// (docs/http-api.md): the Responses API with its store, Anthropic
// Messages (errors in Anthropic's shape, gates included) and embeddings. Like chat, the
// generation routes wait for the startup gate and refuse work while
// draining.
func mountSurfaces(s *pipeline.Server, r interface {
	Method(method, pattern string, h http.Handler)
}) {
	gate := func(h http.Handler) http.Handler { return s.StartupGate(s.DrainGate(h)) }
	// The Messages routes answer their gates in Anthropic's shape too.
	anthropicGate := func(h http.Handler) http.Handler {
		return s.StartupGateIn(s.DrainGateIn(h, anthropic.WriteAnthropicError), anthropic.WriteAnthropicError)
	}
	rs := responses.ResponsesSurface{Store: responses.NewResponseStore(responses.ResponseStoreSize, s.Opts().Budgets.MaxResponsesStoreBytes)}
	r.Method(http.MethodPost, "/v1/responses", gate(pipeline.HandleSurface(s, rs)))
	r.Method(http.MethodGet, "/v1/responses/{id}", responses.HandleRetrieveResponse(rs.Store))
	r.Method(http.MethodPost, "/v1/responses/{id}/cancel", responses.HandleCancelResponse(rs.Store))
	r.Method(http.MethodPost, "/v1/messages", anthropicGate(pipeline.HandleSurface(s, anthropic.MessagesSurface{})))
	r.Method(http.MethodPost, "/v1/messages/count_tokens", anthropic.HandleCountTokens(s))
	es := embeddings.EmbeddingsSurface{Basis: embeddings.NewEmbedBasis(s.Opts().Seed, s.Opts().EmbeddingDim)}
	r.Method(http.MethodPost, "/v1/embeddings", gate(pipeline.HandleSurface(s, es)))
	r.Method(http.MethodPost, "/v1/audio/transcriptions", gate(pipeline.HandleSurfaceBody(s, audio.Surface{Task: audio.Transcribe}, audio.DecodeMultipart)))
	r.Method(http.MethodPost, "/v1/audio/translations", gate(pipeline.HandleSurfaceBody(s, audio.Surface{Task: audio.Translate}, audio.DecodeMultipart)))
}
