package sglang_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestGenerateGivesTheHTTPTokens: for a fixed seed, the ids streamed over
// gRPC (and answered whole without stream) are the ids SGLang's HTTP
// /generate answers for the same input ids and budget; the chunks count
// cumulatively and the stream ends with its GenerateComplete.
func TestGenerateGivesTheHTTPTokens(t *testing.T) {
	e := start(t, nil, workerOpts())
	prompt := ids(1000, 40)
	want := e.httpGenerate(t, prompt, 24)
	if len(want) != 24 {
		t.Fatalf("HTTP /generate gave %d tokens, want 24", len(want))
	}

	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "g-stream", Stream: true,
		Tokenized: &pb.TokenizedInput{InputIds: prompt}, SamplingParams: sampling(24)})
	if err != nil {
		t.Fatal(err)
	}
	got, resps, err := collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("streamed ids\n%v\nHTTP ids\n%v", got, want)
	}
	n := 0
	for i, r := range resps[:len(resps)-1] {
		c := r.GetChunk()
		if c == nil || r.GetRequestId() != "g-stream" {
			t.Fatalf("response %d is %v, want a chunk of g-stream", i, r)
		}
		n += len(c.GetTokenIds())
		if int(c.GetCompletionTokens()) != n || c.GetPromptTokens() != 40 {
			t.Fatalf("chunk %d: completion_tokens %d prompt_tokens %d, want %d and 40", i, c.GetCompletionTokens(), c.GetPromptTokens(), n)
		}
	}
	done := resps[len(resps)-1].GetComplete()
	if done == nil || done.GetFinishReason() != "length" || done.GetCompletionTokens() != 24 || done.GetPromptTokens() != 40 {
		t.Fatalf("last response %v, want a GenerateComplete with finish_reason length and 24 tokens", resps[len(resps)-1])
	}
	last := resps[len(resps)-2].GetChunk().GetTokenIds()
	if !slices.Equal(done.GetOutputIds(), last) {
		t.Errorf("the stream's GenerateComplete output_ids %v, want the last chunk's %v (SGLang's servicer)", done.GetOutputIds(), last)
	}

	s, err = e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "g-whole",
		Tokenized: &pb.TokenizedInput{InputIds: prompt}, SamplingParams: sampling(24)})
	if err != nil {
		t.Fatal(err)
	}
	_, resps, err = collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 || !slices.Equal(resps[0].GetComplete().GetOutputIds(), want) {
		t.Fatalf("non-streamed answer %v, want one GenerateComplete with %v", resps, want)
	}
	if c := resps[0].GetComplete().GetCachedTokens(); c == 0 {
		t.Errorf("the repeated prompt had no cached tokens")
	}
}

// TestGenerateSeveralSamples: n > 1 streams every choice, tagged with its
// index, each ending with its own GenerateComplete.
func TestGenerateSeveralSamples(t *testing.T) {
	e := start(t, nil, workerOpts())
	sp := sampling(6)
	sp.N = 3
	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "n3", Stream: true,
		Tokenized: &pb.TokenizedInput{InputIds: ids(500, 20)}, SamplingParams: sp})
	if err != nil {
		t.Fatal(err)
	}
	_, resps, err := collect(s)
	if err != nil {
		t.Fatal(err)
	}
	per := map[uint32][]uint32{}
	completes := map[uint32]bool{}
	for _, r := range resps {
		if c := r.GetChunk(); c != nil {
			per[c.GetIndex()] = append(per[c.GetIndex()], c.GetTokenIds()...)
		}
		if c := r.GetComplete(); c != nil {
			completes[c.GetIndex()] = true
		}
	}
	if len(per) != 3 || len(completes) != 3 {
		t.Fatalf("choices %v, completes %v: want indexes 0..2", per, completes)
	}
	for i, toks := range per {
		if len(toks) != 6 {
			t.Errorf("choice %d has %d tokens, want 6", i, len(toks))
		}
	}
	if slices.Equal(per[0], per[1]) && slices.Equal(per[1], per[2]) {
		t.Errorf("the three samples are identical: %v", per[0])
	}
}

// TestAbortAndCancelFreeKV: Abort ends the running stream with SGLang's
// INTERNAL "Request aborted", a client cancellation and a deadline end it
// as gRPC reports them, and each time the request's KV is free before the
// engine's next pass or two (as an HTTP disconnect).
func TestAbortAndCancelFreeKV(t *testing.T) {
	e := start(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 20.0, "num_gpu_blocks": 4096, "speedup_ratio": 1}, workerOpts())
	base := 2000
	running := func(id string, c context.Context) (recv func() error) {
		base += 1000 // a prompt of its own: no prefix hit on the last one's cached pages
		s, err := e.c.Generate(c, &pb.GenerateRequest{RequestId: id, Stream: true,
			Tokenized: &pb.TokenizedInput{InputIds: ids(base, 300)}, SamplingParams: sampling(4000)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatalf("%s: first chunk: %v", id, err)
		}
		// The rank's gauges follow the pass that delivered the chunk.
		testutil.WaitFor(t, time.Second, id+": its KV in use", func() bool { return e.usedTokens(t) >= 300 })
		return func() error {
			for {
				if _, err := s.Recv(); err != nil {
					return err
				}
			}
		}
	}
	freed := func(what string) {
		t.Helper()
		testutil.WaitFor(t, 200*time.Millisecond, what+": KV freed", func() bool { return e.usedTokens(t) == 0 })
	}

	recv := running("to-abort", ctx(t))
	r, err := e.c.Abort(ctx(t), &pb.AbortRequest{RequestId: "to-abort"})
	if err != nil || !r.GetSuccess() {
		t.Fatalf("Abort = %v, %v", r, err)
	}
	if err := recv(); status.Code(err) != codes.Internal || status.Convert(err).Message() != "Request aborted" {
		t.Fatalf("aborted stream ended with %v, want INTERNAL Request aborted", err)
	}
	freed("abort")

	c, cancel := context.WithCancel(ctx(t))
	recv = running("to-cancel", c)
	cancel()
	if err := recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled stream ended with %v, want CANCELED", err)
	}
	freed("client cancel")

	c, cancel = context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	recv = running("to-expire", c)
	if err := recv(); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("expired stream ended with %v, want DEADLINE_EXCEEDED", err)
	}
	freed("deadline")

	// Abort of an id that is not running: SGLang's servicer answers
	// success too (it only forwards the abort to the scheduler).
	if r, err := e.c.Abort(ctx(t), &pb.AbortRequest{RequestId: "never-ran"}); err != nil || !r.GetSuccess() {
		t.Errorf("Abort of an unknown id = %v, %v", r, err)
	}
}
