package sglang

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// call is one Generate in flight, for Abort.
type call struct {
	cancel context.CancelCauseFunc
}

// errAborted is the cancellation cause of a call ended by Abort.
var errAborted = errors.New("Request aborted")

// Generate serves one generation: a chunk per engine pass that delivered
// tokens (stream = true) and a GenerateComplete per choice, or only the
// GenerateComplete (stream = false), as SGLang's servicer answers.
// Errors end the call with a status: the pipeline's 400s as
// INVALID_ARGUMENT, 503s as UNAVAILABLE, the rest as INTERNAL (SGLang's
// abort_code_from_output); Abort ends it with INTERNAL "Request aborted",
// as SGLang reports an abort the scheduler confirms.
func (sv *Service) Generate(req *pb.GenerateRequest, stream pb.SglangScheduler_GenerateServer) error {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	if e := sv.gate(); e != nil {
		return grpcfront.Status(e)
	}
	if err := grpcfront.NotGenerating(sv.s); err != nil {
		return err
	}
	opts := sv.s.Opts()
	in, e := genInput(req, sv.s.Tokenizer().VocabSize(), opts.Model.MaxModelLen, sv.maxReqInputLen())
	if e != nil {
		return grpcfront.Status(e)
	}
	if req.GetLoraId() != "" {
		return status.Error(codes.InvalidArgument, "lora_id "+strconv.Quote(req.GetLoraId())+": LoRA adapters are not served with --engine-type sglang")
	}
	m := callMeta(ctx, req)
	gr, e := sv.s.BuildGenerateMeta(in, m)
	if e != nil {
		return grpcfront.Status(e)
	}
	c, e := sv.s.StartCall(m, gr)
	if e != nil || c == nil { // nil, nil: the client left during a delay fault
		return sv.endStatus(ctx, e)
	}
	defer c.Close()
	id := req.GetRequestId()
	if id != "" {
		t := sv.track(id, cancel)
		defer sv.untrack(id, t)
	}
	n := len(c.Ch)
	g := &generation{sv: sv, c: c, stream: stream, id: id, streaming: req.GetStream(),
		sent: make([]int, n), last: make([]int, n), finished: make([]bool, n)}
	return g.run(ctx)
}

// generation is the state of one Generate call.
type generation struct {
	sv        *Service
	c         *pipeline.Call
	stream    pb.SglangScheduler_GenerateServer
	id        string
	streaming bool
	sent      []int  // tokens of each choice already sent in chunks
	last      []int  // where each choice's latest chunk began
	finished  []bool // choices whose GenerateComplete was sent
	delivered int    // tokens received over all choices (mid-stream faults)
}

func (g *generation) run(ctx context.Context) error {
	fault := g.c.MidStream
	if fault.Kind != "" && fault.After == 0 {
		if err := g.strike(ctx, fault); err != nil {
			return err
		}
		fault = faults.Fault{}
	}
	for {
		_, more, e := g.c.Next(ctx)
		if e != nil {
			return g.sv.endStatus(ctx, e)
		}
		if !more {
			if ctx.Err() != nil {
				return g.sv.endStatus(ctx, nil)
			}
			break
		}
		g.sv.lastReceive.Store(time.Now().UnixNano())
		if !g.streaming {
			continue
		}
		if fault.Kind != "" {
			// Send up to the fault's token, then carry it out.
			if err := g.sendChunks(fault.After - g.delivered); err != nil {
				return err
			}
			if g.delivered < fault.After {
				continue
			}
			if err := g.strike(ctx, fault); err != nil {
				return err
			}
			fault = faults.Fault{}
		}
		if err := g.sendChunks(-1); err != nil {
			return err
		}
	}
	if !g.streaming {
		if fault.Kind != "" {
			// Non-streaming: the fault strikes before the answer.
			if err := g.strike(ctx, fault); err != nil {
				return err
			}
		}
		for i := range g.c.Ch {
			if err := g.stream.Send(g.complete(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendChunks sends each choice's new tokens as one chunk, at most limit
// tokens in all (limit < 0: no limit), and the GenerateComplete of each
// choice whose tokens have all been sent and that finished.
func (g *generation) sendChunks(limit int) error {
	for i := range g.c.Ch {
		ch := &g.c.Ch[i]
		if g.finished[i] {
			continue
		}
		n := min(ch.N, len(ch.Plan.IDs))
		if limit >= 0 {
			n = min(n, g.sent[i]+limit)
		}
		if n > g.sent[i] {
			if err := g.stream.Send(g.chunk(i, g.sent[i], n)); err != nil {
				return err
			}
			if limit >= 0 {
				limit -= n - g.sent[i]
			}
			g.delivered += n - g.sent[i]
			g.last[i] = g.sent[i]
			g.sent[i] = n
		}
		if ch.Done && g.sent[i] == min(ch.N, len(ch.Plan.IDs)) {
			g.finished[i] = true
			if err := g.stream.Send(g.complete(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *generation) chunk(i, from, to int) *pb.GenerateResponse {
	ch := &g.c.Ch[i]
	c := &pb.GenerateStreamChunk{
		TokenIds:         append([]uint32(nil), ch.Plan.IDs[from:to]...),
		PromptTokens:     uint32(len(g.c.G.Prompts[ch.Prompt].IDs)),
		CompletionTokens: uint32(to),
		Index:            uint32(i),
	}
	if ch.Done {
		c.CachedTokens = uint32(ch.Fin.CachedTokens)
	}
	return &pb.GenerateResponse{RequestId: g.id, Response: &pb.GenerateResponse_Chunk{Chunk: c}}
}

// complete is choice i's GenerateComplete. A stream's carries the last
// chunk's tokens as output_ids, a non-streamed answer all of them, as
// SGLang's servicer fills it.
func (g *generation) complete(i int) *pb.GenerateResponse {
	ch := &g.c.Ch[i]
	n := min(ch.N, len(ch.Plan.IDs))
	from := 0
	if g.streaming {
		from = g.last[i]
	}
	reason, stop := ch.Reasons()
	c := &pb.GenerateComplete{
		OutputIds:        append([]uint32(nil), ch.Plan.IDs[from:n]...),
		FinishReason:     finishReason(reason),
		PromptTokens:     uint32(len(g.c.G.Prompts[ch.Prompt].IDs)),
		CompletionTokens: uint32(n),
		CachedTokens:     uint32(ch.Fin.CachedTokens),
		Index:            uint32(i),
	}
	switch stop.Kind {
	case plan.StopTokenID:
		c.MatchedStop = &pb.GenerateComplete_MatchedTokenId{MatchedTokenId: stop.TokenID}
	case plan.StopString:
		c.MatchedStop = &pb.GenerateComplete_MatchedStopStr{MatchedStopStr: stop.String}
	}
	return &pb.GenerateResponse{RequestId: g.id, Response: &pb.GenerateResponse_Complete{Complete: c}}
}

// finishReason is GenerateComplete's OpenAI-style finish_reason.
func finishReason(r engine.FinishReason) string {
	switch r {
	case engine.FinishLength:
		return "length"
	case engine.FinishAbort:
		return "abort"
	}
	return "stop"
}

// strike carries out the call's mid-stream fault (grpcfront.MidStream);
// nil means the stream goes on.
func (g *generation) strike(ctx context.Context, f faults.Fault) error {
	if over, err := grpcfront.MidStream(ctx, f); over {
		if errors.Is(context.Cause(ctx), errAborted) {
			return status.Error(codes.Internal, errAborted.Error())
		}
		return err
	}
	return nil
}

// endStatus is the status of a call that ends before its output did: an
// Abort's INTERNAL "Request aborted" (how SGLang reports an abort its
// scheduler confirms), the pipeline's error e, or the end of the call's
// context (the client's cancellation or deadline, the server's shutdown).
func (sv *Service) endStatus(ctx context.Context, e *wire.APIError) error {
	if errors.Is(context.Cause(ctx), errAborted) {
		return status.Error(codes.Internal, errAborted.Error())
	}
	if e != nil {
		return grpcfront.Status(e)
	}
	return grpcfront.ContextStatus(ctx)
}

// callMeta is what the pipeline reads besides the request: the call's
// context, the x-request-id and x-mocker-fault metadata (the HTTP API's
// headers), and the data-parallel rank (GenerateRequest.data_parallel_rank
// when not 0, proto3's "unset", else the x-data-parallel-rank metadata).
func callMeta(ctx context.Context, req *pb.GenerateRequest) pipeline.Meta {
	md, _ := metadata.FromIncomingContext(ctx)
	m := pipeline.Meta{Ctx: ctx, Rank: md.Get("x-data-parallel-rank")}
	if v := md.Get("x-request-id"); len(v) > 0 {
		m.RequestID = v[0]
	}
	if v := md.Get(strings.ToLower(faults.HeaderName)); len(v) > 0 {
		m.Fault = v[0]
	}
	if r := req.GetDataParallelRank(); r != 0 {
		m.Rank = []string{strconv.Itoa(int(r))}
	}
	return m
}

// track registers a call under its request_id for Abort; a second call
// with the same id replaces the first in the table (SGLang keys its state
// by request id too).
func (sv *Service) track(id string, cancel context.CancelCauseFunc) *call {
	c := &call{cancel: cancel}
	sv.mu.Lock()
	sv.active[id] = c
	sv.mu.Unlock()
	return c
}

// untrack removes the call's entry unless a later call took its id.
func (sv *Service) untrack(id string, c *call) {
	sv.mu.Lock()
	if sv.active[id] == c {
		delete(sv.active, id)
	}
	sv.mu.Unlock()
}

// Abort ends the Generate call with the request id: its sequences are
// cancelled and their KV blocks freed before the engine's next pass.
// Like SGLang's servicer, it answers success whether or not the id was
// running (the scheduler is told either way).
func (sv *Service) Abort(_ context.Context, req *pb.AbortRequest) (*pb.AbortResponse, error) {
	id := req.GetRequestId()
	sv.mu.Lock()
	c := sv.active[id]
	sv.mu.Unlock()
	if c != nil {
		c.cancel(errAborted)
	}
	return &pb.AbortResponse{Success: true, Message: "Request " + id + " aborted"}, nil
}
