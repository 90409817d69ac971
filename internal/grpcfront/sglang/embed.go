package sglang

import (
	"context"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// Embed computes the embedding of a tokenized input as /v1/embeddings
// does: the input is a prefill-only engine sequence (it queues, costs
// prefill time, fills and reuses the prefix cache, shows in the metrics
// and KV events), and the vector comes from the same seeded basis, so the
// same ids give the same vector over both APIs.
func (sv *Service) Embed(ctx context.Context, req *pb.EmbedRequest) (*pb.EmbedResponse, error) {
	if e := sv.gate(); e != nil {
		return nil, grpcfront.Status(e)
	}
	tok := req.GetTokenized()
	if tok == nil {
		return nil, status.Error(codes.InvalidArgument, "Tokenized input must be provided")
	}
	ids := tok.GetInputIds()
	if len(ids) == 0 {
		return nil, status.Error(codes.InvalidArgument, "input must not be empty")
	}
	vocab := sv.s.Tokenizer().VocabSize()
	for _, id := range ids {
		if int64(id) >= int64(vocab) {
			return nil, status.Errorf(codes.InvalidArgument, "Token id %d is out of vocabulary", id)
		}
	}
	n := sv.s.Opts().Model.MaxModelLen
	if len(ids) > n {
		return nil, status.Errorf(codes.InvalidArgument, "This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", n, len(ids))
	}
	if rej := sv.s.Engines()[0].CheckAdmissible(len(ids), 0); rej != nil {
		return nil, status.Error(codes.InvalidArgument, rej.Message)
	}
	m := pipeline.Meta{Ctx: ctx}
	if r := req.GetDataParallelRank(); r != 0 {
		m.Rank = []string{strconv.Itoa(int(r))}
	}
	g := &pipeline.GenRequest{Rank: -1, N: 1, Model: sv.s.Opts().Model.ServedName(),
		BaseID: input.RequestID("", req.GetRequestId()),
		// M = 0: the engine prefills the input and finishes the sequence
		// without a token.
		Prompts: []pipeline.PromptSpec{{IDs: ids}}}
	if r, e := sv.rank(m.Rank); e != nil {
		return nil, grpcfront.Status(e)
	} else {
		g.Rank = r
	}
	c, e := sv.s.StartCall(m, g)
	if e != nil {
		return nil, sv.endStatus(ctx, e)
	}
	defer c.Close()
	for {
		_, more, e := c.Next(ctx)
		if e != nil {
			return nil, sv.endStatus(ctx, e)
		}
		if !more {
			if ctx.Err() != nil {
				return nil, sv.endStatus(ctx, nil)
			}
			break
		}
	}
	dim := sv.s.Opts().EmbeddingDim
	vec := sv.basis.Embed(make([]float32, dim), ids, dim)
	return &pb.EmbedResponse{EmbeddingDim: uint32(dim), Embedding: vec, PromptTokens: uint32(len(ids))}, nil
}

// rank checks a named DP rank (nil: route).
func (sv *Service) rank(vals []string) (int, *wire.APIError) {
	if len(vals) == 0 {
		return -1, nil
	}
	r, err := strconv.Atoi(vals[0])
	if err != nil || r < 0 || r >= len(sv.s.Engines()) {
		return -1, wire.ErrInvalid("", "data_parallel_rank %s is out of range [0, %d)", vals[0], len(sv.s.Engines()))
	}
	return r, nil
}
