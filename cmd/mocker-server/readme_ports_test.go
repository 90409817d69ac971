package main

import (
	"slices"
	"strconv"
	"testing"
)

// TestWithFreePorts_GRPCPortMovesOnlyWhenItNamesOne checks that a doc's
// --grpc-port moves to a free port like the other port flags, while 0 (the
// OS picks) and -1 (no gRPC server) keep their meaning.
func TestWithFreePorts_GRPCPortMovesOnlyWhenItNamesOne(t *testing.T) {
	bases := make([]int, len(portFlags)+1)
	for i := range bases {
		bases[i] = 40000 + 100*i
	}
	grpcBase := bases[slices.Index(portFlags, "--grpc-port")]
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--grpc-port", "50051"}, []string{"serve", "--grpc-port", strconv.Itoa(grpcBase), "--port", "40000"}},
		{[]string{"serve", "--grpc-port", "0"}, []string{"serve", "--grpc-port", "0", "--port", "40000"}},
		{[]string{"serve", "--grpc-port", "-1", "--port", "8000"}, []string{"serve", "--grpc-port", "-1", "--port", "40000"}},
		{[]string{"serve"}, []string{"serve", "--port", "40000"}},
	} {
		if got := withFreePorts(tc.args, bases); !slices.Equal(got, tc.want) {
			t.Errorf("withFreePorts(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
