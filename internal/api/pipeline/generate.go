package pipeline

import (
	"context"
	"errors"
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/logprob"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// ErrShuttingDown is the cancellation cause the server owner gives the
// requests' base context when the graceful-shutdown wait is over: handlers
// then answer 503 (or a mid-stream error event) instead of assuming the
// client left.
var ErrShuttingDown = errors.New("server shutting down")

// Surface is one HTTP API served by the shared generation path: how a
// decoded body becomes a GenRequest, and how the finished or streaming job
// is written. Everything between (faults, limits, engine submission,
// cancellation) is common to all of them.
type Surface interface {
	Parse(s *Server, o wire.Object, r *http.Request) (*GenRequest, *wire.APIError)
	// Respond writes the non-streaming body once every sequence finished.
	Respond(j *Job, w http.ResponseWriter)
	// Encoder returns the SSE encoder of a streamed job (nil: chat or
	// completions chunks).
	Encoder(j *Job) EventEncoder
}

// ErrorWriter answers an error in a surface's own error shape.
type ErrorWriter func(w http.ResponseWriter, e *wire.APIError)

// ErrorShaper is implemented by the surfaces whose errors do not use the
// OpenAI shape of WriteError (SGLang's {"error":{"message"}}).
type ErrorShaper interface {
	WriteError(w http.ResponseWriter, e *wire.APIError)
}

// errorWriterOf returns the surface's error writer: its own, else
// WriteError.
func errorWriterOf(surf Surface) ErrorWriter {
	if es, ok := surf.(ErrorShaper); ok {
		return es.WriteError
	}
	return wire.WriteError
}

// HandleSurface serves one generation endpoint whose body is one JSON
// object.
func HandleSurface(s *Server, surf Surface) http.Handler {
	return HandleSurfaceBody(s, surf, wire.DecodeBody)
}

// BodyDecoder reads a request's body into the fields a Surface parses,
// refusing a body over limit bytes: wire.DecodeBody for JSON, the audio
// endpoints' multipart reader.
type BodyDecoder func(w http.ResponseWriter, r *http.Request, limit int64) (wire.Object, *wire.APIError)

// HandleSurfaceBody serves one generation endpoint whose body decode
// reads.
func HandleSurfaceBody(s *Server, surf Surface, decode BodyDecoder) http.Handler {
	fail := errorWriterOf(surf)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		created := s.now().Unix()
		// The body has been read (ReadBodies): only now does the request
		// count as load.
		o, e := decode(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e != nil {
			fail(w, e)
			return
		}
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		g, e := surf.Parse(s, o, r)
		if e != nil {
			fail(w, e)
			return
		}
		g.Created = created
		if s.opts.HTTP.RequestIDHeaders {
			w.Header().Set("X-Request-Id", g.BaseID)
		}
		fault, e := s.decideFault(r, g)
		if e != nil {
			fail(w, e)
			return
		}
		if s.answerStatusFault(w, g, fault, fail) {
			return
		}
		release, e, hit := s.limits.Admit(w.Header(), requestCost(g))
		if e != nil {
			s.log.Debug("rate limit", "request_id", g.BaseID, "limit", hit)
			s.countFault(hit)
			fail(w, e)
			return
		}
		defer release()
		if delayFault(w, r, fault, fail) {
			return
		}
		j, e := s.submit(r.Context(), g)
		if e != nil {
			fail(w, e)
			return
		}
		defer j.release()
		j.fail = fail
		if fault.MidStream() {
			j.fault = fault
		}
		if g.Stream {
			j.stream(w, r, surf.Encoder(j))
			return
		}
		if j.collect(w, r) {
			surf.Respond(j, w)
		}
	})
}

// Job is one submitted generation request: its engine sequences (one per
// prompt × choice, all on one rank, sharing one Output) and what arrived.
type Job struct {
	S    *Server
	G    *GenRequest
	rank int
	eng  *engine.Engine
	out  *engine.Output
	Reqs []engine.Request
	Ch   []Choice

	Remaining  int // sequences without a terminal item
	Completion int // tokens received over all choices
	items      []engine.OutputItem
	rejected   int // index+1 of a choice the engine rejected

	fault faults.Fault // a mid-stream fault to carry out (Kind "" = none)
	fail  ErrorWriter  // answers errors in the surface's shape

	// Disaggregated prefill: the bootstrap room and, once the blocks are
	// held, the response's kv_transfer_params.
	room     uint64
	KVParams *disagg.KVTransferParams
}

// Choice is the state of one engine sequence.
type Choice struct {
	Prompt int // index into GenRequest.prompts
	Plan   plan.Result
	Calls  *toolcall.ChoiceCalls // the planned tool calls; nil = text
	N      int                   // tokens received
	Done   bool
	Fin    engine.Finished

	// Streaming state.
	Started bool   // chat: role chunk written; completions: first chunk written
	held    bool   // the planned-last token waits for the terminal item
	heldTok uint32 //
	// heldRun holds the tokens of the pass that delivered the planned-last
	// token when passes are streamed as one chunk (speculative decoding);
	// heldFrom is the position of its first token.
	heldRun  []uint32
	heldFrom int
	offset   int // completions: characters of the choice's text so far
}

// submit plans every choice and submits one engine request per prompt ×
// choice to one DP rank: choices share their prompt's prefix cache only on
// one rank.
func (s *Server) submit(ctx context.Context, g *GenRequest) (*Job, *wire.APIError) {
	rank := g.Rank
	if rank < 0 {
		rank = s.PickRank()
	}
	eng := s.engines[rank]
	total := len(g.Prompts) * g.N
	j := &Job{S: s, G: g, rank: rank, eng: eng, out: engine.NewOutput(), fail: wire.WriteError,
		Reqs: make([]engine.Request, total), Ch: make([]Choice, total)}
	arrival := eng.Clock().Now()
	base := s.PlanParams(g)
	auto := toolcall.AutoPolicy{Probability: s.opts.Tools.CallProbability, AfterResult: s.opts.Tools.AfterResultProbability}
	label := "cmpl-" + g.BaseID // the response id, for inspectors (the live UI)
	if g.Chat {
		label = "chatcmpl-" + g.BaseID
	}
	for pi := range g.Prompts {
		ps := &g.Prompts[pi]
		seed := plan.RequestSeed(g.seed, s.opts.Seed, ps.IDs)
		for c := range g.N {
			idx := pi*g.N + c
			p := base
			p.Seed, p.Choice, p.MaxTokens = seed, c, ps.M
			if g.pd.Role == disagg.PDPrefill {
				// A prefill computes the prompt and samples one token.
				p.MaxTokens, p.MinTokens = 1, min(p.MinTokens, 1)
			}
			res, calls := toolcall.PlanChoice(g.tools, g.structured, p, ps.IDs, auto, s.opts.Tools.Parser)
			if g.echo && calls == nil && g.structured == nil {
				// Echo mode answers with the prompt unless the answer is a
				// tool call or constrained, as llm-d-inference-sim echoes
				// only when it makes no tool calls.
				res = plan.Echo(p, ps.EchoText)
			}
			j.Ch[idx] = Choice{Prompt: pi, Plan: res, Calls: calls}
			j.Reqs[idx] = engine.Request{
				ID:              engine.NewRequestID(),
				Prompt:          ps.IDs,
				MM:              ps.MM,
				MMFLOPs:         ps.MMFLOPs,
				MMWork:          ps.MMWork,
				MMPads:          ps.MMPads,
				PlannedOutput:   res.IDs,
				FinishReason:    res.FinishReason,
				MaxOutputTokens: ps.M,
				Priority:        g.priority,
				ArrivalTime:     arrival,
				CacheSalt:       g.CacheSalt,
				Adapter:         g.adapter,
				Choice:          idx,
				Label:           label,
				Out:             j.out,
			}
		}
	}
	switch g.pd.Role {
	case disagg.PDPrefill:
		s.preparePrefill(j)
	case disagg.PDDecode:
		if e := s.prepareDecode(ctx, j); e != nil {
			return nil, e
		}
	}
	s.Dispatched(rank, total)
	// All sequences in one mailbox step: the choices of one request start
	// in the same pass, as vLLM adds a request's sequences together.
	if err := eng.SubmitAll(j.Reqs); err != nil {
		s.abandonPD(j)
		s.Finished(rank, total)
		if s.dead.Load() > 0 {
			return nil, wire.ErrEngineDead
		}
		return nil, wire.ErrShutdown
	}
	j.Remaining = total
	return j, nil
}

// release cancels every sequence still running (client gone, write failed,
// shutdown, error) and reports the request to the observer.
func (j *Job) release() {
	if j.G.pd.Role == disagg.PDPrefill && j.Remaining > 0 {
		j.S.kvt.Abandon(j.pdRequestID())
	}
	if j.Remaining > 0 {
		for i := range j.Ch {
			if !j.Ch[i].Done {
				j.eng.Cancel(j.Reqs[i].ID)
			}
		}
		j.S.Finished(j.rank, j.Remaining)
		j.Remaining = 0
	}
	if obs := j.S.reqObs; obs != nil {
		maxGen := 0
		for i := range j.Ch {
			maxGen = max(maxGen, j.Ch[i].N)
		}
		obs.ObserveRequest(j.rank, j.G.N, j.G.maxEffective, maxGen)
	}
}

// Record applies one output item to its choice's bookkeeping and returns
// the choice. Tokens beyond the plan (never produced by the engine) are
// counted but otherwise ignored.
func (j *Job) Record(it *engine.OutputItem) *Choice {
	ch := &j.Ch[it.Choice]
	if it.Final {
		if !ch.Done {
			ch.Done = true
			ch.Fin = it.Finished
			if j.G.pd.Role == disagg.PDPrefill {
				j.noteHandoff(&ch.Fin)
			}
			j.Remaining--
			j.S.Finished(j.rank, 1)
			if it.Finished.Rejection != nil && j.rejected == 0 {
				j.rejected = it.Choice + 1
			}
		}
		return ch
	}
	ch.N++
	j.Completion++
	return ch
}

// rejectionError is the answer to an engine-level rejection (normally
// caught before submission by the same rule, Engine.CheckAdmissible, in
// checkCapacity).
func (j *Job) rejectionError() *wire.APIError {
	return wire.ErrInvalid("", "%s", j.Ch[j.rejected-1].Fin.Rejection.Message)
}

// ctxError maps the end of the request context to an answer: nil when the
// client left, 503 when the server is shutting down.
func ctxError(ctx context.Context) *wire.APIError {
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return wire.ErrShutdown
	}
	return nil
}

// Reasons returns the choice's finish_reason and stop_reason: the planned
// stop reason applies only when the engine delivered the whole plan.
func (ch *Choice) Reasons() (engine.FinishReason, plan.StopReason) {
	reason := ch.Fin.Reason
	if reason == "" {
		reason = engine.FinishLength
	}
	if reason == ch.Plan.FinishReason && ch.N >= len(ch.Plan.IDs) {
		return reason, ch.Plan.StopReason
	}
	return reason, plan.StopReason{}
}

// Reason is the choice's finish_reason (Reasons without the stop reason).
func (ch *Choice) Reason() engine.FinishReason {
	r, _ := ch.Reasons()
	return r
}

// await records everything the sequences deliver until each has its
// terminal item. It returns false when the request context ended first,
// with the answer to give (nil when the client left).
func (j *Job) await(ctx context.Context) (bool, *wire.APIError) {
	for j.Remaining > 0 {
		select {
		case <-j.out.Ready():
			j.items = j.out.Drain(j.items)
			for i := range j.items {
				j.Record(&j.items[i])
			}
		case <-ctx.Done():
			return false, ctxError(ctx)
		}
	}
	return true, nil
}

// collect waits for every sequence of a non-streaming request; true means
// the response body is to be written, false that the request has been
// answered (error, fault) or the client left.
func (j *Job) collect(w http.ResponseWriter, r *http.Request) bool {
	if ok, e := j.await(r.Context()); !ok {
		if e != nil {
			j.fail(w, e)
		}
		return false
	}
	if j.rejected > 0 {
		j.fail(w, j.rejectionError())
		return false
	}
	return !j.respondFault(w, r)
}

// requestCost is a request's token cost for tpm: prompt tokens plus the
// effective max tokens of every choice.
func requestCost(g *GenRequest) int {
	cost := 0
	for i := range g.Prompts {
		cost += len(g.Prompts[i].IDs) + g.N*g.Prompts[i].M
	}
	return cost
}

func NewLogprobRenderer(j *Job) *logprob.Renderer {
	return &logprob.Renderer{K: j.G.TopLogprobs, AsIDs: j.G.tokensAsIDs, Tok: j.S.tok}
}
