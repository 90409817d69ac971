package api

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// The openai npm client (v6, scripts/npm-ref) against a real server:
// streamed tool calls assembled by its stream helper equal the
// non-streamed ones and validate against the zod-generated schemas (the
// SDK also parses them with zod), and chat.completions.parse with
// zodResponseFormat returns a parsed object.
func TestOpenAINodeSDK_ToolCallsAndParse(t *testing.T) {
	modules := testutil.NodeModules(t)
	env := toolEnv(t, nil)
	script, _ := filepath.Abs(filepath.Join("testdata", "openai_sdk.cjs"))
	cmd := exec.Command("node", script, env.URL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	type call struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Arguments string         `json:"arguments"`
		Parsed    map[string]any `json:"parsed"`
	}
	var res struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
		Stream  struct {
			Finish         string `json:"finish"`
			Calls          []call `json:"calls"`
			ArgumentDeltas int    `json:"argumentDeltas"`
		} `json:"stream"`
		Whole struct {
			Finish  string  `json:"finish"`
			Content *string `json:"content"`
			Calls   []call  `json:"calls"`
		} `json:"whole"`
		Parsed       map[string]any  `json:"parsed"`
		ParsedSchema json.RawMessage `json:"parsedSchema"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	s, w := res.Stream, res.Whole
	if s.Finish != "tool_calls" || w.Finish != "tool_calls" || len(s.Calls) < 2 || len(s.Calls) != len(w.Calls) ||
		w.Content == nil || *w.Content != "" || s.ArgumentDeltas < 10 {
		t.Fatalf("stream %+v / whole %+v", s, w)
	}
	for i := range s.Calls {
		if s.Calls[i].ID != w.Calls[i].ID || s.Calls[i].Name != w.Calls[i].Name || s.Calls[i].Arguments != w.Calls[i].Arguments {
			t.Fatalf("call %d: streamed %+v, whole %+v", i, s.Calls[i], w.Calls[i])
		}
		if s.Calls[i].Parsed == nil {
			t.Fatalf("call %d: the SDK did not parse the arguments: %+v", i, s.Calls[i])
		}
		if err := referenceCheck(referenceSchema(t, res.Schemas[s.Calls[i].Name]), s.Calls[i].Arguments); err != nil {
			t.Fatalf("call %d %s(%s): %v", i, s.Calls[i].Name, s.Calls[i].Arguments, err)
		}
	}
	parsed, _ := json.Marshal(res.Parsed)
	if res.Parsed == nil || res.Parsed["name"] == nil {
		t.Fatalf("parse returned %s", parsed)
	}
	if err := referenceCheck(referenceSchema(t, res.ParsedSchema), string(parsed)); err != nil {
		t.Fatalf("parsed %s: %v", parsed, err)
	}
	t.Logf("parsed object %s", parsed)
}

// openai-go v3's stream accumulator reports each finished tool call
// (JustFinishedToolCall) with the arguments the non-streamed answer has.
func TestOpenAIGoSDK_StreamedToolCalls(t *testing.T) {
	env := toolEnv(t, nil)
	c := env.sdkClient()
	var tools []map[string]any
	if err := json.Unmarshal([]byte(weatherTools), &tools); err != nil {
		t.Fatal(err)
	}
	params := openai.ChatCompletionNewParams{
		Model:      "mocker-model",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris, then book a trip")},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		Seed:       openai.Int(8),
	}
	for _, tool := range tools {
		fn := tool["function"].(map[string]any)
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: fn["name"].(string), Parameters: shared.FunctionParameters(fn["parameters"].(map[string]any)),
		}))
	}
	ctx := context.Background()
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if call, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, call)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	whole, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	calls := whole.Choices[0].Message.ToolCalls
	if len(finished) < 2 || len(finished) != len(calls) || whole.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("streamed %d finished calls, non-streamed %+v", len(finished), whole.Choices[0])
	}
	schemas := toolSchemas(t)
	for i, call := range finished {
		if call.ID != calls[i].ID || call.Name != calls[i].Function.Name || call.Arguments != calls[i].Function.Arguments {
			t.Errorf("call %d: streamed %+v, non-streamed %+v", i, call, calls[i])
		}
		if err := referenceCheck(schemas[call.Name], call.Arguments); err != nil {
			t.Errorf("call %d %s(%s): %v", i, call.Name, call.Arguments, err)
		}
	}
}
