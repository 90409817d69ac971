package api

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// runNodeSDK runs scenarios of testdata/sdk/surfaces.mjs (the official
// npm SDKs: openai v6, @anthropic-ai/sdk) against the test server and
// decodes what each scenario saw.
func runNodeSDK(t *testing.T, env *testEnv, scenarios ...string) map[string]json.RawMessage {
	t.Helper()
	modules := testutil.NodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.SkipOrFail(t, "node not found: %v", err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "sdk", "surfaces.mjs"))
	cmd := exec.Command(node, append([]string{script, env.URL}, scenarios...)...)
	cmd.Env = append(cmd.Environ(), "SDK_MODULES="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%.4000s\n%s", scenarios, err, out, stderr.String())
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v\n%.2000s", err, out)
	}
	return res
}

func decodeInto[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	return v
}

// sdkKeyed is the configuration of the SDK tests: an API key, so that the
// OpenAI SDK authenticates with its Bearer token and the Anthropic SDK with
// x-api-key.
var sdkKeyed = map[string]any{"api_key": []any{"sk-test"}}

func TestNodeSDK_ResponsesTextCreateAndStream(t *testing.T) {
	env := startServer(t, sdkKeyed)
	type usage struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	}
	got := decodeInto[struct {
		Create struct {
			ID, Status, Text string
			Usage            usage
			Output           []string
		}
		Stream struct {
			Deltas, Types []string
			Text, Status  string
			Usage         usage
		}
	}](t, runNodeSDK(t, env, "responses_text")["responses_text"])

	// The server's own answer to the same request, read without an SDK.
	direct := jsonOf(t, env.post("/v1/responses", `{"model":"mocker-model","input":"Hello!","max_output_tokens":5}`,
		"Authorization", "Bearer sk-test").Body)
	want := direct["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
	c, s := got.Create, got.Stream
	if c.Text != want || s.Text != want || strings.Join(s.Deltas, "") != want {
		t.Errorf("texts: create %q, stream %q, deltas %q; server %q", c.Text, s.Text, s.Deltas, want)
	}
	if len(s.Deltas) != 5 {
		t.Errorf("deltas = %d, want one per token (5)", len(s.Deltas))
	}
	if c.Status != "incomplete" || s.Status != "incomplete" || !strings.HasPrefix(c.ID, "resp_") {
		t.Errorf("status %q/%q id %q (max_output_tokens reached: incomplete)", c.Status, s.Status, c.ID)
	}
	if c.Usage.OutputTokens != 5 || c.Usage.InputTokens == 0 || c.Usage.TotalTokens != c.Usage.InputTokens+5 ||
		s.Usage.InputTokens != c.Usage.InputTokens || s.Usage.OutputTokens != 5 {
		t.Errorf("usage: create %+v stream %+v", c.Usage, s.Usage)
	}
	// The repeated prompt hit the prefix cache (full 64-token blocks only,
	// so a short prompt reports 0 either way; the field must be there).
	wantTypes := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(s.Types, wantTypes) {
		t.Errorf("event types =\n%v\nwant\n%v", s.Types, wantTypes)
	}
}

func TestNodeSDK_ResponsesReasoning(t *testing.T) {
	env := startServer(t, map[string]any{"api_key": []any{"sk-test"}, "reasoning": map[string]any{"thinking_ratio": 0.5}})
	type item struct{ Type, Text string }
	got := decodeInto[struct {
		Create struct {
			Items []item
			Usage struct {
				OutputTokens        int `json:"output_tokens"`
				OutputTokensDetails struct {
					ReasoningTokens int `json:"reasoning_tokens"`
				} `json:"output_tokens_details"`
			}
		}
		Stream struct {
			Items     []item
			Reasoning string
		}
	}](t, runNodeSDK(t, env, "responses_reasoning")["responses_reasoning"])
	c, s := got.Create, got.Stream
	if len(c.Items) != 2 || c.Items[0].Type != "reasoning" || c.Items[1].Type != "message" ||
		c.Items[0].Text == "" || c.Items[1].Text == "" {
		t.Fatalf("create items = %+v, want reasoning then message", c.Items)
	}
	if !slices.Equal(c.Items, s.Items) || s.Reasoning != c.Items[0].Text {
		t.Errorf("stream items %+v (reasoning deltas %q), create %+v", s.Items, s.Reasoning, c.Items)
	}
	// 8 tokens, ratio 0.5: a 4-token framing (start, 2 reasoning, end).
	if r := c.Usage.OutputTokensDetails.ReasoningTokens; r != 2 || c.Usage.OutputTokens != 8 {
		t.Errorf("usage: %d output, %d reasoning tokens; want 8 and 2", c.Usage.OutputTokens, r)
	}
}

func TestNodeSDK_EmbeddingsFloatAndBase64(t *testing.T) {
	env := startServer(t, sdkKeyed)
	got := decodeInto[struct {
		Float, Default [][]float64
		Base64         string
		Usage          struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}](t, runNodeSDK(t, env, "embeddings")["embeddings"])
	if len(got.Float) != 2 || len(got.Float[0]) != 1024 || len(got.Default) != 2 {
		t.Fatalf("shapes: float %d, default %d", len(got.Float), len(got.Default))
	}
	for i := range got.Float {
		for k := range got.Float[i] {
			if got.Float[i][k] != got.Default[i][k] {
				t.Fatalf("item %d component %d: float %v, SDK-decoded base64 %v", i, k, got.Float[i][k], got.Default[i][k])
			}
		}
	}
	raw, err := base64.StdEncoding.DecodeString(got.Base64)
	if err != nil || len(raw) != 32 {
		t.Fatalf("base64 %q: %v (%d bytes, want 8 float32)", got.Base64, err, len(raw))
	}
	var n float64
	for k := range 8 {
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])))
		n += f * f
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("dimensions 8 vector norm² = %v", n)
	}
	if got.Usage.PromptTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens {
		t.Errorf("usage = %+v", got.Usage)
	}
}

func TestNodeSDK_MessagesTextCreateAndStream(t *testing.T) {
	env := startServer(t, sdkKeyed)
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	got := decodeInto[struct {
		Create struct {
			Text       string
			StopReason string `json:"stop_reason"`
			Usage      usage
			Types      []string
		}
		Stream struct {
			Text       string
			Deltas     []string
			StopReason string `json:"stop_reason"`
			Usage      usage
		}
	}](t, runNodeSDK(t, env, "messages_text")["messages_text"])
	direct := jsonOf(t, env.post("/v1/messages", `{"model":"mocker-model","max_tokens":6,"system":"Be brief.","messages":[{"role":"user","content":"Hello!"}]}`,
		"X-Api-Key", "sk-test").Body)
	want := direct["content"].([]any)[0].(map[string]any)["text"].(string)
	c, s := got.Create, got.Stream
	if c.Text != want || s.Text != want || strings.Join(s.Deltas, "") != want || len(s.Deltas) != 6 {
		t.Errorf("texts: create %q stream %q deltas %q; server %q", c.Text, s.Text, s.Deltas, want)
	}
	if c.StopReason != "max_tokens" || s.StopReason != "max_tokens" {
		t.Errorf("stop reasons %q %q", c.StopReason, s.StopReason)
	}
	if c.Usage.OutputTokens != 6 || c.Usage != s.Usage || c.Usage.InputTokens == 0 {
		t.Errorf("usage create %+v stream %+v", c.Usage, s.Usage)
	}
}

func TestNodeSDK_MessagesErrorsInAnthropicShape(t *testing.T) {
	env := startServer(t, sdkKeyed)
	got := decodeInto[struct {
		Thrown               bool
		Status               int
		Class, Type, Message string
	}](t, runNodeSDK(t, env, "messages_errors")["messages_errors"])
	if !got.Thrown || got.Status != 400 || got.Class != "BadRequestError" || got.Type != "invalid_request_error" ||
		!strings.Contains(got.Message, "max_tokens") {
		t.Errorf("error = %+v", got)
	}
}

// weatherSchema is the schema surfaces.mjs gives its tools and its
// json_schema format.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo","Lima"]},` +
	`"days":{"type":"integer","minimum":1,"maximum":7},"units":{"type":"string","enum":["c","f"]}},` +
	`"required":["city","days"],"additionalProperties":false}`

// validWeather validates v with an independent JSON Schema implementation.
func validWeather(t *testing.T, what string, v json.RawMessage) {
	t.Helper()
	if err := schemagentest.Check(schemagentest.Reference(t, []byte(weatherSchema)), string(v)); err != nil {
		t.Errorf("%s does not validate: %v\n%s", what, err, v)
	}
}

// sdkTools is the configuration of the tool-call SDK tests: the API key,
// and auto tool choice for the turn after a tool result.
var sdkTools = map[string]any{"api_key": []any{"sk-test"}, "enable_auto_tool_choice": true, "tool_call_parser": "hermes"}

func TestNodeSDK_ResponsesFunctionCallAndJSONSchema(t *testing.T) {
	env := startServer(t, sdkTools)
	res := runNodeSDK(t, env, "responses_function_call", "responses_json_schema")
	type call struct {
		Name      string
		CallID    string `json:"call_id"`
		Arguments json.RawMessage
	}
	fc := decodeInto[struct {
		Create, Stream    []call
		StreamedArguments string `json:"streamed_arguments"`
	}](t, res["responses_function_call"])
	if len(fc.Create) != 1 || len(fc.Stream) != 1 {
		t.Fatalf("calls: create %+v stream %+v", fc.Create, fc.Stream)
	}
	for _, c := range append(fc.Create, fc.Stream...) {
		if c.Name != "get_weather" || !strings.HasPrefix(c.CallID, "call_") {
			t.Errorf("call = %+v", c)
		}
		validWeather(t, "arguments", c.Arguments)
	}
	if fc.Create[0].CallID != fc.Stream[0].CallID || string(fc.Create[0].Arguments) != string(fc.Stream[0].Arguments) {
		t.Errorf("same request, different calls: %+v / %+v", fc.Create[0], fc.Stream[0])
	}
	validWeather(t, "streamed argument fragments", json.RawMessage(fc.StreamedArguments))

	js := decodeInto[struct{ Create, Stream json.RawMessage }](t, res["responses_json_schema"])
	validWeather(t, "json_schema output (create)", js.Create)
	validWeather(t, "json_schema output (stream)", js.Stream)
}

func TestNodeSDK_MessagesToolUse(t *testing.T) {
	env := startServer(t, sdkTools)
	type use struct {
		Name, ID string
		Input    json.RawMessage
	}
	got := decodeInto[struct {
		Create struct {
			Uses       []use
			StopReason string `json:"stop_reason"`
		}
		Stream struct {
			Uses        []use
			StopReason  string `json:"stop_reason"`
			PartialJSON string `json:"partial_json"`
		}
		AfterResult struct {
			StopReason string `json:"stop_reason"`
			Types      []string
		} `json:"after_result"`
	}](t, runNodeSDK(t, env, "messages_tool_use")["messages_tool_use"])
	c, s := got.Create, got.Stream
	if len(c.Uses) != 1 || len(s.Uses) != 1 || c.StopReason != "tool_use" || s.StopReason != "tool_use" {
		t.Fatalf("create %+v, stream %+v", c, s)
	}
	validWeather(t, "tool_use input (create)", c.Uses[0].Input)
	validWeather(t, "tool_use input (stream)", s.Uses[0].Input)
	validWeather(t, "input_json_delta fragments", json.RawMessage(s.PartialJSON))
	if c.Uses[0].ID != s.Uses[0].ID || !strings.HasPrefix(c.Uses[0].ID, "chatcmpl-tool-") {
		t.Errorf("tool_use ids %q %q", c.Uses[0].ID, s.Uses[0].ID)
	}
	if a := got.AfterResult; len(a.Types) == 0 || (a.StopReason != "max_tokens" && a.StopReason != "tool_use" && a.StopReason != "end_turn") {
		t.Errorf("turn after the tool result: %+v", a)
	}
}
