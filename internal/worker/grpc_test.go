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
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// The gRPC port follows the worker's lifecycle: a kill closes it (calls
// fail UNAVAILABLE), a restart serves on the same port again, Stop ends
// it; drain refuses new generations as HTTP does.
func TestGRPCPortFollowsTheLifecycle(t *testing.T) {
	w := New(testcfg.Load(t, map[string]any{"port": 0, "grpc_port": 0, "log_level": "warn"}), Options{})
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
