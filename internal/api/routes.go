package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// routes lists every route (docs/http-api.md) and the middleware around
// them.
// Middleware order: CORS (header on every response, OPTIONS preflight) →
// panic recovery → authentication (/v1/*, /tokenize, /detokenize,
// /reset_prefix_cache) → bounded body read → router; the startup gate wraps
// /health, /ping and the generation endpoints. /reset_prefix_cache exists
// only in dev mode (vLLM's VLLM_SERVER_DEV_MODE rule), /admin/faults only
// with an admin key.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(cors, s.recoverPanics, s.authenticate, s.readBodies)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		httperr.Write(w, http.StatusNotFound, bodyNotFound)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		httperr.Write(w, http.StatusMethodNotAllowed, bodyMethodNotAllowed)
	})

	gate := s.startupGate
	r.Method(http.MethodPost, "/v1/chat/completions", gate(s.drainGate(handleGenerate(s, true))))
	r.Method(http.MethodPost, "/v1/completions", gate(s.drainGate(handleGenerate(s, false))))
	r.Method(http.MethodGet, "/v1/models", handleModels(s))

	r.Method(http.MethodGet, "/health", gate(handleHealth(s)))
	r.Method(http.MethodGet, "/ping", gate(handleHealth(s)))
	r.Method(http.MethodPost, "/ping", gate(handleHealth(s)))
	r.Method(http.MethodGet, "/version", handleVersion(s.version))
	r.Method(http.MethodPost, "/tokenize", handleTokenize(s))
	r.Method(http.MethodPost, "/detokenize", handleDetokenize(s))
	r.Method(http.MethodGet, "/load", handleLoad(s))
	r.Method(http.MethodGet, "/metrics", handleMetrics(s.metrics))
	if s.opts.HTTP.DevMode {
		r.Method(http.MethodPost, "/reset_prefix_cache", handleResetPrefixCache(s))
	}
	if s.adapters != nil && s.opts.LoRA.RuntimeUpdating {
		// Like vLLM, the routes exist only when runtime updating is allowed.
		r.Method(http.MethodPost, "/v1/load_lora_adapter", handleLoadAdapter(s))
		r.Method(http.MethodPost, "/v1/unload_lora_adapter", handleUnloadAdapter(s))
	}
	if s.side != nil {
		r.Handle("/kv_transfer/*", s.side) // disaggregation side channel (internal/kvtransfer)
	}
	s.mountAdmin(r)
	s.mountSGLang(r)
	s.mountSurfaces(r)
	return r
}
