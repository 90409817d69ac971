package pipeline

import (
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// Operator switches: an admin (internal/fleet) drains a worker or makes its
// health check fail on purpose. Both are plain flags read per request.

var (
	errDraining = &wire.APIError{Status: http.StatusServiceUnavailable, Type: wire.TypeUnavailable,
		Message: "The server is draining and does not accept new requests."}
	ErrHealthFailing = &wire.APIError{Status: http.StatusServiceUnavailable, Type: wire.TypeUnavailable,
		Message: "The engine is not responding."}
)

// SetDraining starts (true) or ends (false) draining: while draining, new
// generation requests answer 503 in the usual error shape and requests
// already admitted run to completion. /health is unaffected.
func (s *Server) SetDraining(draining bool) { s.draining.Store(draining) }

// SetHealthFailing makes /health and /ping answer 503 (true) or go back to
// their normal answer (false).
func (s *Server) SetHealthFailing(failing bool) { s.healthFailing.Store(failing) }

// DrainGate refuses new generation requests while draining.
func (s *Server) DrainGate(next http.Handler) http.Handler {
	return s.DrainGateIn(next, wire.WriteError)
}

// DrainGateIn is DrainGate answering in a surface's error shape.
func (s *Server) DrainGateIn(next http.Handler, fail ErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			fail(w, errDraining)
			return
		}
		next.ServeHTTP(w, r)
	})
}
