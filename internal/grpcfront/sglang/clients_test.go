package sglang_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func grpcurl(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("grpcurl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestGrpcurlListsAndGenerates: grpcurl, a client written elsewhere, finds
// SGLang's service by reflection (no .proto files given), lists its fifteen
// RPCs, describes its messages, and streams a Generate whose ids are the Go
// client's for the same request.
func TestGrpcurlListsAndGenerates(t *testing.T) {
	bin := testutil.Grpcurl(t)
	e := start(t, nil, workerOpts())
	services := strings.Fields(grpcurl(t, bin, "-plaintext", e.addr, "list"))
	if !slices.Contains(services, "sglang.grpc.scheduler.SglangScheduler") || !slices.Contains(services, "grpc.reflection.v1.ServerReflection") {
		t.Errorf("services %v", services)
	}
	methods := strings.Fields(grpcurl(t, bin, "-plaintext", e.addr, "list", "sglang.grpc.scheduler.SglangScheduler"))
	for _, m := range []string{"Generate", "Embed", "HealthCheck", "Abort", "GetModelInfo", "GetServerInfo", "GetLoads",
		"FlushCache", "StartProfile", "StopProfile", "GetTokenizer", "SubscribeKvEvents", "LoadLoRAAdapter",
		"UnloadLoRAAdapter", "ListLoadedLoRAAdapters"} {
		if !slices.Contains(methods, "sglang.grpc.scheduler.SglangScheduler."+m) {
			t.Errorf("method %s missing from %v", m, methods)
		}
	}
	if len(methods) != 15 {
		t.Errorf("%d methods, want 15: %v", len(methods), methods)
	}
	if d := grpcurl(t, bin, "-plaintext", e.addr, "describe", "sglang.grpc.scheduler.SamplingParams"); !strings.Contains(d, "optional uint32 max_new_tokens = 8;") {
		t.Errorf("describe SamplingParams:\n%s", d)
	}
	if d := grpcurl(t, bin, "-plaintext", e.addr, "describe", "smg.grpc.common.KvBlock"); !strings.Contains(d, "int64 block_hash = 1;") {
		t.Errorf("describe smg.grpc.common.KvBlock (common.proto):\n%s", d)
	}

	prompt := ids(40, 10)
	body := `{"request_id":"u1","stream":true,"tokenized":{"input_ids":[40,41,42,43,44,45,46,47,48,49]},` +
		`"sampling_params":{"temperature":1,"top_p":1,"top_k":-1,"repetition_penalty":1,"max_new_tokens":12}}`
	out := grpcurl(t, bin, "-plaintext", "-d", body, e.addr, "sglang.grpc.scheduler.SglangScheduler/Generate")
	dec := json.NewDecoder(strings.NewReader(out))
	var got []uint32
	var complete map[string]any
	for dec.More() {
		var msg struct {
			RequestID string `json:"requestId"`
			Chunk     *struct {
				TokenIDs []uint32 `json:"tokenIds"`
			} `json:"chunk"`
			Complete map[string]any `json:"complete"`
		}
		if err := dec.Decode(&msg); err != nil {
			t.Fatalf("grpcurl output %q: %v", out, err)
		}
		if msg.RequestID != "u1" {
			t.Errorf("request_id %q", msg.RequestID)
		}
		if msg.Chunk != nil {
			got = append(got, msg.Chunk.TokenIDs...)
		}
		if msg.Complete != nil {
			complete = msg.Complete
		}
	}
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: prompt}, SamplingParams: sampling(12)})
	if err != nil {
		t.Fatal(err)
	}
	_, resps, err := collect(s)
	if err != nil {
		t.Fatal(err)
	}
	want := resps[0].GetComplete().GetOutputIds()
	if len(want) != 12 || !slices.Equal(got, want) || complete["finishReason"] != "length" {
		t.Errorf("grpcurl streamed %v (complete %v); the Go client got %v", got, complete, want)
	}
}

// TestFaultsThroughMetadata: the HTTP API's fault directive, sent as the
// x-mocker-fault metadata, strikes a gRPC call as it strikes an HTTP
// request: a status fault replaces the answer, a mid-stream one ends the
// stream after its token count, and a stall delays it.
func TestFaultsThroughMetadata(t *testing.T) {
	e := start(t, map[string]any{"allow_fault_headers": true}, workerOpts())
	gen := func(fault string) ([]uint32, error) {
		c := metadata.AppendToOutgoingContext(ctx(t), "x-mocker-fault", fault)
		s, err := e.c.Generate(c, &pb.GenerateRequest{Stream: true, Tokenized: &pb.TokenizedInput{InputIds: ids(60, 10)},
			SamplingParams: sampling(20)})
		if err != nil {
			return nil, err
		}
		toks, _, err := collect(s)
		return toks, err
	}
	for fault, want := range map[string]codes.Code{"rate_limit": codes.ResourceExhausted, "server_error": codes.Internal,
		"unavailable": codes.Unavailable, "context_length": codes.InvalidArgument} {
		if _, err := gen(fault); status.Code(err) != want {
			t.Errorf("%s: %v, want %s", fault, err, want)
		}
	}
	toks, err := gen("stream_error;after=5")
	if status.Code(err) != codes.Internal || len(toks) < 5 || len(toks) >= 20 {
		t.Errorf("stream_error after 5: %d tokens, %v", len(toks), err)
	}
	if _, err := gen("reset;after=3"); status.Code(err) != codes.Unavailable {
		t.Errorf("reset: %v, want UNAVAILABLE", err)
	}
	t0 := time.Now()
	toks, err = gen("stall;after=2;for=300ms")
	if err != nil || len(toks) != 20 || time.Since(t0) < 300*time.Millisecond {
		t.Errorf("stall: %d tokens, %v after %v", len(toks), err, time.Since(t0))
	}
	if _, err := gen("no_such_fault"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a malformed directive: %v, want INVALID_ARGUMENT", err)
	}
}
