package grpcload_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcload"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// TestRunCountsEveryToken drives both gRPC front ends with the load client
// and checks its counts against what was asked: every request completes
// with max_tokens tokens, the chunks carry them all, and the latencies are
// measured per request.
func TestRunCountsEveryToken(t *testing.T) {
	for _, p := range []grpcload.Protocol{grpcload.SGLang, grpcload.VLLM} {
		t.Run(string(p), func(t *testing.T) {
			cfg := testcfg.Load(t, map[string]any{"engine_type": string(p), "port": 0, "grpc_port": 0, "log_level": "warn"})
			w := worker.New(cfg, worker.Options{})
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := grpcload.Run(ctx, grpcload.Config{Addr: w.GRPCAddr(), Protocol: p, Concurrency: 16, Conns: 2,
				Requests: 64, PromptTokens: 20, MaxTokens: 50, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 64 || res.Errors != 0 || res.OutputTokens != 64*50 || res.MismatchedLengths != 0 {
				t.Fatalf("result %+v", res)
			}
			if res.E2E.Count != 64 || res.TTFT.Count != 64 || res.Chunks < 64 || res.ITL.Count != int(res.Chunks)-64 {
				t.Errorf("latencies: %d e2e, %d ttft, %d itl over %d chunks", res.E2E.Count, res.TTFT.Count, res.ITL.Count, res.Chunks)
			}
			var tbl strings.Builder
			res.WriteTable(&tbl)
			if !strings.Contains(tbl.String(), "requests    64 ok, 0 errors") || !strings.Contains(tbl.String(), "latency ms       mean") ||
				!strings.Contains(tbl.String(), fmt.Sprintf("%10d\nITL ", 64)) {
				t.Errorf("table:\n%s", tbl.String())
			}
		})
	}
	if _, err := grpcload.Run(context.Background(), grpcload.Config{Addr: "x:1", Protocol: "http", Concurrency: 1, Requests: 1, PromptTokens: 1, MaxTokens: 1}); err == nil {
		t.Error("an unknown protocol was accepted")
	}
}
