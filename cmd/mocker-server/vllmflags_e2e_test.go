package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// startRun runs the command line args through run with the production
// server until the test ends, and returns the base URL (from the
// "listening on" line) and the process's stderr.
func startRun(t *testing.T, args ...string) (baseURL string, stderr *syncBuffer) {
	t.Helper()
	serveFunc = runServer
	t.Cleanup(func() { serveFunc = printConfig })
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	stderr = new(syncBuffer)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, &stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run = %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Error("run did not return")
		}
	})
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)\n`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("run returned early: %v; stderr:\n%s", err, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line; stderr:\n%s", stderr.String())
		}
	}
}

// linesWithPrefix returns the lines of text that start with prefix.
func linesWithPrefix(text, prefix string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// The command line of a GPU deployment starts the mock unchanged: the flags
// without meaning here are named once at startup and the server answers.
func TestRun_VLLMServeCommandLineStartsAndServes(t *testing.T) {
	url, stderr := startRun(t, "serve", "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2",
		"--gpu-memory-utilization", "0.9", "--dtype", "bfloat16", "--trust-remote-code", "--enable-prefix-caching",
		"--port", "0")
	httpClient := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer httpClient.CloseIdleConnections()
	c := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(httpClient), option.WithMaxRetries(0))
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "Qwen/Qwen3-8B", MaxTokens: openai.Int(4),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "Qwen/Qwen3-8B" || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" ||
		resp.Usage.CompletionTokens != 4 {
		t.Errorf("chat completion = %+v", resp)
	}
	want := []string{"accepted, no effect: --trust-remote-code"}
	if got := linesWithPrefix(stderr.String(), "accepted, no effect"); !slices.Equal(got, want) {
		t.Errorf("startup lines:\n got  %q\n want %q\nstderr:\n%s", got, want, stderr.String())
	}
	// The settings the hardware timing model uses are named too: without
	// --hardware they change nothing (docs/hardware.md).
	want = []string{"warning: accepted, no effect without --hardware: --tensor-parallel-size, --dtype, --gpu-memory-utilization (docs/hardware.md)"}
	if got := linesWithPrefix(stderr.String(), "warning: accepted, no effect"); !slices.Equal(got, want) {
		t.Errorf("startup lines:\n got  %q\n want %q\nstderr:\n%s", got, want, stderr.String())
	}
}

func TestRun_VLLMFlagErrorsExitWithStatus2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"misspelled vLLM flag", []string{"serve", "--model", "Qwen/Qwen3-8B", "--tensor-parallel-sise", "2"},
			[]string{"unknown flag: --tensor-parallel-sise (did you mean --tensor-parallel-size?)"}},
		{"misspelled short name", []string{"-tq", "2"}, []string{"unknown shorthand flag: 't' in -tq (did you mean -tp?)"}},
		{"int flag with a word", []string{"--tensor-parallel-size", "two"},
			[]string{`--tensor-parallel-size must be an integer, got string "two"`}},
		{"choice flag with another value", []string{"--dtype", "bf16"},
			[]string{`Invalid --dtype 'bf16'. Must be 'auto', 'bfloat16', 'float', 'float16', 'float32', or 'half'.`}},
		{"store_true flag with a value", []string{"--trust-remote-code=true"},
			[]string{`invalid argument "true" for "--trust-remote-code" flag: takes no value`}},
		{"JSON flag with broken JSON", []string{"-cc", "{level: 3}"},
			[]string{`invalid argument "{level: 3}" for "--compilation-config" flag: expected a JSON object: invalid character 'l' looking for beginning of object key string`}},
		{"capabilities not built yet", []string{"--ssl-keyfile", "key.pem", "--ssl-certfile", "cert.pem"},
			[]string{"not supported yet: --ssl-keyfile key.pem (needs TLS (HTTPS serving))",
				`not supported yet: --ssl-certfile cert.pem (needs TLS (HTTPS serving))`}},
		{"auto tool choice without a parser", []string{"--enable-auto-tool-choice"},
			[]string{"--enable-auto-tool-choice requires --tool-call-parser"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if code := exitCode(err); code != 2 {
				t.Errorf("exit status = %d (err %v), want 2", code, err)
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = "mocker-server: " + w
			}
			if got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); !slices.Equal(got, want) {
				t.Errorf("stderr lines:\n got  %q\n want %q", got, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q", stdout.String())
			}
		})
	}
}

// --served-model-name takes several names as vLLM reads them (nargs="+"):
// /v1/models lists all of them, requests may use any, and responses and
// metric labels carry the first.
func TestRun_SeveralServedModelNames(t *testing.T) {
	url, _ := startRun(t, "serve", "root-model", "--served-model-name", "a", "b", "c", "--port", "0",
		"--speedup-ratio", "inf", "--log-level", "warn")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	c := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(client), option.WithMaxRetries(0))
	ctx := context.Background()
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Errorf("/v1/models ids = %q", ids)
	}
	for _, name := range []string{"a", "b", "c"} {
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: name, MaxTokens: openai.Int(2),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")}})
		if err != nil {
			t.Fatalf("model %s: %v", name, err)
		}
		if resp.Model != "a" {
			t.Errorf("model %s: response model = %q, want the first served name", name, resp.Model)
		}
	}
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "root-model", MaxTokens: openai.Int(2),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")}}); err == nil {
		t.Error("the model path was accepted although it is not a served name")
	}
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	labels := regexp.MustCompile(`model_name="([^"]*)"`).FindAllStringSubmatch(string(body), -1)
	seen := map[string]bool{}
	for _, m := range labels {
		seen[m[1]] = true
	}
	if len(labels) == 0 || len(seen) != 1 || !seen["a"] {
		t.Errorf("model_name labels = %v, want only \"a\"", seen)
	}
	if !strings.Contains(string(body), `vllm:request_success_total{engine="0",finished_reason="length",model_name="a"} 3`) {
		t.Errorf("/metrics does not count the three requests under model_name=\"a\"")
	}
}

// --enable-force-include-usage: a stream without stream_options ends with
// a usage chunk; without the flag it does not.
func TestRun_EnableForceIncludeUsage(t *testing.T) {
	for _, force := range []bool{true, false} {
		args := []string{"--port", "0", "--speedup-ratio", "inf", "--log-level", "warn"}
		if force {
			args = append(args, "--enable-force-include-usage")
		}
		url, _ := startRun(t, args...)
		client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
		resp, err := client.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(helloChat+`,"max_tokens":3,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		var chunks []map[string]any
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk map[string]any
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			chunks = append(chunks, chunk)
		}
		resp.Body.Close()
		client.CloseIdleConnections()
		if len(chunks) < 2 {
			t.Fatalf("force=%v: %d chunks", force, len(chunks))
		}
		last := chunks[len(chunks)-1]
		usage, hasUsage := last["usage"].(map[string]any)
		if force {
			choices, _ := last["choices"].([]any)
			if !hasUsage || len(choices) != 0 || usage["completion_tokens"] != 3.0 || usage["total_tokens"] != usage["prompt_tokens"].(float64)+3 {
				t.Errorf("force=true: last chunk = %v, want a usage chunk with no choices", last)
			}
		} else if hasUsage {
			t.Errorf("force=false: last chunk carries usage: %v", last)
		}
		for _, chunk := range chunks[:len(chunks)-1] {
			if u, ok := chunk["usage"]; ok && u != nil {
				t.Errorf("force=%v: usage before the last chunk: %v", force, chunk)
			}
		}
	}
}
