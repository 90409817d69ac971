// Package vllm serves vLLM's gRPC engine protocol, vllm.grpc.engine.VllmEngine
// (proto/vllm/vllm_engine.proto, verbatim from vLLM; docs/grpc.md), on the
// shared generation pipeline: token ids in, token ids out, with the same
// engine, queue, KV cache, events, metrics, faults and timing as the HTTP
// API. Its answers follow vLLM's servicer (vllm/entrypoints/grpc_server.py).
package vllm

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// Service is the VllmEngine service of one worker instance.
type Service struct {
	vllmpb.UnimplementedVllmEngineServer
	d grpcfront.Deps
	s *pipeline.Server
	// basis gives Embed the vectors /v1/embeddings gives.
	basis embeddings.EmbeddingsSurface

	// running maps the request ids of the Generate calls in flight to
	// their abort functions (Abort); ids are the clients', so several
	// calls may share one.
	mu      sync.Mutex
	running map[string]map[*call]struct{}
}

// New returns the service over d's pipeline.
func New(d grpcfront.Deps) *Service {
	o := d.Server.Opts()
	return &Service{d: d, s: d.Server, running: map[string]map[*call]struct{}{},
		basis: embeddings.EmbeddingsSurface{Basis: embeddings.NewEmbedBasis(o.Seed, o.EmbeddingDim)}}
}

// Register adds the service to a gRPC server.
func (v *Service) Register(r grpc.ServiceRegistrar) { vllmpb.RegisterVllmEngineServer(r, v) }

// call is one Generate in flight, as Abort finds it.
type call struct {
	abort context.CancelCauseFunc
}

func (v *Service) track(id string, c *call) {
	v.mu.Lock()
	defer v.mu.Unlock()
	set := v.running[id]
	if set == nil {
		set = map[*call]struct{}{}
		v.running[id] = set
	}
	set[c] = struct{}{}
}

func (v *Service) untrack(id string, c *call) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.running[id], c)
	if len(v.running[id]) == 0 {
		delete(v.running, id)
	}
}

// abortIDs aborts every call running under one of ids.
func (v *Service) abortIDs(ids []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, id := range ids {
		for c := range v.running[id] {
			c.abort(errAborted)
		}
	}
}

// Metadata keys that steer a call as the HTTP headers of the same names
// steer an HTTP request (docs/grpc.md). vLLM's servicer reads no metadata;
// these are the mock's own.
const (
	mdRequestID = "x-request-id"
	mdRank      = "x-data-parallel-rank"
)

// metaOf is the pipeline's Meta of a call: its context and metadata.
func metaOf(ctx context.Context) pipeline.Meta {
	m := pipeline.Meta{Ctx: ctx}
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return m
	}
	if v := md.Get(mdRequestID); len(v) > 0 {
		m.RequestID = v[0]
	}
	if v := md.Get(strings.ToLower(faults.HeaderName)); len(v) > 0 {
		m.Fault = v[0]
	}
	m.Rank = md.Get(mdRank)
	return m
}
