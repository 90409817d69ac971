package api

import (
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

// cors puts Access-Control-Allow-Origin on every response and answers every
// OPTIONS request as a CORS preflight (200, empty body), before
// authentication and routing.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "*")
			h.Set("Access-Control-Allow-Headers", "*")
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a handler panic into a logged 500
// InternalServerError rather than a dropped connection. Streaming handlers
// recover mid-stream panics themselves (they know the headers are gone) and answer with an SSE error
// event instead. http.ErrAbortHandler keeps its meaning.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
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
			writeError(w, errInternal)
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate requires a configured API key on paths starting with /v1
// and on the other endpoints that use the model or change state
// (guardedPath; vLLM itself authenticates only its OpenAI routes). OPTIONS
// never reaches it (cors answers it).
func (s *Server) authenticate(next http.Handler) http.Handler {
	if len(s.apiKeys) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if guardedPath(r.URL.Path) && !s.authorized(r) {
			httperr.Write(w, http.StatusUnauthorized, bodyUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardedPath reports whether --api-key protects a path: /v1/*, /tokenize,
// /detokenize and /reset_prefix_cache. Probes (/health, /ping, /load,
// /metrics, /version) stay open; /admin/faults has its own key.
func guardedPath(p string) bool {
	switch p {
	case "/tokenize", "/detokenize", "/reset_prefix_cache":
		return true
	}
	return strings.HasPrefix(p, "/v1")
}

// startupGate answers 503 while the startup time runs, as a real server does
// while it loads the model.
func (s *Server) startupGate(next http.Handler) http.Handler {
	return s.startupGateIn(next, writeError)
}

// startupGateIn is startupGate answering in a surface's error shape.
func (s *Server) startupGateIn(next http.Handler, fail errorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			fail(w, errStartingUp)
			return
		}
		next.ServeHTTP(w, r)
	})
}
