package vllm_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// grpcurl returns a grpcurl binary built from its Go module
// (scripts/grpcurl.sh pins the version and caches the build in .cache).
func grpcurl(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "scripts", "grpcurl.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script)
	cmd.Stderr = &stderr
	path, err := cmd.Output()
	if err != nil {
		t.Fatalf("building grpcurl: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(path))
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("grpcurl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// grpcurl, a client written elsewhere, finds the service by reflection
// (no .proto files given), describes it and streams a Generate whose ids
// are the Go client's for the same request.
func TestGrpcurlReflectionAndGenerate(t *testing.T) {
	bin := grpcurl(t)
	e := start(t, nil)
	services := strings.Fields(run(t, bin, "-plaintext", e.addr, "list"))
	if !slices.Contains(services, "vllm.grpc.engine.VllmEngine") || !slices.Contains(services, "grpc.reflection.v1.ServerReflection") {
		t.Errorf("services %v", services)
	}
	methods := strings.Fields(run(t, bin, "-plaintext", e.addr, "list", "vllm.grpc.engine.VllmEngine"))
	for _, m := range []string{"Generate", "Embed", "HealthCheck", "Abort", "GetModelInfo", "GetServerInfo"} {
		if !slices.Contains(methods, "vllm.grpc.engine.VllmEngine."+m) {
			t.Errorf("method %s missing from %v", m, methods)
		}
	}
	if d := run(t, bin, "-plaintext", e.addr, "describe", "vllm.grpc.engine.SamplingParams"); !strings.Contains(d, "optional uint32 max_tokens = 8;") {
		t.Errorf("describe SamplingParams:\n%s", d)
	}

	body := `{"request_id":"g1","tokenized":{"input_ids":[11,12,13,14,15,16,17,18]},"sampling_params":{"max_tokens":12,"ignore_eos":true},"stream":true}`
	out := run(t, bin, "-plaintext", "-d", body, e.addr, "vllm.grpc.engine.VllmEngine/Generate")
	dec := json.NewDecoder(strings.NewReader(out))
	var ids []uint32
	var complete map[string]any
	for dec.More() {
		var msg struct {
			Chunk *struct {
				TokenIDs []uint32 `json:"tokenIds"`
			} `json:"chunk"`
			Complete map[string]any `json:"complete"`
		}
		if err := dec.Decode(&msg); err != nil {
			t.Fatalf("%v in\n%s", err, out)
		}
		if msg.Chunk != nil {
			ids = append(ids, msg.Chunk.TokenIDs...)
		}
		if msg.Complete != nil {
			complete = msg.Complete
		}
	}
	want, err := e.generate(t, ctxTimeout(t, 10*time.Second), tokenized("g2", []uint32{11, 12, 13, 14, 15, 16, 17, 18},
		&vllmpb.SamplingParams{MaxTokens: u32(12), IgnoreEos: true}, false))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, want.ids()) || complete["finishReason"] != "length" {
		t.Errorf("grpcurl streamed %v (complete %v), Go client %v", ids, complete, want.ids())
	}

	health := run(t, bin, "-plaintext", e.addr, "vllm.grpc.engine.VllmEngine/HealthCheck")
	if !strings.Contains(health, `"healthy": true`) {
		t.Errorf("HealthCheck: %s", health)
	}
}
