package vllm

import (
	"context"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// HealthCheck answers as vLLM's servicer: healthy unless the engine has
// failed. Here an engine fails when its actor died, when a fleet's pause
// made health fail on purpose, or while the startup time runs (the
// upstream server does not listen before its engine is up).
func (v *Service) HealthCheck(context.Context, *vllmpb.HealthCheckRequest) (*vllmpb.HealthCheckResponse, error) {
	if v.s.Healthy() && !v.s.HealthFailing() {
		// vLLM's servicer says "Health", not "Healthy".
		return &vllmpb.HealthCheckResponse{Healthy: true, Message: "Health"}, nil
	}
	return &vllmpb.HealthCheckResponse{Healthy: false, Message: "Engine is not alive"}, nil
}

// Abort aborts the Generate calls running under the given request ids:
// their sequences are cancelled at once (KV freed) and each stream ends
// with finish_reason "abort". Unknown ids are ignored, as vLLM does.
func (v *Service) Abort(_ context.Context, req *vllmpb.AbortRequest) (*vllmpb.AbortResponse, error) {
	v.abortIDs(req.GetRequestIds())
	return &vllmpb.AbortResponse{}, nil
}

// GetModelInfo describes the served model as vLLM's model_config does: the
// model path the server was started with, a generation model (false
// under --runner pooling), the context length and the tokenizer's vocabulary; no vision.
func (v *Service) GetModelInfo(context.Context, *vllmpb.GetModelInfoRequest) (*vllmpb.GetModelInfoResponse, error) {
	return &vllmpb.GetModelInfoResponse{
		ModelPath:        v.d.Model,
		IsGeneration:     v.s.Opts().Pooling.Generates(),
		MaxContextLength: uint32(v.s.Opts().Model.MaxModelLen),
		VocabSize:        uint32(v.s.Tokenizer().VocabSize()),
	}, nil
}

// GetServerInfo reports the generation requests in flight (HTTP and gRPC:
// one pipeline), whether the engines are paused, and, as vLLM's servicer
// does, the current time as last_receive_timestamp and the uptime since
// the worker started.
func (v *Service) GetServerInfo(context.Context, *vllmpb.GetServerInfoRequest) (*vllmpb.GetServerInfoResponse, error) {
	now := time.Now()
	paused := false
	for _, e := range v.s.Engines() {
		paused = paused || e.Paused()
	}
	return &vllmpb.GetServerInfoResponse{
		ActiveRequests:       uint32(max(v.s.InFlight(), 0)),
		IsPaused:             paused,
		LastReceiveTimestamp: float64(now.UnixNano()) / 1e9,
		UptimeSeconds:        now.Sub(v.d.Started).Seconds(),
		ServerType:           "vllm-grpc",
	}, nil
}
