package vllm_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// The HTTP API's injected faults reach gRPC calls through the
// x-mocker-fault metadata key: status faults as their gRPC codes,
// mid-stream faults after their token count.
func TestInjectedFaults(t *testing.T) {
	e := start(t, map[string]any{"allow_fault_headers": true})
	for _, tc := range []struct {
		fault  string
		code   codes.Code
		before int // chunks received before the status
	}{
		{"rate_limit", codes.ResourceExhausted, 0},
		{"context_length", codes.InvalidArgument, 0},
		{"timeout", codes.DeadlineExceeded, 0},
		{"slow_first_token;for=100ms", codes.OK, 8},
		{"server_error", codes.Internal, 0},
		{"unavailable", codes.Unavailable, 0},
		{"stream_error;after=4", codes.Internal, 4},
		{"truncate;after=2", codes.Internal, 2},
		{"reset;after=3", codes.Unavailable, 3},
		{"stall;after=2;for=50ms", codes.OK, 8},
	} {
		// Long enough for every fault but timeout, which never answers.
		ctx := metadata.AppendToOutgoingContext(ctxTimeout(t, 3*time.Second), "x-mocker-fault", tc.fault)
		g, err := e.generate(t, ctx, tokenized("f", seq(1, 8), &vllmpb.SamplingParams{MaxTokens: u32(8), IgnoreEos: true}, true))
		if status.Code(err) != tc.code || len(g.ids()) != tc.before {
			t.Errorf("%s: %v after %d ids, want %v after %d", tc.fault, err, len(g.ids()), tc.code, tc.before)
		}
	}
}

// x-data-parallel-rank picks a DP rank as the HTTP header does, with the
// same check.
func TestRankMetadataIsChecked(t *testing.T) {
	e := start(t, nil)
	ctx := metadata.AppendToOutgoingContext(ctxTimeout(t, 10*time.Second), "x-data-parallel-rank", "3")
	_, err := e.generate(t, ctx, tokenized("r", seq(1, 8), &vllmpb.SamplingParams{MaxTokens: u32(2)}, true))
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("rank 3 of 1: %v", err)
	}
}
