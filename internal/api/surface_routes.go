package api

import (
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/anthropic"
	"github.com/mocker-server/mocker-server/internal/api/audio"
	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/pooling"
	"github.com/mocker-server/mocker-server/internal/api/responses"
)

// mountSurfaces adds the generation endpoints of the other APIs
// (docs/http-api.md): the Responses API with its store, Anthropic
// Messages (errors in Anthropic's shape, gates included), and the pooling
// endpoints the served model's runner and task have (docs/pooling.md):
// embeddings, /pooling, /classify, /score and /rerank. Like chat, these
// routes wait for the startup gate and refuse work while draining. It
// returns the pooling handlers /invocations may dispatch to, in vLLM's
// order.
func mountSurfaces(s *pipeline.Server, r interface {
	Method(method, pattern string, h http.Handler)
}) []invocation {
	gate := func(h http.Handler) http.Handler { return s.StartupGate(s.DrainGate(h)) }
	po := s.Opts().Pooling
	if po.Generates() {
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
		// Speech to text: a Whisper-class model generates its transcript.
		r.Method(http.MethodPost, "/v1/audio/transcriptions", gate(pipeline.HandleSurfaceBody(s, audio.Surface{Task: audio.Transcribe}, audio.DecodeMultipart)))
		r.Method(http.MethodPost, "/v1/audio/translations", gate(pipeline.HandleSurfaceBody(s, audio.Surface{Task: audio.Translate}, audio.DecodeMultipart)))
	}
	// One basis: every pooling endpoint computes from the vectors
	// /v1/embeddings returns.
	basis := embeddings.NewEmbedBasis(s.Opts().Seed, s.Opts().EmbeddingDim)
	var inv []invocation
	if po.Embeds() {
		h := gate(pipeline.HandleSurface(s, embeddings.EmbeddingsSurface{Basis: basis}))
		r.Method(http.MethodPost, "/v1/embeddings", h)
		inv = append(inv, invocation{"EmbeddingRequest", isInputOrMessages, h})
	}
	if po.Runner != RunnerPooling {
		return inv
	}
	if po.Classifies() {
		h := gate(pipeline.HandleSurface(s, pooling.ClassifySurface{Basis: basis}))
		r.Method(http.MethodPost, "/classify", h)
		inv = append(inv, invocation{"ClassificationRequest", isInputOrMessages, h})
	}
	if po.Scores() {
		score := gate(pipeline.HandleSurface(s, pooling.ScoreSurface{Basis: basis}))
		rerank := gate(pipeline.HandleSurface(s, pooling.ScoreSurface{Basis: basis, Rerank: true}))
		for _, p := range []string{"/score", "/v1/score"} {
			r.Method(http.MethodPost, p, score)
		}
		for _, p := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
			r.Method(http.MethodPost, p, rerank)
		}
		inv = append(inv, invocation{"RerankRequest", isRerank, rerank}, invocation{"ScoreRequest", isScore, score})
	}
	h := gate(pipeline.HandleSurface(s, pooling.PoolingSurface{Basis: basis}))
	r.Method(http.MethodPost, "/pooling", h)
	return append(inv, invocation{"PoolingRequest", isPooling, h})
}
