package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// A client that stops reading fills its socket; its shard hands the stream
// to the stream's handler instead of waiting, and the other streams of the
// shard keep their pace.
func TestDelivery_SlowClientIsHandedBackAndOthersKeepTheirPace(t *testing.T) {
	env := startServer(t, map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 0.0, "fixed_decode_ms": 1.0, "max_unflushed_tokens": 100000})
	slow := env.startNonReader()
	testutil.WaitFor(t, 10*time.Second, "the slow stream to be handed back", func() bool {
		return env.srv.HandedBack() >= 1
	})

	// Every shard gets some of these streams (round robin), so a shard
	// waiting on the slow client would stall them.
	const streams, tokens = 8, 300
	var wg sync.WaitGroup
	took := make([]time.Duration, streams)
	bodies := make([]string, streams)
	for i := range streams {
		wg.Go(func() {
			start := time.Now()
			r := env.post("/v1/chat/completions", helloChat+fmt.Sprintf(`,"max_tokens":%d,"stream":true}`, tokens))
			took[i] = time.Since(start)
			bodies[i] = r.Body
		})
	}
	wg.Wait()
	for i := range streams {
		if got := strings.Count(bodies[i], `"content":`); got < tokens {
			t.Errorf("stream %d: %d content chunks, want %d", i, got, tokens)
		}
		if !strings.HasSuffix(bodies[i], "data: [DONE]\n\n") {
			t.Errorf("stream %d does not end with [DONE]", i)
		}
		// 300 passes of 1 ms; 3 s leaves room for -race on a busy
		// machine, and a shard stuck on the slow client would hold
		// these until its write deadline (60 s).
		if took[i] > 3*time.Second {
			t.Errorf("stream %d took %v, want about %d ms", i, took[i], tokens)
		}
	}
	if env.srv.HandedBack() != 1 {
		t.Errorf("%d streams handed back, want only the slow one", env.srv.HandedBack())
	}
	_ = slow.Close() // the handler's pending write fails; its KV is freed
	testutil.WaitFor(t, 5*time.Second, "the server to be idle", env.idle)
}

// Streams written straight to the connection are framed as net/http
// frames them: Go's own HTTP client reads them back to back over one
// kept-alive connection, and their bodies equal those a server without
// raw delivery (every stream written by its handler through net/http)
// sends — with chunks rendered ahead (one token per pass at a 1 ms pace)
// and without (the variants rendering ahead does not take).
func TestDelivery_RawStreamsAreValidChunkedHTTPAndKeepTheConnection(t *testing.T) {
	overlay := map[string]any{"speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 1.0, "fixed_decode_ms": 1.0, "reasoning": map[string]any{"thinking_ratio": 0.5}}
	raw := startServer(t, overlay)
	plain := startServerConn(t, testConfig(t, overlay), func(r int) engine.Options { return engine.Options{Rank: r} },
		settings.Deps{Now: fixedNow}, nil) // no ConnContext: net/http writes every stream

	chat := func(extra string) string {
		return `{"messages":[{"role":"user","content":"Tell me a story."}],"stream":true` + extra + `}`
	}
	requests := []string{
		chat(`,"max_tokens":40`),
		chat(`,"max_tokens":30,"return_token_ids":true,"stream_options":{"include_usage":true}`),
		chat(`,"max_tokens":1`),
		chat(`,"max_tokens":2`),
		chat(`,"max_tokens":60,"ignore_eos":false`),
		chat(`,"max_tokens":25,"n":2`),
		chat(`,"max_tokens":20,"logprobs":true,"top_logprobs":2`),
		chat(`,"max_tokens":20,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`),
		`{"prompt":"Once upon a time","max_tokens":25,"stream":true,"stream_options":{"include_usage":true}}`,
	}
	paths := make([]string, len(requests))
	for i := range paths {
		paths[i] = "/v1/chat/completions"
	}
	paths[len(paths)-1] = "/v1/completions"
	streamBoth := func(url string) []string {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var out []string
		for i, body := range requests {
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				paths[i], len(body), body)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			if resp.StatusCode != 200 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
				t.Fatalf("response %d: status %d, transfer encoding %v", i, resp.StatusCode, resp.TransferEncoding)
			}
			b, err := io.ReadAll(resp.Body) // net/http's chunked reader: strict framing
			if err != nil {
				t.Fatalf("response %d body: %v", i, err)
			}
			resp.Body.Close()
			if resp.Close {
				t.Fatalf("response %d closes the connection", i)
			}
			out = append(out, string(b))
		}
		return out
	}
	// Response ids are random per request; everything else is seeded.
	ids := regexp.MustCompile(`"id":"(chat)?cmpl-[0-9a-f]+"`)
	got, want := streamBoth(raw.URL), streamBoth(plain.URL)
	for i := range requests {
		g, w := ids.ReplaceAllString(got[i], `"id":"x"`), ids.ReplaceAllString(want[i], `"id":"x"`)
		if g != w {
			t.Errorf("request %d: raw delivery body differs from net/http's:\n got %q\nwant %q", i, g, w)
		}
		if !strings.HasSuffix(g, "data: [DONE]\n\n") {
			t.Errorf("request %d: body does not end with [DONE]", i)
		}
	}
	// At a 1 ms pace most passes bring one token per stream, so the
	// plain chat streams give dozens; a loaded machine batches some.
	if n := raw.srv.RenderedAhead(); n < 10 {
		t.Errorf("%d chunks were rendered ahead; the plain chat streams alone should give dozens", n)
	}
}

// The stream written last in one pass is not last in the next, and over
// many passes every stream's place in the write order averages out near
// the middle of the pass.
func TestNextFirst_WriteOrderRotatesOverEveryStream(t *testing.T) {
	for n := 1; n <= 300; n++ {
		passes := 20 * n
		sum := make([]float64, n) // position of stream k summed over passes
		first, lastWritten := 0, -1
		for range passes {
			first = pipeline.NextFirst(first, n)
			last := (first + n - 1) % n
			if n > 1 && last == lastWritten {
				t.Fatalf("n=%d: stream %d written last in two passes in a row", n, last)
			}
			lastWritten = last
			for k := range n {
				sum[k] += float64((k - first + n) % n)
			}
		}
		if n < 4 {
			continue
		}
		for k := range n {
			if mean := sum[k] / float64(passes) / float64(n-1); mean < 0.3 || mean > 0.7 {
				t.Fatalf("n=%d: stream %d's mean place in the write order is %.2f of the pass", n, k, mean)
			}
		}
	}
}
