// Package vllm serves vLLM's gRPC engine protocol, vllm.grpc.engine.VllmEngine
// (proto/vllm/vllm_engine.proto, verbatim from vLLM; docs/grpc.md), on the
// shared generation pipeline: token ids in, token ids out, with the same
// engine, queue, KV cache, events, metrics, faults and timing as the HTTP
// API.
package vllm

import (
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"google.golang.org/grpc"
)

// Service is the VllmEngine service of one worker instance.
type Service struct {
	vllmpb.UnimplementedVllmEngineServer
	d grpcfront.Deps
	s *pipeline.Server
}

// New returns the service over d's pipeline.
func New(d grpcfront.Deps) *Service {
	return &Service{d: d, s: d.Server}
}

// Register adds the service to a gRPC server.
func (v *Service) Register(r grpc.ServiceRegistrar) { vllmpb.RegisterVllmEngineServer(r, v) }
