package vllm

import (
	"context"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// NotEmbeddingMessage answers Embed on a model with no embedding task
// (--runner generate, or a classifying pooling model): vLLM's servicer
// answers UNIMPLEMENTED for every Embed, so the words are the mock's.
const NotEmbeddingMessage = "This model does not support embeddings: mocker-server serves /v1/embeddings and Embed under --runner auto or for an embedding pooling model."

// Embed computes the embedding of pre-tokenized input on the engine, as
// /v1/embeddings does for the same ids: a prefill-only sequence (it queues,
// costs prefill time, fills and reuses the prefix cache, shows in metrics
// and KV events), then the seeded vector of --embedding-dim components.
// vLLM's servicer answers UNIMPLEMENTED here; the mock serves the RPC its
// proto defines.
func (v *Service) Embed(ctx context.Context, req *vllmpb.EmbedRequest) (*vllmpb.EmbedResponse, error) {
	if e := v.s.Admission(); e != nil {
		return nil, grpcfront.Status(e)
	}
	if err := grpcfront.NotEmbedding(v.s, NotEmbeddingMessage); err != nil {
		return nil, err
	}
	m := metaOf(ctx)
	g, e := embeddings.TokenRequest(v.s, m, req.GetTokenized().GetInputIds(), req.GetRequestId())
	if e != nil {
		return nil, grpcfront.Status(e)
	}
	run, e := v.s.StartCall(m, g)
	if e != nil {
		return nil, grpcfront.Status(e)
	}
	if run == nil {
		return nil, grpcfront.ContextStatus(ctx)
	}
	defer run.Close()
	for {
		_, more, e := run.Next(ctx)
		if e != nil {
			return nil, grpcfront.Status(e)
		}
		if !more {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, grpcfront.ContextStatus(ctx)
	}
	vec := v.basis.Vector(g, 0)
	return &vllmpb.EmbedResponse{Embedding: vec, PromptTokens: uint32(len(g.Prompts[0].IDs)),
		EmbeddingDim: uint32(len(vec))}, nil
}
