package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// sdkClient is an official OpenAI Go client pointed at the test server.
func (e *testEnv) sdkClient(opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(e.URL + "/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(e.client),
		option.WithMaxRetries(0),
	}
	return openai.NewClient(append(base, opts...)...)
}

var helloMessages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")}

func TestSDK_Chat(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	ctx := context.Background()

	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     "mocker-model",
		Messages:  helloMessages,
		MaxTokens: openai.Int(4),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != " puzo bevi funa jita" ||
		resp.Choices[0].FinishReason != "length" {
		t.Errorf("response = %+v", resp.Choices)
	}
	if resp.Usage.PromptTokens != 11 || resp.Usage.CompletionTokens != 4 || resp.Usage.TotalTokens != 15 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Model != "mocker-model" {
		t.Errorf("id/object/model = %q %q %q", resp.ID, resp.Object, resp.Model)
	}

	// n = 2 (S18): choice 1 has its own planned output.
	resp, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(4), N: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 2 || resp.Choices[0].Message.Content != " puzo bevi funa jita" ||
		resp.Choices[1].Message.Content != " zulu jopi rozi mubu" || resp.Usage.CompletionTokens != 8 {
		t.Errorf("n=2: %+v usage %+v", resp.Choices, resp.Usage)
	}

	// A stop string cuts the text before it.
	resp, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(4),
		Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{" fu"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content != " puzo bevi" || ch.FinishReason != "stop" || resp.Usage.CompletionTokens != 3 {
		t.Errorf("stop: %q %q usage %+v", ch.Message.Content, ch.FinishReason, resp.Usage)
	}
	if got := ch.JSON.ExtraFields["stop_reason"].Raw(); got != `" fu"` {
		t.Errorf("stop_reason = %s", got)
	}
}

func TestSDK_ChatStream(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(4), N: openai.Int(2),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	texts := map[int64]string{}
	finish := map[int64]string{}
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, ch := range chunk.Choices {
			texts[ch.Index] += ch.Delta.Content
			if ch.FinishReason != "" {
				finish[ch.Index] = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if texts[0] != " puzo bevi funa jita" || texts[1] != " zulu jopi rozi mubu" {
		t.Errorf("texts = %v", texts)
	}
	if finish[0] != "length" || finish[1] != "length" {
		t.Errorf("finish = %v", finish)
	}
	if u := acc.Usage; u.PromptTokens != 11 || u.CompletionTokens != 8 || u.TotalTokens != 19 {
		t.Errorf("usage = %+v", u)
	}
}

func TestSDK_Completions(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	ctx := context.Background()
	resp, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "mocker-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{11, 12, 13, 14}},
		MaxTokens: openai.Int(4),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Text != " huvo baji neru fubu" || resp.Choices[0].FinishReason != "length" ||
		resp.Usage.PromptTokens != 4 || resp.Usage.CompletionTokens != 4 {
		t.Errorf("completion = %+v usage %+v", resp.Choices, resp.Usage)
	}

	// Two prompts × n 2: choice index = prompt_index × n + choice.
	resp, err = c.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "mocker-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokenArrays: [][]int64{{11, 12, 13, 14}, {1, 94002, 18, 38422, 35354, 2, 18, 1, 120736, 33288, 18}}},
		MaxTokens: openai.Int(4),
		N:         openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{" huvo baji neru fubu", "", " puzo bevi funa jita", " zulu jopi rozi mubu"}
	if len(resp.Choices) != 4 {
		t.Fatalf("choices = %d", len(resp.Choices))
	}
	for i, ch := range resp.Choices {
		if ch.Index != int64(i) || (want[i] != "" && ch.Text != want[i]) {
			t.Errorf("choice %d = %d %q, want %q", i, ch.Index, ch.Text, want[i])
		}
	}
	if resp.Usage.PromptTokens != 15 || resp.Usage.CompletionTokens != 16 {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// Streamed, with the usage chunk.
	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:     "mocker-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{11, 12, 13, 14}},
		MaxTokens: openai.Int(4),
		Stop:      openai.CompletionNewParamsStopUnion{OfString: openai.String("neru")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{
			IncludeUsage: openai.Bool(true),
		},
	})
	var text, reason string
	var usage openai.CompletionUsage
	for stream.Next() {
		chunk := stream.Current()
		for _, ch := range chunk.Choices {
			text += ch.Text
			if ch.FinishReason != "" {
				reason = string(ch.FinishReason)
			}
		}
		if chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
			usage = chunk.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != " huvo baji " || reason != "stop" || usage.CompletionTokens != 3 || usage.PromptTokens != 4 {
		t.Errorf("stream: %q %q %+v", text, reason, usage)
	}
}

func TestSDK_Errors(t *testing.T) {
	env := startServer(t, map[string]any{"api_key": []any{"sk-test"}})
	ctx := context.Background()
	check := func(t *testing.T, err error, status int, wantMsg string) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error = %v (%T), want *openai.Error", err, err)
		}
		if apiErr.StatusCode != status {
			t.Errorf("status = %d, want %d", apiErr.StatusCode, status)
		}
		if wantMsg != "" && apiErr.Message != wantMsg {
			t.Errorf("message = %q, want %q", apiErr.Message, wantMsg)
		}
	}

	c := env.sdkClient()
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, N: openai.Int(1000),
	})
	check(t, err, 400, "n must be at most 128, got 1000.")

	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: helloMessages})
	check(t, err, 404, "The model `gpt-4o` does not exist.")

	// 401 has vLLM's flat body {"error":"Unauthorized"},
	// which the SDK cannot decode into *openai.Error: it reports the decoding
	// error, and the response says 401.
	var httpResp *http.Response
	bad := env.sdkClient(option.WithAPIKey("wrong"), option.WithResponseInto(&httpResp))
	_, err = bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mocker-model", Messages: helloMessages})
	if err == nil || httpResp == nil || httpResp.StatusCode != 401 {
		t.Errorf("wrong key: err %v, response %v", err, httpResp)
	} else if b, _ := io.ReadAll(httpResp.Body); string(b) != `{"error":"Unauthorized"}` {
		t.Errorf("401 body = %s", b)
	}

	// The stream variant reports the error before any chunk.
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(0),
	})
	for stream.Next() {
		t.Error("unexpected chunk")
	}
	check(t, stream.Err(), 400, "max_tokens must be at least 1, got 0.")

	// The server still serves.
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mocker-model", Messages: helloMessages, MaxTokens: openai.Int(4),
	})
	if err != nil || resp.Choices[0].Message.Content != " puzo bevi funa jita" {
		t.Errorf("after errors: %v %+v", err, resp)
	}
}

func TestSDK_Models(t *testing.T) {
	env := startServer(t, map[string]any{"served_model_name": []any{"a", "b"}, "model": "root-model"})
	c := env.sdkClient()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != "a" || page.Data[1].ID != "b" || page.Data[0].OwnedBy != "vllm" {
		t.Errorf("models = %+v", page.Data)
	}
}
