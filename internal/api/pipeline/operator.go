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

// Admission is the answer a new generation request gets at the gates
// before any parsing: 503 while the startup time runs (StartupGate) or
// while draining (DrainGate); nil when it may proceed. For front ends
// that are not HTTP handlers (gRPC).
func (s *Server) Admission() *wire.APIError {
	switch {
	case !s.ready.Load():
		return wire.ErrStartingUp
	case s.draining.Load():
		return errDraining
	}
	return nil
}
