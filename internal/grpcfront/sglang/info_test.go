package sglang_test

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestInfoRPCsAgreeWithTheHTTPAPI: GetModelInfo, GetServerInfo and GetLoads
// report what the HTTP API's /get_model_info and /get_server_info report
// of the same worker, and the load of a request that is running.
func TestInfoRPCsAgreeWithTheHTTPAPI(t *testing.T) {
	e := start(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 20.0,
		"speedup_ratio": 1, "num_gpu_blocks": 512, "block_size": 16}, workerOpts())
	mi, err := e.c.GetModelInfo(ctx(t), &pb.GetModelInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := e.w.VocabSize()
	if err != nil {
		t.Fatal(err)
	}
	var httpModel struct {
		ModelPath     string `json:"model_path"`
		TokenizerPath string `json:"tokenizer_path"`
	}
	getJSON(t, e.url+"/get_model_info", &httpModel)
	if mi.GetModelPath() != httpModel.ModelPath || mi.GetTokenizerPath() != httpModel.TokenizerPath ||
		mi.GetMaxContextLength() != 8192 || int(mi.GetVocabSize()) != vocab || !mi.GetIsGeneration() ||
		mi.GetServedModelName() != "sg-model" || len(mi.GetEosTokenIds()) != 1 {
		t.Errorf("GetModelInfo %v; HTTP %+v, vocab %d", mi, httpModel, vocab)
	}

	si, err := e.c.GetServerInfo(ctx(t), &pb.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var httpInfo map[string]any
	getJSON(t, e.url+"/get_server_info", &httpInfo)
	for _, k := range []string{"page_size", "max_total_num_tokens", "max_running_requests", "schedule_policy", "context_length", "model_path"} {
		got, want := si.GetServerArgs().AsMap()[k], httpInfo[k]
		if !sameJSON(got, want) {
			t.Errorf("server_args[%s] = %v over gRPC, %v over HTTP", k, got, want)
		}
	}
	if si.GetServerType() != "grpc" || si.GetMaxTotalNumTokens() != 512*16 || si.GetUptimeSeconds() <= 0 {
		t.Errorf("GetServerInfo %v", si)
	}

	// A running request shows in the loads.
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "load", Stream: true,
		Tokenized: &pb.TokenizedInput{InputIds: ids(3000, 160)}, SamplingParams: sampling(2000)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Second, "the request's KV in use", func() bool { return e.usedTokens(t) >= 160 })
	l, err := e.c.GetLoads(ctx(t), &pb.GetLoadsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetLoads()) != 1 || l.GetDpRankCount() != 1 {
		t.Fatalf("GetLoads %v", l)
	}
	r0 := l.GetLoads()[0]
	used := e.usedTokens(t)
	if r0.GetNumRunningReqs() != 1 || r0.GetNumTotalReqs() != 1 || math.Abs(float64(int(r0.GetNumUsedTokens())-used)) > 16 ||
		r0.GetMaxTotalNumTokens() != 512*16 || r0.GetMemory().GetTokenCapacity() != 512*16 || r0.GetQueues() == nil {
		t.Errorf("rank 0 load %v; HTTP used tokens %d", r0, used)
	}
	if a := l.GetAggregate(); a.GetTotalRunningReqs() != 1 || a.GetAvgTokenUsage() <= 0 {
		t.Errorf("aggregate %v", a)
	}
	if si, err := e.c.GetServerInfo(ctx(t), &pb.GetServerInfoRequest{}); err != nil || si.GetActiveRequests() != 1 ||
		si.GetIsPaused() || time.Since(time.Unix(0, int64(si.GetLastReceiveTimestamp()*1e9))) > 5*time.Second {
		t.Errorf("GetServerInfo while running: %v, %v", si, err)
	}
	if l, err := e.c.GetLoads(ctx(t), &pb.GetLoadsRequest{Include: []string{"core"}}); err != nil || l.GetLoads()[0].GetMemory() != nil {
		t.Errorf("include core: %v, %v (want no memory section)", l, err)
	}
	rank := int32(1)
	if l, err := e.c.GetLoads(ctx(t), &pb.GetLoadsRequest{DpRank: &rank}); err != nil || len(l.GetLoads()) != 0 {
		t.Errorf("dp_rank 1 of a one-rank server: %v, %v (want no loads)", l, err)
	}
	if _, err := e.c.GetLoads(ctx(t), &pb.GetLoadsRequest{Include: []string{"memory", "gpu"}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an invalid section: %v, want INVALID_ARGUMENT", err)
	}

	// FlushCache refuses while the request holds the cache, and flushes
	// once it is gone (the HTTP API's /flush_cache rule).
	if r, err := e.c.FlushCache(ctx(t), &pb.FlushCacheRequest{}); err != nil || r.GetSuccess() {
		t.Errorf("FlushCache while running = %v, %v; want success false", r, err)
	}
	if _, err := e.c.Abort(ctx(t), &pb.AbortRequest{RequestId: "load"}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.c.FlushCache(ctx(t), &pb.FlushCacheRequest{TimeoutS: 2}); err != nil || !r.GetSuccess() {
		t.Errorf("FlushCache with timeout_s after the abort = %v, %v; want success", r, err)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// sameJSON compares two decoded JSON values (numbers as float64).
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestManagementRPCs: HealthCheck generates through the engine; the
// profiler RPCs are refused (no model to profile); GetTokenizer without a
// real tokenizer and SubscribeKvEvents without KV events answer as SGLang
// does; LoRA adapters are refused (the mock serves them in vllm mode
// only); reflection lists the service.
func TestManagementRPCs(t *testing.T) {
	e := start(t, nil, workerOpts())
	if h, err := e.c.HealthCheck(ctx(t), &pb.HealthCheckRequest{}); err != nil || !h.GetHealthy() {
		t.Errorf("HealthCheck = %v, %v", h, err)
	}
	if _, err := e.c.StartProfile(ctx(t), &pb.StartProfileRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("StartProfile = %v, want UNIMPLEMENTED", err)
	}
	if _, err := e.c.StopProfile(ctx(t), &pb.StopProfileRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("StopProfile = %v, want UNIMPLEMENTED", err)
	}
	tk, err := e.c.GetTokenizer(ctx(t), &pb.GetTokenizerRequest{})
	if err == nil {
		_, err = tk.Recv()
	}
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("GetTokenizer with the built-in tokenizer = %v, want FAILED_PRECONDITION", err)
	}
	kv, err := e.c.SubscribeKvEvents(ctx(t), &pb.SubscribeKvEventsRequest{})
	if err == nil {
		_, err = kv.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("SubscribeKvEvents without KV events = %v, want UNIMPLEMENTED", err)
	}
	if _, err := e.c.ListLoadedLoRAAdapters(ctx(t), &pb.ListLoadedLoRAAdaptersRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("ListLoadedLoRAAdapters = %v, want FAILED_PRECONDITION (no LoRA in sglang mode)", err)
	}
	if _, err := e.c.LoadLoRAAdapter(ctx(t), &pb.LoadLoRAAdapterRequest{LoraName: "a", LoraPath: "/a", LoraId: "1"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("LoadLoRAAdapter = %v, want FAILED_PRECONDITION", err)
	}
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(900, 12)},
		SamplingParams: sampling(8), LoraId: "1"})
	if err == nil {
		_, _, err = collect(s)
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Generate with a lora_id = %v, want INVALID_ARGUMENT", err)
	}

	rc, err := rpb.NewServerReflectionClient(e.conn).ServerReflectionInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, "sglang.grpc.scheduler.SglangScheduler") || slices.Contains(names, "vllm.grpc.engine.VllmEngine") {
		t.Errorf("reflection lists %v", names)
	}
}

// TestEmbedGivesTheHTTPVector: Embed's vector for token ids is the one
// /v1/embeddings gives for the same ids.
func TestEmbedGivesTheHTTPVector(t *testing.T) {
	e := start(t, nil, workerOpts())
	in := ids(700, 30)
	r, err := e.c.Embed(ctx(t), &pb.EmbedRequest{RequestId: "emb", Tokenized: &pb.TokenizedInput{InputIds: in}})
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if st := e.postJSON(t, "/v1/embeddings", map[string]any{"model": "sg-model", "input": in}, &want); st != http.StatusOK {
		t.Fatalf("/v1/embeddings: %d", st)
	}
	got := r.GetEmbedding()
	if int(r.GetEmbeddingDim()) != len(got) || r.GetPromptTokens() != 30 || len(got) != len(want.Data[0].Embedding) {
		t.Fatalf("Embed: dim %d, %d values, %d prompt tokens; HTTP %d values", r.GetEmbeddingDim(), len(got), r.GetPromptTokens(), len(want.Data[0].Embedding))
	}
	for i, v := range got {
		if math.Abs(float64(v)-want.Data[0].Embedding[i]) > 1e-6 {
			t.Fatalf("component %d: %v over gRPC, %v over HTTP", i, v, want.Data[0].Embedding[i])
		}
	}
	if _, err := e.c.Embed(ctx(t), &pb.EmbedRequest{Tokenized: &pb.TokenizedInput{}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Embed of no ids = %v, want INVALID_ARGUMENT", err)
	}
}
