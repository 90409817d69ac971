package grpcfront

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// Code maps an HTTP status of the pipeline's errors to the gRPC code a
// Python gRPC servicer over vLLM or SGLang returns for the same failure:
// a request error (vLLM's ValueError) is INVALID_ARGUMENT; being out of
// capacity, unavailable or rate limited are the standard mappings (which
// the upstream servers never reach: they have no limits); anything else
// is INTERNAL, the upstream servers' answer to every other exception.
func Code(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusNotFound,
		http.StatusRequestEntityTooLarge:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// Status is the gRPC status of a pipeline error: its code by Code and its
// message as the HTTP API words it.
func Status(e *wire.APIError) error {
	if e == nil {
		return nil
	}
	return status.Error(Code(e.Status), e.Message)
}

// ContextStatus is the status of a call whose context ended: the client's
// cancellation or deadline as gRPC reports them, UNAVAILABLE when the
// server is shutting down.
func ContextStatus(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), pipeline.ErrShuttingDown) {
		return status.Error(codes.Unavailable, "server shutting down")
	}
	return status.FromContextError(ctx.Err()).Err()
}

// NotGenerating is FAILED_PRECONDITION for a generation call on a server
// whose model has no generation task (--runner pooling), where the HTTP
// API has no generation routes: the request is well formed, the model
// cannot serve it. nil when the model generates. Neither upstream servicer
// checks (vLLM's input processor leaves the generation-task check as a
// TODO and SGLang's only refuses the converse), so the code and the
// message are the mock's; HTTP /generate answers the same message with
// a 400.
func NotGenerating(s *pipeline.Server) error {
	if s.Opts().Pooling.Generates() {
		return nil
	}
	return status.Error(codes.FailedPrecondition, pipeline.NotGeneratingMessage)
}

// NotEmbedding is FAILED_PRECONDITION for an Embed call on a server whose
// model has no embedding task (--runner generate), where the HTTP API has
// no /v1/embeddings: message is the service's own words (SGLang's
// tokenizer manager refuses an embedding request to a generation model
// with a ValueError; vLLM's servicer has no Embed). nil when the model
// embeds (--runner auto or an embedding pooling model).
func NotEmbedding(s *pipeline.Server, message string) error {
	if s.Opts().Pooling.Embeds() {
		return nil
	}
	return status.Error(codes.FailedPrecondition, message)
}
