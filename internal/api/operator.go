package api

import "net/http"

// Operator switches: an admin (internal/fleet) drains a worker or makes its
// health check fail on purpose. Both are plain flags read per request.

var (
	errDraining = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable,
		Message: "The server is draining and does not accept new requests."}
	errHealthFailing = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable,
		Message: "The engine is not responding."}
)

// SetDraining starts (true) or ends (false) draining: while draining, new
// generation requests answer 503 in the usual error shape and requests
// already admitted run to completion. /health is unaffected.
func (s *Server) SetDraining(draining bool) { s.draining.Store(draining) }

// SetHealthFailing makes /health and /ping answer 503 (true) or go back to
// their normal answer (false).
func (s *Server) SetHealthFailing(failing bool) { s.healthFailing.Store(failing) }

// drainGate refuses new generation requests while draining.
func (s *Server) drainGate(next http.Handler) http.Handler { return s.drainGateIn(next, writeError) }

// drainGateIn is drainGate answering in a surface's error shape.
func (s *Server) drainGateIn(next http.Handler, fail errorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			fail(w, errDraining)
			return
		}
		next.ServeHTTP(w, r)
	})
}
