package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/mocker-server/mocker-server/internal/api/endpoints"
	"github.com/mocker-server/mocker-server/internal/api/openai"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/sglang"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// routes lists every route (docs/http-api.md) and the middleware around
// them.
// Middleware order: CORS (header on every response, OPTIONS preflight) →
// panic recovery → authentication (/v1/*, /tokenize, /detokenize,
// /reset_prefix_cache) → HTTP metrics → bounded body read → router; the startup gate wraps
// /health, /ping and the generation endpoints. /reset_prefix_cache exists
// only in dev mode (vLLM's VLLM_SERVER_DEV_MODE rule), /admin/faults only
// with an admin key.
func routes(s *pipeline.Server) http.Handler {
	r := chi.NewRouter()
	r.Use(CORS, s.RecoverPanics, s.Authenticate, instrumentHTTP(s, r), s.ReadBodies)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		httperr.Write(w, http.StatusNotFound, wire.BodyNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		httperr.Write(w, http.StatusMethodNotAllowed, wire.BodyMethodNotAllowed)
	})

	gate := s.StartupGate
	var chat, completions http.Handler
	if s.Opts().Pooling.Generates() {
		// A pooling model has no generation routes (vLLM registers them
		// only for the generate task): 404 like any unknown path.
		chat = gate(s.DrainGate(openai.HandleGenerate(s, true)))
		completions = gate(s.DrainGate(openai.HandleGenerate(s, false)))
		r.Method(http.MethodPost, "/v1/chat/completions", chat)
		r.Method(http.MethodPost, "/v1/completions", completions)
	}
	r.Method(http.MethodGet, "/v1/models", endpoints.HandleModels(s))

	r.Method(http.MethodGet, "/health", gate(endpoints.HandleHealth(s)))
	r.Method(http.MethodGet, "/ping", gate(endpoints.HandleHealth(s)))
	r.Method(http.MethodPost, "/ping", gate(endpoints.HandleHealth(s)))
	r.Method(http.MethodGet, "/version", endpoints.HandleVersion(s.Version()))
	r.Method(http.MethodPost, "/tokenize", endpoints.HandleTokenize(s))
	r.Method(http.MethodPost, "/detokenize", endpoints.HandleDetokenize(s))
	r.Method(http.MethodGet, "/load", endpoints.HandleLoad(s))
	r.Method(http.MethodGet, "/metrics", endpoints.HandleMetrics(s.MetricsHandler()))
	if s.Opts().HTTP.DevMode {
		r.Method(http.MethodPost, "/reset_prefix_cache", endpoints.HandleResetPrefixCache(s))
	}
	if s.Adapters() != nil && s.Opts().LoRA.RuntimeUpdating {
		// Like vLLM, the routes exist only when runtime updating is allowed.
		r.Method(http.MethodPost, "/v1/load_lora_adapter", endpoints.HandleLoadAdapter(s))
		r.Method(http.MethodPost, "/v1/unload_lora_adapter", endpoints.HandleUnloadAdapter(s))
	}
	if s.SideChannel() != nil {
		r.Handle("/kv_transfer/*", s.SideChannel()) // disaggregation side channel (internal/kvtransfer)
	}
	s.MountAdmin(r)
	sglang.MountSGLang(s, r)
	inv := mountSurfaces(s, r)
	inv = append([]invocation{{"ChatCompletionRequest", isChat, chat}, {"CompletionRequest", isCompletion, completions}}, inv...)
	r.Method(http.MethodPost, "/invocations", handleInvocations(s, inv))
	return r
}

// instrumentHTTP counts each request in vLLM's HTTP metrics, as the
// FastAPI instrumentator vLLM mounts does: inside CORS and authentication
// (vLLM adds both after the instrumentator, so preflights and 401s are not
// counted), around everything else. The handler label is the route
// pattern the request matched in mux: chi's, filled in by the routing
// below, or for a request answered before routing (a body that timed
// out) the pattern mux would have chosen, as the instrumentator matches
// the route itself.
func instrumentHTTP(s *pipeline.Server, mux *chi.Mux) func(http.Handler) http.Handler {
	obs := s.HTTPInstrumenter()
	if obs == nil {
		return func(next http.Handler) http.Handler { return next }
	}
	route := func(r *http.Request) string {
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			return rc.RoutePattern()
		}
		rc := chi.NewRouteContext()
		if mux.Match(rc, r.Method, r.URL.Path) {
			return rc.RoutePattern()
		}
		return ""
	}
	return func(next http.Handler) http.Handler { return obs.InstrumentHTTP(next, route) }
}
