package vllm_test

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// paced is a configuration whose streams take a while: 20 ms per decode
// pass in real time.
var paced = map[string]any{"speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 1, "fixed_decode_ms": 20}

// kvInUse scrapes the worker's KV usage and running requests.
func (e *env) kvInUse(t *testing.T) (usage, running float64) {
	x := testutil.Scrape(t, nil, e.url+"/metrics", "")
	return x.Value("vllm:kv_cache_usage_perc", nil), x.Value("vllm:num_requests_running", nil)
}

// startLong starts a long streaming Generate and waits for its first
// chunks: its sequence runs and holds KV blocks.
func (e *env) startLong(t *testing.T, ctx context.Context, id string) vllmpbStream {
	t.Helper()
	st, err := e.client.Generate(ctx, tokenized(id, seq(1, 300), &vllmpb.SamplingParams{MaxTokens: u32(2000), IgnoreEos: true}, true))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	if u, r := e.kvInUse(t); u <= 0 || r != 1 {
		t.Fatalf("while streaming: kv usage %v, running %v", u, r)
	}
	return st
}

type vllmpbStream interface {
	Recv() (*vllmpb.GenerateResponse, error)
}

// kvFreed waits (bounded, well under one more pass of the 2,000-token
// stream) until the KV blocks and the running slot are given back.
func (e *env) kvFreed(t *testing.T, what string) {
	t.Helper()
	testutil.WaitUntil(t, 2*time.Second, func() string {
		if u, r := e.kvInUse(t); u != 0 || r != 0 {
			return what + ": KV usage " + ftoa(u) + ", running " + ftoa(r)
		}
		return ""
	})
}

// A client that cancels its call frees the sequence's KV at once, like an
// HTTP client that disconnects.
func TestCancelFreesKV(t *testing.T) {
	e := start(t, paced)
	ctx, cancel := context.WithCancel(context.Background())
	st := e.startLong(t, ctx, "c")
	cancel()
	var err error
	for err == nil { // chunks already received may come first
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Canceled {
		t.Errorf("after cancel: %v", err)
	}
	e.kvFreed(t, "after cancel")
}

// A deadline ends the call with DEADLINE_EXCEEDED and frees its KV.
func TestDeadlineFreesKV(t *testing.T) {
	e := start(t, paced)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	st := e.startLong(t, ctx, "d")
	var err error
	for err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("at the deadline: %v", err)
	}
	e.kvFreed(t, "after the deadline")
}

// Abort ends the named request's stream with finish_reason "abort" and
// frees its KV; other requests and unknown ids are untouched.
func TestAbortFreesKV(t *testing.T) {
	e := start(t, paced)
	ctx := ctxTimeout(t, 30*time.Second)
	st := e.startLong(t, ctx, "victim")
	if _, err := e.client.Abort(ctx, &vllmpb.AbortRequest{RequestIds: []string{"unknown", "victim"}}); err != nil {
		t.Fatal(err)
	}
	var last *vllmpb.GenerateResponse
	for {
		r, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("aborted stream: %v", err)
		}
		last = r
	}
	if c := last.GetComplete(); c == nil || c.GetFinishReason() != "abort" {
		t.Errorf("aborted stream ended with %v", last)
	}
	e.kvFreed(t, "after Abort")
	// The server goes on serving.
	g, err := e.generate(t, ctx, tokenized("next", seq(1, 8), &vllmpb.SamplingParams{MaxTokens: u32(3)}, true))
	if err != nil || g.complete.GetFinishReason() == "abort" || len(g.ids()) != 3 {
		t.Errorf("after Abort: %v, %+v", err, g.complete)
	}
}
