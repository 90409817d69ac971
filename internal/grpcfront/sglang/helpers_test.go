package sglang_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mocker-server/mocker-server/internal/config"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// env is one running --engine-type sglang worker with its gRPC port, and
// a gRPC client connected to it.
type env struct {
	w    *worker.Worker
	url  string // HTTP base URL
	addr string // gRPC host:port
	conn *grpc.ClientConn
	c    pb.SglangSchedulerClient
}

// baseConfig is the configuration every test starts from: SGLang's
// scheduler, a fixed seed, the gRPC port beside HTTP.
func baseConfig() map[string]any {
	return map[string]any{"engine_type": "sglang", "port": 0, "grpc_port": 0, "max_model_len": 8192,
		"model": "sg-model", "seed": 7, "log_level": "warn"}
}

// start runs a worker of baseConfig with overlay on top; opts are the
// worker's options (Production wiring for KV events, loaders).
func start(t *testing.T, overlay map[string]any, opts worker.Options) *env {
	t.Helper()
	o := baseConfig()
	for k, v := range overlay {
		o[k] = v
	}
	return startCfg(t, testcfg.Load(t, o), opts)
}

// startCfg runs a worker of cfg and connects a gRPC client to it.
func startCfg(t *testing.T, cfg *config.Config, opts worker.Options) *env {
	t.Helper()
	w := worker.New(cfg, opts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	e := &env{w: w, url: w.URL(), addr: w.GRPCAddr()}
	if e.addr == "" {
		t.Fatal("the worker serves no gRPC port")
	}
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(512<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e.conn, e.c = conn, pb.NewSglangSchedulerClient(conn)
	return e
}

// ctx is a test call's context, bounded so a hung call fails the test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// ids returns n token ids from base on.
func ids(base, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(base + i)
	}
	return out
}

// sampling are explicit sampling parameters as SGLang's gateway sends
// them (it never sends the proto3 zeros).
func sampling(maxNew uint32) *pb.SamplingParams {
	return &pb.SamplingParams{Temperature: 1, TopP: 1, TopK: -1, RepetitionPenalty: 1, MaxNewTokens: &maxNew}
}

// collect reads a Generate stream to its end: the concatenated chunk
// tokens, every response, and the final status.
func collect(s grpc.ServerStreamingClient[pb.GenerateResponse]) (tokens []uint32, resps []*pb.GenerateResponse, err error) {
	for {
		r, err := s.Recv()
		if err == io.EOF {
			return tokens, resps, nil
		}
		if err != nil {
			return tokens, resps, err
		}
		resps = append(resps, r)
		if c := r.GetChunk(); c != nil {
			tokens = append(tokens, c.GetTokenIds()...)
		}
	}
}

// postJSON posts body to the HTTP API and decodes the JSON answer into v.
func (e *env) postJSON(t *testing.T, path string, body any, v any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(e.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
	return resp.StatusCode
}

// usedTokens reads rank 0's KV tokens in use from the HTTP API's
// /get_server_info (a path independent of the gRPC service).
func (e *env) usedTokens(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(e.url + "/get_server_info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		InternalStates []struct {
			NumUsedTokens  int `json:"num_used_tokens"`
			NumRunningReqs int `json:"num_running_reqs"`
		} `json:"internal_states"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info.InternalStates[0].NumUsedTokens
}

// httpGenerate runs SGLang's HTTP /generate on input ids and returns its
// output ids.
func (e *env) httpGenerate(t *testing.T, in []uint32, maxNew int) []uint32 {
	t.Helper()
	var out struct {
		OutputIDs []uint32 `json:"output_ids"`
	}
	body := map[string]any{"input_ids": in, "sampling_params": map[string]any{"max_new_tokens": maxNew}}
	if st := e.postJSON(t, "/generate", body, &out); st != http.StatusOK {
		t.Fatalf("/generate: status %d", st)
	}
	return out.OutputIDs
}

// workerOpts are a test worker's options: no production wiring (metrics,
// ZMQ) unless a test needs it.
func workerOpts() worker.Options { return worker.Options{} }
