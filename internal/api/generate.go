package api

import (
	"context"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// ErrShuttingDown is the cancellation cause the server owner gives the
// requests' base context when the graceful-shutdown wait is over: handlers
// then answer 503 (or a mid-stream error event) instead of assuming the
// client left.
var ErrShuttingDown = errors.New("server shutting down")

// handleGenerate serves POST /v1/chat/completions (chat) and
// POST /v1/completions.
func handleGenerate(s *Server, chat bool) http.Handler {
	return handleSurface(s, openAISurface{chat: chat})
}

// surface is one HTTP API served by the shared generation path: how a
// decoded body becomes a genRequest, and how the finished or streaming job
// is written. Everything between (faults, limits, engine submission,
// cancellation) is common to all of them.
type surface interface {
	parse(s *Server, o object, r *http.Request) (*genRequest, *apiError)
	// respond writes the non-streaming body once every sequence finished.
	respond(j *job, w http.ResponseWriter)
	// encoder returns the SSE encoder of a streamed job (nil: chat or
	// completions chunks).
	encoder(j *job) eventEncoder
}

// errorWriter answers an error in a surface's own error shape.
type errorWriter func(w http.ResponseWriter, e *apiError)

// errorShaper is implemented by the surfaces whose errors do not use the
// OpenAI shape of writeError (SGLang's {"error":{"message"}}).
type errorShaper interface {
	writeError(w http.ResponseWriter, e *apiError)
}

// errorWriterOf returns the surface's error writer: its own, else
// writeError.
func errorWriterOf(surf surface) errorWriter {
	if es, ok := surf.(errorShaper); ok {
		return es.writeError
	}
	return writeError
}

// openAISurface is /v1/chat/completions (chat) or /v1/completions.
type openAISurface struct{ chat bool }

func (a openAISurface) parse(s *Server, o object, r *http.Request) (*genRequest, *apiError) {
	return s.parseGenerate(o, r, a.chat)
}

func (a openAISurface) respond(j *job, w http.ResponseWriter) {
	if a.chat {
		encode(w, http.StatusOK, j.chatResponse())
	} else {
		encode(w, http.StatusOK, j.completionResponse())
	}
}

func (openAISurface) encoder(j *job) eventEncoder { return newOpenAIEncoder(j) }

// handleSurface serves one generation endpoint.
func handleSurface(s *Server, surf surface) http.Handler {
	fail := errorWriterOf(surf)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		created := s.now().Unix()
		// The body has been read (readBodies): only now does the request
		// count as load.
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e != nil {
			fail(w, e)
			return
		}
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		g, e := surf.parse(s, o, r)
		if e != nil {
			fail(w, e)
			return
		}
		g.created = created
		if s.opts.HTTP.RequestIDHeaders {
			w.Header().Set("X-Request-Id", g.baseID)
		}
		fault, e := s.decideFault(r, g)
		if e != nil {
			fail(w, e)
			return
		}
		if s.answerStatusFault(w, g, fault, fail) {
			return
		}
		release, e, hit := s.limits.admit(w.Header(), requestCost(g))
		if e != nil {
			s.log.Debug("rate limit", "request_id", g.baseID, "limit", hit)
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
		if g.stream {
			j.stream(w, r, surf.encoder(j))
			return
		}
		if j.collect(w, r) {
			surf.respond(j, w)
		}
	})
}

// job is one submitted generation request: its engine sequences (one per
// prompt × choice, all on one rank, sharing one Output) and what arrived.
type job struct {
	s    *Server
	g    *genRequest
	rank int
	eng  *engine.Engine
	out  *engine.Output
	reqs []engine.Request
	ch   []choice

	remaining  int // sequences without a terminal item
	completion int // tokens received over all choices
	items      []engine.OutputItem
	rejected   int // index+1 of a choice the engine rejected

	fault faults.Fault // a mid-stream fault to carry out (Kind "" = none)
	fail  errorWriter  // answers errors in the surface's shape

	// Disaggregated prefill: the bootstrap room and, once the blocks are
	// held, the response's kv_transfer_params.
	room     uint64
	kvParams *kvTransferParams
}

// choice is the state of one engine sequence.
type choice struct {
	prompt int // index into genRequest.prompts
	plan   plan.Result
	calls  *choiceCalls // the planned tool calls; nil = text
	n      int          // tokens received
	done   bool
	fin    engine.Finished

	// Streaming state.
	started bool   // chat: role chunk written; completions: first chunk written
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
func (s *Server) submit(ctx context.Context, g *genRequest) (*job, *apiError) {
	rank := g.rank
	if rank < 0 {
		rank = s.pickRank()
	}
	eng := s.engines[rank]
	total := len(g.prompts) * g.n
	j := &job{s: s, g: g, rank: rank, eng: eng, out: engine.NewOutput(), fail: writeError,
		reqs: make([]engine.Request, total), ch: make([]choice, total)}
	arrival := eng.Clock().Now()
	base := s.planParams(g)
	label := "cmpl-" + g.baseID // the response id, for inspectors (the live UI)
	if g.chat {
		label = "chatcmpl-" + g.baseID
	}
	for pi := range g.prompts {
		ps := &g.prompts[pi]
		seed := plan.RequestSeed(g.seed, s.opts.Seed, ps.ids)
		for c := range g.n {
			idx := pi*g.n + c
			p := base
			p.Seed, p.Choice, p.MaxTokens = seed, c, ps.m
			if g.pd.role == pdPrefill {
				// A prefill computes the prompt and samples one token.
				p.MaxTokens, p.MinTokens = 1, min(p.MinTokens, 1)
			}
			res, calls := s.planChoice(g, p, ps.ids)
			j.ch[idx] = choice{prompt: pi, plan: res, calls: calls}
			j.reqs[idx] = engine.Request{
				ID:              engine.NewRequestID(),
				Prompt:          ps.ids,
				PlannedOutput:   res.IDs,
				FinishReason:    res.FinishReason,
				MaxOutputTokens: ps.m,
				Priority:        g.priority,
				ArrivalTime:     arrival,
				CacheSalt:       g.cacheSalt,
				Adapter:         g.adapter,
				Choice:          idx,
				Label:           label,
				Out:             j.out,
			}
		}
	}
	switch g.pd.role {
	case pdPrefill:
		s.preparePrefill(j)
	case pdDecode:
		if e := s.prepareDecode(ctx, j); e != nil {
			return nil, e
		}
	}
	s.dispatched(rank, total)
	for i := range j.reqs {
		if err := eng.Submit(&j.reqs[i]); err != nil {
			for k := range i {
				eng.Cancel(j.reqs[k].ID)
			}
			s.abandonPD(j)
			s.finished(rank, total)
			if s.dead.Load() > 0 {
				return nil, errEngineDead
			}
			return nil, errShutdown
		}
	}
	j.remaining = total
	return j, nil
}

// release cancels every sequence still running (client gone, write failed,
// shutdown, error) and reports the request to the observer.
func (j *job) release() {
	if j.g.pd.role == pdPrefill && j.remaining > 0 {
		j.s.kvt.Abandon(j.pdRequestID())
	}
	if j.remaining > 0 {
		for i := range j.ch {
			if !j.ch[i].done {
				j.eng.Cancel(j.reqs[i].ID)
			}
		}
		j.s.finished(j.rank, j.remaining)
		j.remaining = 0
	}
	if obs := j.s.reqObs; obs != nil {
		maxGen := 0
		for i := range j.ch {
			maxGen = max(maxGen, j.ch[i].n)
		}
		obs.ObserveRequest(j.rank, j.g.n, j.g.maxEffective, maxGen)
	}
}

// record applies one output item to its choice's bookkeeping and returns
// the choice. Tokens beyond the plan (never produced by the engine) are
// counted but otherwise ignored.
func (j *job) record(it *engine.OutputItem) *choice {
	ch := &j.ch[it.Choice]
	if it.Final {
		if !ch.done {
			ch.done = true
			ch.fin = it.Finished
			if j.g.pd.role == pdPrefill {
				j.noteHandoff(&ch.fin)
			}
			j.remaining--
			j.s.finished(j.rank, 1)
			if it.Finished.Rejection != nil && j.rejected == 0 {
				j.rejected = it.Choice + 1
			}
		}
		return ch
	}
	ch.n++
	j.completion++
	return ch
}

// rejectionError is the answer to an engine-level rejection (normally
// caught before submission by the same rule, Engine.CheckAdmissible, in
// checkCapacity).
func (j *job) rejectionError() *apiError {
	return errInvalid("", "%s", j.ch[j.rejected-1].fin.Rejection.Message)
}

// ctxError maps the end of the request context to an answer: nil when the
// client left, 503 when the server is shutting down.
func ctxError(ctx context.Context) *apiError {
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return errShutdown
	}
	return nil
}

// reasons returns the choice's finish_reason and stop_reason: the planned
// stop reason applies only when the engine delivered the whole plan.
func (ch *choice) reasons() (engine.FinishReason, plan.StopReason) {
	reason := ch.fin.Reason
	if reason == "" {
		reason = engine.FinishLength
	}
	if reason == ch.plan.FinishReason && ch.n >= len(ch.plan.IDs) {
		return reason, ch.plan.StopReason
	}
	return reason, plan.StopReason{}
}

// await records everything the sequences deliver until each has its
// terminal item. It returns false when the request context ended first,
// with the answer to give (nil when the client left).
func (j *job) await(ctx context.Context) (bool, *apiError) {
	for j.remaining > 0 {
		select {
		case <-j.out.Ready():
			j.items = j.out.Drain(j.items)
			for i := range j.items {
				j.record(&j.items[i])
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
func (j *job) collect(w http.ResponseWriter, r *http.Request) bool {
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

// usage of the whole request: prompts counted once each, completions over
// all choices.
func (j *job) usage() usage {
	p := 0
	for i := range j.g.prompts {
		p += len(j.g.prompts[i].ids)
	}
	u := usage{PromptTokens: p, TotalTokens: p + j.completion, CompletionTokens: j.completion}
	if j.s.opts.HTTP.PromptTokensDetails {
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: j.ch[0].fin.CachedTokens}
	}
	return u
}

func (j *job) chatResponse() *chatResponse {
	g := j.g
	resp := &chatResponse{
		ID:      "chatcmpl-" + g.baseID,
		Object:  "chat.completion",
		Created: g.created,
		Model:   g.model,
		Choices: make([]chatChoice, len(j.ch)),
		Usage:   j.usage(),

		KVTransferParams: j.kvParams,
	}
	if g.returnIDs {
		resp.PromptTokenIDs = g.prompts[0].ids
	}
	lp := j.logprobRenderer()
	for i := range j.ch {
		ch := &j.ch[i]
		reasoning, content := ch.plan.Texts(ch.n)
		msg := chatMessage{Content: content, ReasoningKey: string(j.s.opts.Generation.ReasoningField)}
		if j.s.opts.Generation.Reasoning != nil && reasoning != "" {
			msg.Reasoning = &reasoning
		}
		finish, stop := ch.reasons()
		if ch.calls != nil {
			out := ch.calls.result(ch)
			msg.ToolCalls, finish = out.toolCalls, out.finish
			msg.Content, msg.ContentNull = "", out.content == nil
			if out.content != nil {
				msg.Content = *out.content
			}
		}
		c := chatChoice{Index: i, Message: msg, FinishReason: finish, StopReason: stop}
		ids := ch.plan.IDs[:min(ch.n, len(ch.plan.IDs))]
		if g.logprobs {
			c.Logprobs = lp.appendChatList(nil, ids)
		}
		if g.returnIDs {
			c.TokenIDs = appendUint32s(nil, ids)
		}
		resp.Choices[i] = c
	}
	return resp
}

func (j *job) completionResponse() *completionResponse {
	g := j.g
	resp := &completionResponse{
		ID:      "cmpl-" + g.baseID,
		Object:  "text_completion",
		Created: g.created,
		Model:   g.model,
		Choices: make([]completionChoice, len(j.ch)),
		Usage:   j.usage(),

		KVTransferParams: j.kvParams,
	}
	lp := j.logprobRenderer()
	var text []byte
	for i := range j.ch {
		ch := &j.ch[i]
		ps := &g.prompts[ch.prompt]
		text = text[:0]
		offset := 0
		if g.echo {
			text = append(text, ps.text...)
			offset = utf8.RuneCountInString(ps.text)
		}
		text = ch.plan.AppendText(text, ch.n)
		finish, stop := ch.reasons()
		c := completionChoice{Index: i, Text: string(text), FinishReason: finish, StopReason: stop}
		ids := ch.plan.IDs[:min(ch.n, len(ch.plan.IDs))]
		if g.logprobs {
			c.Logprobs = lp.appendCompletionLists(nil, &ch.plan, ids, offset)
		}
		if g.returnIDs {
			c.PromptTokenIDs = ps.ids
			c.TokenIDs = appendUint32s(nil, ids)
		}
		resp.Choices[i] = c
	}
	return resp
}
