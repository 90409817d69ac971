package pipeline

import (
	"context"
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
)

// Meta is what the pipeline reads from a request besides its body: the
// request's context and the values of the headers that steer it. An HTTP
// request's come from its headers (MetaOf); a front end that does not
// speak HTTP (gRPC) fills them from its own metadata.
type Meta struct {
	// Ctx is the request's context: its end cancels schema compilation,
	// delays and the engine work.
	Ctx context.Context
	// RequestID is the X-Request-Id header's value ("" = none).
	RequestID string
	// Fault is the fault header's value (faults.HeaderName, "" = none).
	Fault string
	// Rank are the X-data-parallel-rank header's values (nil = absent).
	Rank []string
}

// MetaOf returns the Meta of an HTTP request.
func MetaOf(r *http.Request) Meta {
	return Meta{Ctx: r.Context(), RequestID: r.Header.Get("X-Request-Id"),
		Fault: r.Header.Get(faults.HeaderName), Rank: r.Header["X-Data-Parallel-Rank"]}
}

// Call is a generation request of a front end that is not an HTTP surface
// (the gRPC services): the same steps HandleSurface runs between parsing
// and writing — injected faults, provider-style limits, DP routing, engine
// submission — with the output handed to the caller item by item instead
// of being written as SSE. Close must be called once the caller is done;
// it cancels the sequences still running, which frees their KV blocks at
// once, as an HTTP disconnect does.
type Call struct {
	*Job
	// MidStream is the mid-stream fault the caller carries out once
	// MidStream.After tokens have been sent (Kind "" = none; faults.Stall,
	// StreamError, Truncate or Reset).
	MidStream faults.Fault
	release   func() // gives back what the limits admitted
	closed    bool
}

// StartCall runs a built request (BuildGenerateMeta) up to its
// submission: the injected fault is decided (a status fault is returned
// as its error, a timeout or slow_first_token fault waits here), the
// limits admit it and its sequences are submitted to a DP rank's engine.
// m must be the Meta the request was built with. When m.Ctx ends while a
// fault holds the request, there is no call and no error if the client
// left (503 on shutdown).
func (s *Server) StartCall(m Meta, g *GenRequest) (*Call, *wire.APIError) {
	s.inflight.Add(1)
	ok := false
	defer func() {
		if !ok {
			s.inflight.Add(-1)
		}
	}()
	g.Created = s.now().Unix()
	f, e := s.decideFaultValue(m.Fault, g)
	if e != nil {
		return nil, e
	}
	if e := s.statusFault(g, f); e != nil {
		return nil, e
	}
	release, e, hit := s.limits.Admit(http.Header{}, requestCost(g))
	if e != nil {
		s.log.Debug("rate limit", "request_id", g.BaseID, "limit", hit)
		s.countFault(hit)
		return nil, e
	}
	if !waitDelayFault(m.Ctx, f) {
		release()
		return nil, ctxError(m.Ctx)
	}
	j, e := s.submit(m.Ctx, g)
	if e != nil {
		release()
		return nil, e
	}
	ok = true
	c := &Call{Job: j, release: release}
	if f.MidStream() {
		c.MidStream = f
	}
	return c, nil
}

// Next waits for what the engine delivered next and records it (Record):
// the items are valid until the following Next. more is false when every
// sequence had finished before the call, or when ctx ended first (then e
// is the answer to give: 503 on shutdown, nil when the client left). An
// engine rejection of a sequence is returned as e once it arrives.
func (c *Call) Next(ctx context.Context) (items []engine.OutputItem, more bool, e *wire.APIError) {
	j := c.Job
	if j.Remaining == 0 {
		return nil, false, nil
	}
	select {
	case <-j.out.Ready():
	case <-ctx.Done():
		return nil, false, ctxError(ctx)
	}
	j.items = j.out.Drain(j.items)
	for i := range j.items {
		j.Record(&j.items[i])
	}
	if j.rejected > 0 {
		return nil, false, j.rejectionError()
	}
	return j.items, true, nil
}

// Close ends the call: the sequences still running are cancelled (their
// KV blocks are freed at once), the limits are given back and the request
// is reported to the observer. Idempotent.
func (c *Call) Close() {
	if c.closed {
		return
	}
	c.closed = true
	c.Job.release()
	c.release()
	c.S.inflight.Add(-1)
}
