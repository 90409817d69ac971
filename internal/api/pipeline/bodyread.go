package pipeline

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// ReadBodies reads every request body completely, under a deadline, before
// the route's handler runs: a client that sends headers and then trickles
// its body gets 408 and a closed connection after request_body_timeout, and
// a generation request counts as in flight (GET /load) only once its body
// has arrived. At most max_request_body_bytes+1 bytes are read; the
// handlers' own size check then answers 413.
func (s *Server) ReadBodies(next http.Handler) http.Handler {
	timeout := s.opts.HTTP.RequestBodyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	limit := s.opts.HTTP.MaxRequestBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength > limit {
			// No body, or one the handler refuses (413) from its declared
			// length without reading it.
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		armed := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		body, err := wire.ReadAllSized(io.LimitReader(r.Body, limit+1), r.ContentLength)
		if armed && err == nil {
			// The server's background read (which notices a client that
			// leaves) starts at the body's end and must not inherit the
			// deadline.
			_ = rc.SetReadDeadline(time.Time{})
		}
		if err != nil {
			// The deadline stays passed (or is now passed): after the
			// handler net/http discards up to 256 KiB of unread body
			// before it closes, and would wait for a slow client again.
			_ = rc.SetReadDeadline(time.Now())
			if errors.Is(err, os.ErrDeadlineExceeded) {
				w.Header().Set("Connection", "close")
				wire.WriteError(w, &wire.APIError{Status: http.StatusRequestTimeout, Type: wire.TypeRequestTimeout,
					Message: "The request body was not received within " + strconv.FormatFloat(timeout.Seconds(), 'g', -1, 64) + " s."})
				return
			}
			w.Header().Set("Connection", "close")
			wire.WriteError(w, wire.ErrBadRequest("", "Invalid request body: %v", err))
			return
		}
		r.Body = wire.NewBody(body)
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
