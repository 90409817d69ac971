package vllm_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// TestPoolingModelRefusesGenerate: under --runner pooling, where the HTTP
// API has no generation routes, Generate is FAILED_PRECONDITION (streaming
// or not) before any engine work, GetModelInfo says the model does not
// generate, and Embed still serves the model's vectors.
func TestPoolingModelRefusesGenerate(t *testing.T) {
	e := start(t, map[string]any{"runner": "pooling"})
	ctx := ctxTimeout(t, 30*time.Second)
	if st := e.post(t, "/v1/completions", `{"prompt":"hi","max_tokens":2}`, nil); st != http.StatusNotFound {
		t.Fatalf("/v1/completions on a pooling model: %d, want 404", st)
	}
	for _, stream := range []bool{false, true} {
		_, err := e.generate(t, ctx, tokenized("p", seq(1, 4), &vllmpb.SamplingParams{MaxTokens: u32(3)}, stream))
		if s := status.Convert(err); s.Code() != codes.FailedPrecondition || s.Message() != pipeline.NotGeneratingMessage {
			t.Fatalf("stream %v: %v, want FAILED_PRECONDITION %q", stream, err, pipeline.NotGeneratingMessage)
		}
	}
	info, err := e.client.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
	if err != nil || info.GetIsGeneration() {
		t.Fatalf("GetModelInfo: %v, is_generation %v", err, info.GetIsGeneration())
	}
	r, err := e.client.Embed(ctx, &vllmpb.EmbedRequest{RequestId: "e", Tokenized: &vllmpb.TokenizedInput{InputIds: seq(1, 4)}})
	if err != nil || len(r.GetEmbedding()) == 0 {
		t.Fatalf("Embed on a pooling model: %v", err)
	}
	// The refused calls left nothing in flight.
	si, err := e.client.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
	if err != nil || si.GetActiveRequests() != 0 {
		t.Fatalf("GetServerInfo: %v, active %d", err, si.GetActiveRequests())
	}
}

// TestGenerativeModelSaysSo: the other runners generate, and say so.
func TestGenerativeModelSaysSo(t *testing.T) {
	for _, runner := range []string{"auto", "generate"} {
		e := start(t, map[string]any{"runner": runner})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		info, err := e.client.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
		if err != nil || !info.GetIsGeneration() {
			t.Fatalf("%s: GetModelInfo %v, is_generation %v", runner, err, info.GetIsGeneration())
		}
		g, err := e.generate(t, ctx, tokenized("g", seq(1, 4), &vllmpb.SamplingParams{MaxTokens: u32(3)}, false))
		if err != nil || len(g.ids()) != 3 {
			t.Fatalf("%s: Generate %v, %d ids", runner, err, len(g.ids()))
		}
		cancel()
	}
}

// TestGenerationRunnerRefusesEmbed: under --runner generate, where HTTP
// has no /v1/embeddings, Embed is FAILED_PRECONDITION before any engine
// work; under --runner auto it serves (and /v1/embeddings exists).
func TestGenerationRunnerRefusesEmbed(t *testing.T) {
	for _, tc := range []struct {
		runner string
		serves bool
	}{{"generate", false}, {"auto", true}} {
		e := start(t, map[string]any{"runner": tc.runner})
		ctx := ctxTimeout(t, 30*time.Second)
		r, err := e.client.Embed(ctx, &vllmpb.EmbedRequest{RequestId: "e", Tokenized: &vllmpb.TokenizedInput{InputIds: seq(1, 4)}})
		st := e.post(t, "/v1/embeddings", `{"input":[1,2,3,4]}`, nil)
		if tc.serves {
			if err != nil || len(r.GetEmbedding()) == 0 || st != http.StatusOK {
				t.Fatalf("%s: Embed %v (%d components), /v1/embeddings %d", tc.runner, err, len(r.GetEmbedding()), st)
			}
			continue
		}
		if s := status.Convert(err); s.Code() != codes.FailedPrecondition || s.Message() != vllm.NotEmbeddingMessage {
			t.Fatalf("%s: Embed %v, want FAILED_PRECONDITION %q", tc.runner, err, vllm.NotEmbeddingMessage)
		}
		if st != http.StatusNotFound {
			t.Fatalf("%s: /v1/embeddings %d, want 404", tc.runner, st)
		}
		si, err := e.client.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
		if err != nil || si.GetActiveRequests() != 0 {
			t.Fatalf("GetServerInfo: %v, active %d", err, si.GetActiveRequests())
		}
	}
}
