package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"sigs.k8s.io/yaml"
)

// llm-d-inference-sim users switch by changing the binary: its documented
// start commands and example configuration files (testdata/llm-d-inference-sim,
// copied from its repository with its Apache-2.0 notice) start this server,
// which then answers (docs/migrating-from-llm-d-inference-sim.md).

const simTestdata = "testdata/llm-d-inference-sim"

// simClient is an openai-go client of a server started by startRun.
func simClient(t *testing.T, url string) openai.Client {
	t.Helper()
	httpClient := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(httpClient.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(httpClient), option.WithMaxRetries(0))
}

// simCommands reads commands.txt: each line a command line of the
// simulator, without its binary.
func simCommands(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(simTestdata, "commands.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args := strings.Fields(line)
		if strings.HasSuffix(args[0], "llm-d-inference-sim") {
			args = args[1:]
		}
		cmds = append(cmds, args)
	}
	return cmds
}

// argValue returns the value after --name in args.
func argValue(args []string, name string) string {
	if i := slices.Index(args, "--"+name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestLLMDSim_QuickStartCommandsStartAndServe(t *testing.T) {
	cmds := simCommands(t)
	if len(cmds) < 6 {
		t.Fatalf("%d commands in commands.txt, want the 6 documented ones", len(cmds))
	}
	for _, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			args = slices.Clone(args)
			if i := slices.Index(args, "--port"); i >= 0 {
				args[i+1] = "0" // the documented 8000 may be taken on a shared machine
			} else {
				args = append(args, "--port", "0")
			}
			// With --enable-kvcache the simulator publishes to a subscriber
			// that binds (llm-d's KV cache manager), at tcp://localhost:5557
			// by default; here the subscriber binds a free port instead,
			// which --zmq-endpoint names.
			var sub *testutil.ZMQSocket
			kvEvents := argValue(args, "enable-kvcache") == "true"
			if kvEvents {
				sub = testutil.NewZMQSub(t, nil, testutil.AnyLoopbackPort, true, "")
				args = append(args, "--zmq-endpoint", testutil.LastEndpoint(t, sub.Sock))
			}
			url, stderr := startRun(t, append([]string{"serve"}, args...)...)
			if kvEvents {
				sub.Settle(200 * time.Millisecond)
			}
			model := argValue(args, "model")
			c := simClient(t, url)
			// Long enough to fill KV blocks, whose storing is an event.
			hello := strings.Repeat("Hello there! ", 100)
			resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: model, MaxTokens: openai.Int(3),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(hello)},
			})
			if err != nil {
				t.Fatalf("chat: %v; stderr:\n%s", err, stderr.String())
			}
			if resp.Model != model || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens != 3 {
				t.Errorf("chat completion = %+v", resp)
			}
			// The simulator's flags without meaning here are named once, in
			// command-line order.
			var want, noEffect []string
			for i, a := range args {
				switch {
				case a == "--render-url":
					noEffect = append(noEffect, a+" "+args[i+1])
				case strings.HasPrefix(a, "--v="):
					noEffect = append(noEffect, "--v "+strings.TrimPrefix(a, "--v="))
				}
			}
			if len(noEffect) > 0 {
				want = []string{"accepted, no effect: " + strings.Join(noEffect, ", ")}
			}
			if got := linesWithPrefix(stderr.String(), "accepted, no effect"); !slices.Equal(got, want) {
				t.Errorf("startup lines:\n got  %q\n want %q", got, want)
			}
			if kvEvents {
				// The chat's prompt blocks were stored: a KV event batch came.
				if msg := sub.Recv(5 * time.Second); len(msg) != 3 {
					t.Errorf("--enable-kvcache true: KV event message %q, want [topic, seq, payload]", msg)
				}
			}
		})
	}
}

func TestLLMDSim_ExampleConfigsStartAndServe(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(simTestdata, "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	profiles, _ := filepath.Glob(filepath.Join(simTestdata, "manifests", "latency-profiles", "*.yaml"))
	files = append(files, profiles...)
	if len(files) != 10 {
		t.Fatalf("%d example configs, want the simulator's 10", len(files))
	}
	// The time to first token each file asks for (its time-to-first-token,
	// or prefill-overhead under the per-token calculator), a floor of the
	// measured one.
	minTTFT := map[string]time.Duration{
		"basic-config.yaml": 2 * time.Second, "config.yaml": 2 * time.Second,
		"config_with_duration_latency.yaml": 4 * time.Second, "config_with_fake.yaml": 2 * time.Second,
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			url, stderr := startRun(t, "serve", "--config", path, "--port", "0")
			var file struct {
				Model  string   `json:"model"`
				Served []string `json:"served-model-name"`
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(raw, &file); err != nil {
				t.Fatal(err)
			}
			model := file.Model
			if len(file.Served) > 0 {
				model = file.Served[0]
			}
			c := simClient(t, url)
			start := time.Now()
			resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: model, MaxTokens: openai.Int(1),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")},
			})
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("chat: %v; stderr:\n%s", err, stderr.String())
			}
			if resp.Model != model || len(resp.Choices) != 1 || resp.Usage.CompletionTokens != 1 {
				t.Errorf("chat completion = %+v", resp)
			}
			if floor := minTTFT[filepath.Base(path)]; elapsed < floor {
				t.Errorf("answered in %v, before the file's time to first token %v", elapsed, floor)
			}
		})
	}
}

// --mode echo answers with the last message of a chat and the prompt of a
// completion, streamed token by token, usage counting the echoed tokens,
// max_tokens cutting with finish_reason "length".
func TestLLMDSim_EchoMode(t *testing.T) {
	url, _ := startRun(t, "serve", "--model", "sim-model", "--mode", "echo", "--port", "0")
	c := simClient(t, url)
	ctx := context.Background()
	const said = "Please say this back to me, word for word."
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage(said)}
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-model", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0]; got.Message.Content != said || got.FinishReason != "stop" {
		t.Errorf("echo = %q (%s), want %q (stop)", got.Message.Content, got.FinishReason, said)
	}
	n := resp.Usage.CompletionTokens

	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "sim-model", Messages: msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var text strings.Builder
	chunks, usage := 0, int64(0)
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			chunks++
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if ch.Usage.CompletionTokens > 0 {
			usage = ch.Usage.CompletionTokens
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != said || usage != n || int64(chunks) != n {
		t.Errorf("stream = %q in %d chunks, usage %d; want %q in %d", text.String(), chunks, usage, said, n)
	}

	cut, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-model", Messages: msgs, MaxTokens: openai.Int(3)})
	if err != nil {
		t.Fatal(err)
	}
	if got := cut.Choices[0]; got.FinishReason != "length" || cut.Usage.CompletionTokens != 3 || !strings.HasPrefix(said, got.Message.Content) || got.Message.Content == "" {
		t.Errorf("max_tokens 3: %q (%s, %d tokens), want a prefix of the message, length, 3", got.Message.Content, got.FinishReason, cut.Usage.CompletionTokens)
	}

	cmpl, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "sim-model", MaxTokens: openai.Int(100),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("The quick brown fox")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmpl.Choices[0]; got.Text != "The quick brown fox" || got.FinishReason != "stop" {
		t.Errorf("completion echo = %q (%s)", got.Text, got.FinishReason)
	}
	ids, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "sim-model",
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{11, 22, 33}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids.Choices[0].Text; got != "11,22,33" {
		t.Errorf("token-id prompt echo = %q, want %q", got, "11,22,33")
	}

	// The Responses and Messages APIs are chats: their last input is echoed.
	for _, c := range []struct{ path, body, want string }{
		{"/v1/responses", `{"model":"sim-model","input":"echo via responses"}`, `"text":"echo via responses"`},
		{"/v1/messages", `{"model":"sim-model","max_tokens":50,"system":"s","messages":[{"role":"user","content":"echo via messages"}]}`, `"text":"echo via messages"`},
	} {
		resp, err := http.Post(url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s: %d %s, want %s", c.path, resp.StatusCode, raw, c.want)
		}
	}
}

// The simulator's failure types are answered with its statuses; its rate
// is a percentage.
func TestLLMDSim_FailureTypes(t *testing.T) {
	for _, c := range []struct {
		kind   string
		status int
	}{{"invalid_api_key", 401}, {"model_not_found", 404}, {"invalid_request", 400}, {"rate_limit", 429}, {"context_length", 400}, {"server_error", 500}} {
		t.Run(c.kind, func(t *testing.T) {
			url, _ := startRun(t, "serve", "--model", "sim-model", "--port", "0",
				"--failure-injection-rate", "100", "--failure-types", c.kind)
			resp, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"sim-model","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct {
					Message string `json:"message"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			raw, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != c.status || body.Error.Code != c.status || body.Error.Message == "" {
				t.Errorf("status %d body %s, want %d in vLLM's error shape", resp.StatusCode, raw, c.status)
			}
		})
	}
}

// --time-to-first-token and --inter-token-latency are what a lone stream
// measures.
func TestLLMDSim_LatencyFlags(t *testing.T) {
	const ttft, itl = 300 * time.Millisecond, 60 * time.Millisecond
	url, _ := startRun(t, "serve", "--model", "sim-model", "--port", "0",
		"--time-to-first-token", ttft.String(), "--inter-token-latency", itl.String())
	start := time.Now()
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"sim-model","prompt":"hello there","max_tokens":5,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var times []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: {") {
			times = append(times, time.Since(start))
		}
	}
	if len(times) != 5 {
		t.Fatalf("%d chunks, want 5", len(times))
	}
	// The floor is exact (the engine never delivers early); the ceiling
	// leaves room for a busy shared machine.
	if times[0] < ttft || times[0] > ttft+250*time.Millisecond {
		t.Errorf("first token after %v, want %v", times[0], ttft)
	}
	total := times[4] - times[0]
	if total < 4*itl-5*time.Millisecond || total > 4*itl+250*time.Millisecond {
		t.Errorf("4 inter-token gaps took %v, want %v", total, 4*itl)
	}
}
