package sglang_test

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/grpcfront/sglang"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// TestPoolingModelRefusesGenerate: under --runner pooling, Generate is
// FAILED_PRECONDITION (streaming or not) and HTTP /generate, which SGLang
// serves for every model, a 400 in SGLang's error shape with the same
// message; GetModelInfo says the model does not generate; Embed and
// /v1/embeddings still serve it.
func TestPoolingModelRefusesGenerate(t *testing.T) {
	e := start(t, map[string]any{"runner": "pooling"}, workerOpts())
	for _, stream := range []bool{false, true} {
		s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "p", Stream: stream,
			Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}, SamplingParams: sampling(3)})
		if err == nil {
			_, _, err = collect(s)
		}
		if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != pipeline.NotGeneratingMessage {
			t.Fatalf("stream %v: %v, want FAILED_PRECONDITION %q", stream, err, pipeline.NotGeneratingMessage)
		}
	}
	msg := e.httpError(t, map[string]any{"input_ids": ids(10, 4), "sampling_params": map[string]any{"max_new_tokens": 3}})
	if msg != pipeline.NotGeneratingMessage {
		t.Fatalf("HTTP /generate: %q", msg)
	}
	info, err := e.c.GetModelInfo(ctx(t), &pb.GetModelInfoRequest{})
	if err != nil || info.GetIsGeneration() {
		t.Fatalf("GetModelInfo: %v, is_generation %v", err, info.GetIsGeneration())
	}
	var httpInfo struct {
		IsGeneration *bool `json:"is_generation"`
	}
	getJSON(t, e.url+"/get_model_info", &httpInfo)
	if httpInfo.IsGeneration == nil || *httpInfo.IsGeneration {
		t.Fatalf("/get_model_info is_generation %v", httpInfo.IsGeneration)
	}
	r, err := e.c.Embed(ctx(t), &pb.EmbedRequest{RequestId: "e", Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}})
	if err != nil || len(r.GetEmbedding()) == 0 {
		t.Fatalf("Embed on a pooling model: %v", err)
	}
	if st := e.postJSON(t, "/v1/embeddings", map[string]any{"input": []uint32{10, 11, 12, 13}}, nil); st != http.StatusOK {
		t.Fatalf("/v1/embeddings: %d", st)
	}
}

// TestGenerativeModelSaysSo: the default runner generates over both
// paths and GetModelInfo says so.
func TestGenerativeModelSaysSo(t *testing.T) {
	e := start(t, nil, workerOpts())
	info, err := e.c.GetModelInfo(ctx(t), &pb.GetModelInfoRequest{})
	if err != nil || !info.GetIsGeneration() {
		t.Fatalf("GetModelInfo: %v, is_generation %v", err, info.GetIsGeneration())
	}
	if got := e.httpGenerate(t, ids(10, 4), 3); len(got) == 0 || len(got) > 3 {
		t.Fatalf("HTTP /generate: %d ids", len(got))
	}
}

// TestGenerationRunnerRefusesEmbed: under --runner generate, where HTTP
// has no /v1/embeddings, Embed is FAILED_PRECONDITION with SGLang's own
// refusal of an embedding request to a generation model, and no engine
// work is done; Generate still serves.
func TestGenerationRunnerRefusesEmbed(t *testing.T) {
	e := start(t, map[string]any{"runner": "generate"}, workerOpts())
	_, err := e.c.Embed(ctx(t), &pb.EmbedRequest{RequestId: "e", Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}})
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || st.Message() != sglang.NotEmbeddingMessage {
		t.Fatalf("Embed under --runner generate: %v, want FAILED_PRECONDITION %q", err, sglang.NotEmbeddingMessage)
	}
	if st := e.postJSON(t, "/v1/embeddings", map[string]any{"input": []uint32{10, 11, 12, 13}}, nil); st != http.StatusNotFound {
		t.Fatalf("/v1/embeddings under --runner generate: %d, want 404", st)
	}
	if got := e.usedTokens(t); got != 0 {
		t.Fatalf("the refused Embed used %d KV tokens", got)
	}
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "g", Tokenized: &pb.TokenizedInput{InputIds: ids(10, 4)}, SamplingParams: sampling(3)})
	if err == nil {
		_, _, err = collect(s)
	}
	if err != nil {
		t.Fatalf("Generate under --runner generate: %v", err)
	}
}
