package vllm_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// The management RPCs describe the worker the HTTP API describes.
func TestInfoRPCs(t *testing.T) {
	e := start(t, map[string]any{"model": "org/some-model", "max_model_len": 4096})
	ctx := ctxTimeout(t, 10*time.Second)
	mi, err := e.client.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if mi.GetModelPath() != "org/some-model" || !mi.GetIsGeneration() || mi.GetMaxContextLength() != 4096 ||
		mi.GetVocabSize() == 0 || mi.GetSupportsVision() {
		t.Errorf("GetModelInfo: %v", mi)
	}
	h, err := e.client.HealthCheck(ctx, &vllmpb.HealthCheckRequest{})
	if err != nil || !h.GetHealthy() || h.GetMessage() != "Health" {
		t.Errorf("HealthCheck: %v, %v", h, err)
	}
	si, err := e.client.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	if si.GetServerType() != "vllm-grpc" || si.GetActiveRequests() != 0 || si.GetIsPaused() ||
		math.Abs(si.GetLastReceiveTimestamp()-now) > 5 || si.GetUptimeSeconds() < 0 || si.GetUptimeSeconds() > 60 {
		t.Errorf("GetServerInfo: %v", si)
	}
}

// Embed runs the ids on the engine and answers the vector /v1/embeddings
// answers for them.
func TestEmbedMatchesHTTP(t *testing.T) {
	e := start(t, map[string]any{"embedding_dim": 64})
	ctx := ctxTimeout(t, 10*time.Second)
	ids := seq(3, 20)
	r, err := e.client.Embed(ctx, &vllmpb.EmbedRequest{RequestId: "e", Tokenized: &vllmpb.TokenizedInput{InputIds: ids}})
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if code := e.post(t, "/v1/embeddings", `{"input":[3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22]}`, &resp); code != 200 {
		t.Fatalf("HTTP %d", code)
	}
	if r.GetEmbeddingDim() != 64 || r.GetPromptTokens() != 20 || !slices.Equal(r.GetEmbedding(), resp.Data[0].Embedding) {
		t.Errorf("Embed: dim %d, prompt %d, %v\nHTTP %v", r.GetEmbeddingDim(), r.GetPromptTokens(), r.GetEmbedding(), resp.Data[0].Embedding)
	}
	if _, err := e.client.Embed(ctx, &vllmpb.EmbedRequest{RequestId: "x"}); err == nil {
		t.Error("Embed of no ids succeeded")
	}
}
