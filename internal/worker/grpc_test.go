package worker

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// The gRPC port follows the worker's lifecycle: a kill closes it (calls
// fail UNAVAILABLE), a restart serves on the same port again, Stop ends
// it; drain refuses new generations as HTTP does.
func TestGRPCPortFollowsTheLifecycle(t *testing.T) {
	// Both ports below the ephemeral range: the worker restarts on them.
	base := testutil.RestartablePortRun(t, 2)
	w := New(testcfg.Load(t, map[string]any{"port": base, "grpc_port": base + 1, "log_level": "warn"}), Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	addr := w.GRPCAddr()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := vllmpb.NewVllmEngineClient(conn)
	generate := func(opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Generate(ctx, &vllmpb.GenerateRequest{RequestId: "x",
			Input:          &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: []uint32{1, 2, 3}}},
			SamplingParams: &vllmpb.SamplingParams{MaxTokens: new(uint32(2))}}, opts...)
		if err != nil {
			return err
		}
		for {
			if _, err := st.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	if err := generate(); err != nil {
		t.Fatalf("running: %v", err)
	}
	if err := w.Drain(); err != nil {
		t.Fatal(err)
	}
	if err := generate(); status.Code(err) != codes.Unavailable {
		t.Errorf("draining: %v", err)
	}
	if err := w.Undrain(); err != nil {
		t.Fatal(err)
	}
	if err := w.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := generate(); status.Code(err) != codes.Unavailable {
		t.Errorf("killed: %v", err)
	}
	if err := w.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.GRPCAddr() != addr {
		t.Errorf("restarted on %s, was %s", w.GRPCAddr(), addr)
	}
	// The client's connection backs off after the kill: wait for it to
	// reconnect rather than fail fast.
	if err := generate(grpc.WaitForReady(true)); err != nil {
		t.Errorf("restarted: %v", err)
	}
	w.Stop()
	if err := generate(); status.Code(err) != codes.Unavailable {
		t.Errorf("stopped: %v", err)
	}
}

// A graceful stop gives a running gRPC stream the shutdown grace, then
// cancels it: Stop returns soon after the grace, the client sees the call
// end with UNAVAILABLE or CANCELLED, not hang.
func TestGRPCStopCancelsAfterTheGrace(t *testing.T) {
	cfg := testcfg.Load(t, map[string]any{"port": 0, "grpc_port": 0, "log_level": "error",
		"speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 1, "fixed_decode_ms": 20})
	w := New(cfg, Options{ShutdownGrace: 200 * time.Millisecond})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(w.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := vllmpb.NewVllmEngineClient(conn).Generate(ctx, &vllmpb.GenerateRequest{RequestId: "long", Stream: true,
		Input:          &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: []uint32{1, 2, 3}}},
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: new(uint32(1000)), IgnoreEos: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	w.Stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v with a 200 ms grace", d)
	}
	for err == nil {
		_, err = st.Recv()
	}
	if c := status.Code(err); c != codes.Unavailable && c != codes.Canceled {
		t.Errorf("the running stream ended with %v", err)
	}
}
