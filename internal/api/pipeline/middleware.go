package pipeline

import (
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// RecoverPanics turns a handler panic into a logged 500
// InternalServerError rather than a dropped connection. Streaming handlers
// recover mid-stream panics themselves (they know the headers are gone) and answer with an SSE error
// event instead. http.ErrAbortHandler keeps its meaning.
func (s *Server) RecoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
				"panic", v, "stack", string(debug.Stack()))
			wire.WriteError(w, wire.ErrInternal)
		}()
		next.ServeHTTP(w, r)
	})
}

// Authenticate requires a configured API key on paths starting with /v1
// and on the other endpoints that use the model or change state
// (guardedPath; vLLM itself authenticates only its OpenAI routes). OPTIONS
// never reaches it (cors answers it).
func (s *Server) Authenticate(next http.Handler) http.Handler {
	if len(s.apiKeys) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.guardedPath(r.URL.Path) && !s.authorized(r) {
			if r.ContentLength != 0 {
				// The body is never read: closing keeps net/http from
				// waiting for (and discarding) what the client sends.
				w.Header().Set("Connection", "close")
			}
			httperr.Write(w, http.StatusUnauthorized, wire.BodyUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardedPath reports whether --api-key protects a path: /v1/*, /tokenize,
// /detokenize and /reset_prefix_cache, the disaggregation side channel
// (/kv_transfer/*) when mounted, and in SGLang mode SGLang's native
// routes (sglangGuarded). Probes (/health, /ping, /load, /metrics,
// /version) stay open; /admin/faults has its own key.
func (s *Server) guardedPath(p string) bool {
	switch p {
	case "/tokenize", "/detokenize", "/reset_prefix_cache":
		return true
	}
	if s.side != nil && strings.HasPrefix(p, "/kv_transfer/") {
		// The side channel guards itself too (kvtransfer.GuardedHandler),
		// but only after ReadBodies has read the body; refusing here
		// answers from the headers.
		return true
	}
	if s.opts.SGLang != nil && sglangGuarded[p] {
		return true
	}
	return strings.HasPrefix(p, "/v1")
}

// sglangGuarded are the SGLang-mode routes behind --api-key. SGLang's
// add_api_key_middleware lets through only OPTIONS and paths starting with
// /health or /metrics, so /generate, the cache flush and the info routes
// need the key; /health_generate stays open as a probe.
var sglangGuarded = map[string]bool{
	"/generate": true, "/flush_cache": true, "/get_server_info": true,
	"/server_info": true, "/get_model_info": true,
}

// StartupGate answers 503 while the startup time runs, as a real server does
// while it loads the model.
func (s *Server) StartupGate(next http.Handler) http.Handler {
	return s.StartupGateIn(next, wire.WriteError)
}

// StartupGateIn is StartupGate answering in a surface's error shape.
func (s *Server) StartupGateIn(next http.Handler, fail ErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			fail(w, wire.ErrStartingUp)
			return
		}
		next.ServeHTTP(w, r)
	})
}
