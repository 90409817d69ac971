package vllm

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// errAborted is the cancellation cause of a Generate ended by Abort.
var errAborted = errors.New("aborted by the Abort RPC")

// Generate serves one generation as vLLM's servicer does: with stream
// set, one GenerateStreamChunk per engine delivery with the new token ids
// (vLLM's DELTA output kind), the last one followed by a GenerateComplete
// that repeats that last delta; without it, one GenerateComplete with
// every output id. Like the servicer it reports the first sample
// (outputs[0]) of an n > 1 request, whose other samples still run on the
// engine. A request error is INVALID_ARGUMENT (vLLM's ValueError); Abort
// ends the stream with a GenerateComplete whose finish_reason is "abort".
// When the call ends (client cancel, deadline, Abort) its sequences are
// cancelled and their KV blocks freed at once.
func (v *Service) Generate(req *vllmpb.GenerateRequest, stream grpc.ServerStreamingServer[vllmpb.GenerateResponse]) error {
	if e := v.s.Admission(); e != nil {
		return grpcfront.Status(e)
	}
	if err := grpcfront.NotGenerating(v.s); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	c := &call{abort: cancel}
	v.track(req.GetRequestId(), c)
	defer v.untrack(req.GetRequestId(), c)

	in, e := genInput(req, v.s.Tokenizer().VocabSize())
	if e != nil {
		return grpcfront.Status(e)
	}
	m := metaOf(ctx)
	g, e := v.s.BuildGenerateMeta(in, m)
	if e != nil {
		return grpcfront.Status(e)
	}
	run, e := v.s.StartCall(m, g)
	if e != nil {
		return grpcfront.Status(e)
	}
	if run == nil { // the call ended during an injected delay
		return v.ended(ctx, stream, nil, len(g.Prompts[0].IDs), 0)
	}
	defer run.Close()
	return v.deliver(ctx, stream, run, req.GetStream())
}

// deliver streams choice 0 of a started call until every sequence has
// finished or the call ends.
func (v *Service) deliver(ctx context.Context, stream grpc.ServerStreamingServer[vllmpb.GenerateResponse], run *pipeline.Call, delta bool) error {
	prompt := len(run.G.Prompts[0].IDs)
	ch := &run.Ch[0]
	var (
		out  []uint32 // FINAL_ONLY: every id; DELTA: the ids not sent yet
		sent int      // ids sent (DELTA)
		mid  = run.MidStream
	)
	for {
		items, more, e := run.Next(ctx)
		if e != nil {
			return grpcfront.Status(e)
		}
		if !more {
			if ctx.Err() != nil {
				return v.ended(ctx, stream, out, prompt, ch.Fin.CachedTokens)
			}
			break
		}
		for i := range items {
			if it := &items[i]; it.Choice == 0 && !it.Final {
				out = append(out, it.Token)
			}
		}
		if !delta {
			continue
		}
		if mid.Kind != "" && sent+len(out) >= mid.After {
			// Deliver up to the fault's position, then carry it out.
			if k := mid.After - sent; k > 0 {
				if err := stream.Send(chunk(out[:k], prompt, 0)); err != nil {
					return err
				}
				out = append(out[:0], out[k:]...)
				sent += k
			}
			if over, err := grpcfront.MidStream(ctx, mid); over {
				return err
			}
			mid.Kind = ""
		}
		// The planned-last token waits for its sequence's terminal item,
		// so that it travels with the complete message, as vLLM's last
		// output carries its finish.
		if len(out) > 0 && !ch.Done && ch.N < len(ch.Plan.IDs) {
			if err := stream.Send(chunk(out, prompt, 0)); err != nil {
				return err
			}
			sent += len(out)
			out = out[:0]
		}
	}
	// Every sample has finished: vLLM's last output. Without streaming, a
	// mid-stream fault strikes now, as on the HTTP API's non-streaming
	// answers.
	if mid.Kind != "" {
		if over, err := grpcfront.MidStream(ctx, mid); over {
			return err
		}
	}
	reason, _ := ch.Reasons()
	cached := ch.Fin.CachedTokens
	if delta {
		if err := stream.Send(chunk(out, prompt, cached)); err != nil {
			return err
		}
	}
	return stream.Send(complete(out, string(reason), prompt, cached))
}

// ended answers a call whose context ended before its sequences finished:
// after Abort, vLLM's final output (finish_reason "abort") with the ids
// not sent yet; otherwise the client's cancellation or deadline, or
// UNAVAILABLE when the server shuts down.
func (v *Service) ended(ctx context.Context, stream grpc.ServerStreamingServer[vllmpb.GenerateResponse], out []uint32, prompt, cached int) error {
	if !errors.Is(context.Cause(ctx), errAborted) {
		return grpcfront.ContextStatus(ctx)
	}
	return stream.Send(complete(out, string(engine.FinishAbort), prompt, cached))
}

func chunk(ids []uint32, prompt, cached int) *vllmpb.GenerateResponse {
	return &vllmpb.GenerateResponse{Response: &vllmpb.GenerateResponse_Chunk{Chunk: &vllmpb.GenerateStreamChunk{
		TokenIds: ids, PromptTokens: uint32(prompt), CompletionTokens: uint32(len(ids)), CachedTokens: uint32(cached)}}}
}

func complete(ids []uint32, reason string, prompt, cached int) *vllmpb.GenerateResponse {
	return &vllmpb.GenerateResponse{Response: &vllmpb.GenerateResponse_Complete{Complete: &vllmpb.GenerateComplete{
		OutputIds: ids, FinishReason: reason, PromptTokens: uint32(prompt), CompletionTokens: uint32(len(ids)),
		CachedTokens: uint32(cached)}}}
}
