package sglang

import (
	"context"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// NotEmbeddingMessage is SGLang's refusal of an embedding request to a
// generation model (TokenizerManager, a ValueError), given when the mock
// serves the model with --runner generate.
const NotEmbeddingMessage = "This model does not appear to be an embedding model by default. Please add `--is-embedding` when launching the server or try another model."

// Embed computes the embedding of a tokenized input as /v1/embeddings
// does: the input is a prefill-only engine sequence (it queues, costs
// prefill time, fills and reuses the prefix cache, shows in the metrics
// and KV events), and the vector comes from the same seeded basis, so the
// same ids give the same vector over both APIs.
func (sv *Service) Embed(ctx context.Context, req *pb.EmbedRequest) (*pb.EmbedResponse, error) {
	if e := sv.gate(); e != nil {
		return nil, grpcfront.Status(e)
	}
	if err := grpcfront.NotEmbedding(sv.s, NotEmbeddingMessage); err != nil {
		return nil, err
	}
	if req.GetTokenized() == nil {
		return nil, status.Error(codes.InvalidArgument, "Tokenized input must be provided")
	}
	m := pipeline.Meta{Ctx: ctx}
	if r := req.GetDataParallelRank(); r != 0 {
		m.Rank = []string{strconv.Itoa(int(r))}
	}
	g, e := embeddings.TokenRequest(sv.s, m, req.GetTokenized().GetInputIds(), req.GetRequestId())
	if e != nil {
		return nil, grpcfront.Status(e)
	}
	c, e := sv.s.StartCall(m, g)
	if e != nil || c == nil {
		return nil, sv.endStatus(ctx, e)
	}
	defer c.Close()
	for {
		_, more, e := c.Next(ctx)
		if e != nil {
			return nil, sv.endStatus(ctx, e)
		}
		if !more {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, sv.endStatus(ctx, nil)
	}
	vec := sv.basis.Vector(g, 0)
	return &pb.EmbedResponse{EmbeddingDim: uint32(len(vec)), Embedding: vec, PromptTokens: uint32(len(g.Prompts[0].IDs))}, nil
}
