package pipeline

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/ratelimit"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/faults"
)

// decideFault asks the injector for the request's fault (in arrival order)
// and logs and counts it. A malformed fault header that the server allows
// is a 400.
func (s *Server) decideFault(r *http.Request, g *GenRequest) (faults.Fault, *wire.APIError) {
	return s.decideFaultValue(r.Header.Get(faults.HeaderName), g)
}

// decideFaultValue is decideFault of the fault header's value.
func (s *Server) decideFaultValue(header string, g *GenRequest) (faults.Fault, *wire.APIError) {
	if s.faults == nil {
		return faults.Fault{Kind: faults.None}, nil
	}
	d, err := s.faults.Decide(header)
	if err != nil {
		return faults.Fault{}, wire.ErrInvalid("", "%v", err)
	}
	if d.HeaderIgnored {
		s.log.Debug("fault header ignored (--allow-fault-headers is off)", "request_id", g.BaseID)
	}
	if !d.Injected() {
		return faults.Fault{Kind: faults.None}, nil
	}
	s.log.Debug("injecting fault", "request_id", g.BaseID, "fault", d.Fault.String(),
		"source", d.Source, "arrival", d.Index)
	s.countFault(string(d.Fault.Kind))
	return d.Fault, nil
}

func (s *Server) countFault(kind string) {
	if s.faultObs != nil {
		s.faultObs.ObserveInjectedFault(kind)
	}
}

// answerStatusFault answers the faults that replace the whole response
// with an error status (before the provider-style limits, which they do
// not use up). It returns true when the request has been answered.
func (s *Server) answerStatusFault(w http.ResponseWriter, g *GenRequest, f faults.Fault, fail ErrorWriter) bool {
	e := s.statusFault(g, f)
	if e == nil {
		return false
	}
	if f.Kind == faults.RateLimit || f.Kind == faults.Unavailable {
		ratelimit.SetRetryAfter(w.Header(), f.Duration)
	}
	fail(w, e)
	return true
}

// statusFault is the error answer of a fault that replaces the whole
// response (nil for the other faults).
func (s *Server) statusFault(g *GenRequest, f faults.Fault) *wire.APIError {
	switch f.Kind {
	case faults.RateLimit:
		return &wire.APIError{Status: http.StatusTooManyRequests, Type: wire.TypeRateLimit,
			Message: "Rate limit reached (injected fault). Please retry after the time in Retry-After."}
	case faults.ServerError:
		return &wire.APIError{Status: http.StatusInternalServerError, Type: wire.TypeInternal,
			Message: "Internal Server Error (injected fault)"}
	case faults.Unavailable:
		return &wire.APIError{Status: http.StatusServiceUnavailable, Type: wire.TypeUnavailable,
			Message: "The server is temporarily unavailable (injected fault)."}
	case faults.ContextLength:
		ps := &g.Prompts[0]
		return contextLengthError(s.opts.Model.MaxModelLen, ps.M, len(ps.IDs), true)
	case faults.InvalidAPIKey:
		return &wire.APIError{Status: http.StatusUnauthorized, Type: wire.TypeUnauthorized,
			Message: "Incorrect API key provided (injected fault)."}
	case faults.InvalidRequest:
		return &wire.APIError{Status: http.StatusBadRequest, Type: wire.TypeBadRequestError,
			Message: "Invalid request: missing required parameter 'model' (injected fault).", Param: "model"}
	case faults.ModelNotFound:
		return &wire.APIError{Status: http.StatusNotFound, Type: wire.TypeNotFound,
			Message: "The model `" + g.Model + "-nonexistent` does not exist (injected fault).", Param: "model"}
	}
	return nil
}

// delayFault carries out the faults that hold an admitted request before
// it reaches the engine: timeout (never answered until the client leaves
// or the server shuts down) and slow_first_token (an extra delay). It
// returns true when the request is over.
func delayFault(w http.ResponseWriter, r *http.Request, f faults.Fault, fail ErrorWriter) bool {
	if waitDelayFault(r.Context(), f) {
		return false
	}
	if e := ctxError(r.Context()); e != nil {
		fail(w, e)
	}
	return true
}

// waitDelayFault waits out a timeout or slow_first_token fault; false when
// ctx ended first (a timeout fault always ends that way).
func waitDelayFault(ctx context.Context, f faults.Fault) bool {
	switch f.Kind {
	case faults.Timeout:
		<-ctx.Done()
		return false
	case faults.SlowFirstToken:
		return sleepCtx(ctx, f.Duration)
	}
	return true
}

// sleepCtx waits d or until ctx ends; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// resetConnection ends the request with a TCP reset (RST instead of FIN):
// linger 0, then close. Without a hijackable TCP connection (tests with a
// recorder) it aborts the handler, which closes the connection.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	c := conn
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// respondFault carries out a mid-stream fault on a non-streaming request,
// once the engine work is done: stall delays the response, stream_error
// answers 500, truncate drops the connection without a response, reset
// resets it. It returns true when the request has been answered.
func (j *Job) respondFault(w http.ResponseWriter, r *http.Request) bool {
	switch f := j.fault; f.Kind {
	case faults.Stall:
		sleepCtx(r.Context(), f.Duration)
		return false
	case faults.StreamError:
		j.fail(w, wire.ErrInternal)
	case faults.Truncate:
		panic(http.ErrAbortHandler)
	case faults.Reset:
		resetConnection(w)
	default:
		return false
	}
	return true
}

// MountAdmin adds /admin/faults (GET, PUT, POST) when an admin key is set:
// the run-time failure settings, guarded by the admin key (not the API
// key). Without an admin key the route does not exist (404).
func (s *Server) MountAdmin(r interface {
	Method(method, pattern string, h http.Handler)
}) {
	if s.opts.HTTP.AdminKey == "" || s.faults == nil {
		return
	}
	h := faults.NewAdminHandler(s.faults, s.opts.HTTP.AdminKey)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost} {
		r.Method(m, "/admin/faults", h)
	}
}
