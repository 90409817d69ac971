package sglang_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives its test: a
// worker, a gRPC client, a stream or a KV event subscriber left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
