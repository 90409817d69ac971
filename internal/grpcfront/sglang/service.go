// Package sglang serves SGLang's scheduler gRPC service
// (sglang.grpc.scheduler.SglangScheduler, proto/sglang/sglang_scheduler.proto
// as SGLang's model gateway speaks it) on the engines of an
// --engine-type sglang server: every generation goes through the shared
// request pipeline (internal/api/pipeline), so it queues, caches, publishes
// KV events, counts in the metrics and follows the timing model exactly as
// an HTTP /generate request does. Tokens in, tokens out: the gateway
// tokenizes and detokenizes. docs/grpc.md describes the RPCs, the status
// codes and what the mock leaves out.
package sglang

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// Options configure the service: the worker's dependencies and what only
// SGLang's service needs. The zero value of every field but Deps.Server is
// usable.
type Options struct {
	grpcfront.Deps
	// TokenizerDir is the directory of the model's Hugging Face tokenizer
	// files, streamed by GetTokenizer; "" (the built-in tokenizer) makes
	// GetTokenizer answer FAILED_PRECONDITION, as SGLang does without a
	// tokenizer path.
	TokenizerDir string
	// KVEndpoint is the ZMQ PUB endpoint of DP rank 0's KV events, which
	// SubscribeKvEvents bridges as SGLang's servicer does; "" (no
	// --kv-events-config) makes it answer UNIMPLEMENTED, as SGLang does.
	KVEndpoint string
	// KVTopic is the events' ZMQ topic ("" = all).
	KVTopic string
}

// Service implements pb.SglangSchedulerServer.
type Service struct {
	pb.UnimplementedSglangSchedulerServer

	s     *pipeline.Server
	opts  Options
	log   *slog.Logger
	basis embeddings.EmbeddingsSurface // /v1/embeddings' seeded basis

	// active maps a request_id to the cancel function of its Generate
	// call, for Abort.
	mu     sync.Mutex
	active map[string]*call
	// lastReceive is when a Generate last received engine output (Unix
	// ns), GetServerInfo's last_receive_timestamp.
	lastReceive atomic.Int64
}

// New returns the service over o.Server's engines.
func New(o Options) *Service {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	return &Service{s: o.Server, opts: o, log: log,
		basis:  embeddings.EmbeddingsSurface{Basis: embeddings.NewEmbedBasis(o.Server.Opts().Seed, o.Server.Opts().EmbeddingDim)},
		active: make(map[string]*call)}
}

// Register adds the service to a gRPC server.
func (sv *Service) Register(r grpc.ServiceRegistrar) { pb.RegisterSglangSchedulerServer(r, sv) }

// ServiceName is the full name of the service, for reflection and health.
const ServiceName = "sglang.grpc.scheduler.SglangScheduler"

// gate refuses a new generation as the HTTP API's gates do: 503 while
// the startup time runs or while draining.
func (sv *Service) gate() *wire.APIError { return sv.s.Admission() }

// healthTimeout bounds HealthCheck's one-token generation (SGLang's
// SGLANG_HEALTH_CHECK_TIMEOUT default).
const healthTimeout = 20 * time.Second

// HealthCheck runs a one-token generation through the engine, as SGLang's
// servicer does, and answers healthy when it completes.
func (sv *Service) HealthCheck(ctx context.Context, _ *pb.HealthCheckRequest) (*pb.HealthCheckResponse, error) {
	if e := sv.s.Admission(); e != nil { // starting up or draining
		return &pb.HealthCheckResponse{Healthy: false, Message: e.Message}, nil
	}
	if !sv.s.Healthy() {
		return &pb.HealthCheckResponse{Healthy: false, Message: "The engine is not running."}, nil
	}
	switch err := sv.s.HealthProbe(ctx, healthTimeout); {
	case err == nil:
		return &pb.HealthCheckResponse{Healthy: true, Message: "Health check passed"}, nil
	case errors.Is(err, pipeline.ErrProbeTimeout):
		return &pb.HealthCheckResponse{Healthy: false, Message: "Health check timeout after 20s"}, nil
	case errors.Is(err, pipeline.ErrProbeNotRunning):
		return &pb.HealthCheckResponse{Healthy: false, Message: "The engine is not running."}, nil
	default: // ctx ended
		return nil, status.FromContextError(err).Err()
	}
}

// StartProfile is refused: the mock runs no model whose kernels a
// profiler could trace, and a success that wrote no trace would mislead.
func (sv *Service) StartProfile(context.Context, *pb.StartProfileRequest) (*pb.ProfileResponse, error) {
	return nil, status.Error(codes.Unimplemented, "profiling is not available: mocker-server runs no model to profile")
}

// StopProfile is refused like StartProfile.
func (sv *Service) StopProfile(context.Context, *pb.StopProfileRequest) (*pb.ProfileResponse, error) {
	return nil, status.Error(codes.Unimplemented, "profiling is not available: mocker-server runs no model to profile")
}
