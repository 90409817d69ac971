package api

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// The official Go SDK (openai-go v3) reads /v1/responses too: the
// non-streamed response, and a stream whose sequence numbers count from 0,
// whose deltas add up to the text and whose response.completed carries it.
func TestGoSDK_ResponsesCreateAndStream(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model:           "mocker-model",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello!")},
		MaxOutputTokens: openai.Int(6),
		Instructions:    openai.String("Be brief."),
	}
	resp, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	want := resp.OutputText()
	if want == "" || resp.Status != "incomplete" || resp.Usage.OutputTokens != 6 || resp.Instructions.OfString != "Be brief." {
		t.Errorf("response: text %q status %q usage %+v instructions %+v", want, resp.Status, resp.Usage, resp.Instructions)
	}
	stream := c.Responses.NewStreaming(ctx, params)
	var deltas, final string
	var seq int64
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("%s: sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		switch ev.Type {
		case "response.output_text.delta":
			deltas += ev.Delta
		case "response.completed":
			final = ev.AsResponseCompleted().Response.OutputText()
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != want || final != want {
		t.Errorf("stream: deltas %q, completed %q; non-streamed %q", deltas, final, want)
	}
}
