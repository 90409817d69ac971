package grpcfront_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// pyStubs generates the Python stubs of proto/<dir>'s files into a
// temporary directory with Debian's tools: python3-grpc-tools first; its
// bundled protoc (bookworm's grpcio-tools 1.14) predates proto3 optional
// fields, which both upstream protos use, so when it refuses them the
// stubs come from Debian's protoc (python_out) and grpc_python_plugin
// (protobuf-compiler-grpc). Either way the generated code runs on Debian's
// python3-grpcio and python3-protobuf.
func pyStubs(t *testing.T, python, dir string, files ...string) string {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(), "proto", dir)
	out := t.TempDir()
	args := append([]string{"-m", "grpc_tools.protoc", "-I", src, "--python_out", out, "--grpc_python_out", out}, files...)
	msg, err := exec.Command(python, args...).CombinedOutput()
	if err == nil {
		return out
	}
	t.Logf("python3-grpc-tools cannot compile %s (%v): using protoc and grpc_python_plugin\n%s", dir, err, firstLine(msg))
	plugin, perr := exec.LookPath("grpc_python_plugin")
	if perr != nil {
		testutil.SkipOrFail(t, "no grpc_python_plugin (scripts/ensure-deps.sh --python installs protobuf-compiler-grpc)")
	}
	args = append([]string{"-I", src, "--python_out", out, "--grpc_python_out", out,
		"--plugin=protoc-gen-grpc_python=" + plugin}, files...)
	if msg, err := exec.Command("protoc", args...).CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, msg)
	}
	return out
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// pyResult is what pyclient.py prints.
type pyResult struct {
	Tokens       []uint32 `json:"tokens"`
	FinishReason *string  `json:"finish_reason"`
	Code         string   `json:"code"`
	First        int      `json:"first_chunk_tokens"`
}

func runPy(t *testing.T, python, stubs, addr, service, mode string, prompt []uint32) pyResult {
	t.Helper()
	args := []string{filepath.Join("testdata", "pyclient.py"), stubs, addr, service, mode}
	for _, id := range prompt {
		args = append(args, strconv.Itoa(int(id)))
	}
	cmd := exec.Command(python, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyclient %s %s: %v\n%s", service, mode, err, stderr.String())
	}
	var r pyResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("pyclient %s %s printed %q: %v", service, mode, out, err)
	}
	return r
}

// TestPythonClientStreamsAndAborts: a Python client generated from the
// upstream protos (not from anything in this repository's Go code) streams
// the tokens the HTTP API gives for the same ids, aborts a running stream
// with the service's Abort RPC and cancels another, for both services; the
// aborted and cancelled requests' KV is free at once.
func TestPythonClientStreamsAndAborts(t *testing.T) {
	python := testutil.DebianPython(t, "grpc", "google.protobuf")
	prompt := make([]uint32, 48)
	for i := range prompt {
		prompt[i] = uint32(3000 + 7*i)
	}
	for _, c := range []struct {
		service, dir string
		files        []string
		engine       string
		abortEnd     string // finish_reason / code the aborted stream ends with
		http         func(t *testing.T, url string) []uint32
		kvInUse      func(t *testing.T, url string) float64
	}{
		{"sglang", "sglang", []string{"common.proto", "sglang_scheduler.proto"}, "sglang", "INTERNAL",
			func(t *testing.T, url string) []uint32 {
				var r struct {
					OutputIDs []uint32 `json:"output_ids"`
				}
				post(t, url+"/generate", map[string]any{"input_ids": prompt, "sampling_params": map[string]any{"max_new_tokens": 16}}, &r)
				return r.OutputIDs
			},
			func(t *testing.T, url string) float64 {
				var info struct {
					InternalStates []struct {
						NumUsedTokens int `json:"num_used_tokens"`
					} `json:"internal_states"`
				}
				get(t, url+"/get_server_info", &info)
				return float64(info.InternalStates[0].NumUsedTokens)
			}},
		{"vllm", "vllm", []string{"vllm_engine.proto"}, "vllm", "abort",
			func(t *testing.T, url string) []uint32 {
				var r struct {
					Choices []struct {
						TokenIDs []uint32 `json:"token_ids"`
					} `json:"choices"`
				}
				post(t, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 16, "return_token_ids": true}, &r)
				return r.Choices[0].TokenIDs
			},
			func(t *testing.T, url string) float64 {
				return testutil.Scrape(t, nil, url+"/metrics", "").Value("vllm:kv_cache_usage_perc", nil)
			}},
	} {
		t.Run(c.service, func(t *testing.T) {
			stubs := pyStubs(t, python, c.dir, c.files...)
			cfg := testcfg.Load(t, map[string]any{"engine_type": c.engine, "port": 0, "grpc_port": 0, "seed": 11,
				"max_model_len": 8192, "num_gpu_blocks": 4096, "log_level": "warn", "speedup_ratio": 1,
				"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 5.0})
			opts, err := worker.Production(cfg, worker.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := worker.New(cfg, opts)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			url, addr := w.URL(), w.GRPCAddr()

			got := runPy(t, python, stubs, addr, c.service, "stream", prompt)
			want := c.http(t, url)
			if len(want) != 16 || !slices.Equal(got.Tokens, want) {
				t.Fatalf("Python streamed %v; HTTP gave %v", got.Tokens, want)
			}
			if got.FinishReason == nil || *got.FinishReason != "length" {
				t.Errorf("finish_reason %v, want length", got.FinishReason)
			}

			for _, mode := range []string{"abort", "cancel"} {
				r := runPy(t, python, stubs, addr, c.service, mode, prompt)
				end := r.Code
				if r.FinishReason != nil && r.Code == "OK" {
					end = *r.FinishReason
				}
				want := c.abortEnd
				if mode == "cancel" {
					want = "CANCELLED"
				}
				if r.First == 0 || end != want {
					t.Errorf("%s: first chunk %d tokens, ended %q (%+v); want %q", mode, r.First, end, r, want)
				}
				testutil.WaitFor(t, 200*time.Millisecond, fmt.Sprintf("%s: KV freed", mode),
					func() bool { return c.kvInUse(t, url) == 0 })
			}
		})
	}
}

func post(t *testing.T, url string, body, v any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
