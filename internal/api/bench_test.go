package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// discardWriter is an http.ResponseWriter that drops the body but supports
// Flush and SetWriteDeadline like net/http's, so the benchmark measures the
// render + write path without network I/O.
type discardWriter struct {
	h       http.Header
	n       int64
	writes  int
	flushes int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(int)     {}
func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += int64(len(b))
	w.writes++
	return len(b), nil
}
func (w *discardWriter) Flush()                           { w.flushes++ }
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// benchJob builds a streaming job of `choices` sequences with `tokens`
// planned tokens each, detached from any engine.
func benchJob(b *testing.B, chat bool, choices, tokens int, logprobs bool) (*job, *streamer, *discardWriter) {
	b.Helper()
	cfg := testConfig(b, nil)
	s := NewServer(cfg, make([]*engine.Engine, 1), Deps{})
	g := &genRequest{chat: chat, model: "mocker-model", baseID: "0123456789abcdef0123456789abcdef",
		created: 1760000000, stream: true, n: choices, rank: 0, logprobs: logprobs, topLogprobs: 2,
		prompts: []promptSpec{{ids: []uint32{1, 94002, 18, 38422, 35354, 2, 18, 1, 120736, 33288, 18}, m: tokens}}}
	j := &job{s: s, g: g, ch: make([]choice, choices), reqs: make([]engine.Request, choices), remaining: choices}
	p := s.planParams(g)
	p.MaxTokens, p.SetsMax = tokens, true
	for c := range choices {
		p.Choice = c
		j.ch[c] = choice{plan: plan.Plan(p)}
	}
	w := &discardWriter{h: http.Header{}}
	return j, newStreamer(j, w), w
}

// benchmarkSSE streams b.N tokens in drains of `batch` tokens spread over
// `choices` sequences: each drain is rendered into the reused buffer and
// written with one Write and one Flush.
func benchmarkSSE(b *testing.B, chat bool, choices, batch int, logprobs bool) {
	const tokens = 1 << 16
	j, st, w := benchJob(b, chat, choices, tokens, logprobs)
	items := make([]engine.OutputItem, batch)
	pos := make([]int, choices)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		for i := range n {
			c := (done + i) % choices
			if pos[c] == tokens-1 { // keep clear of the final token
				pos[c] = 0
				j.ch[c].n, j.ch[c].started = 0, false
			}
			items[i] = engine.OutputItem{Choice: c, Token: j.ch[c].plan.IDs[pos[c]]}
			pos[c]++
		}
		st.render(items[:n])
		if err := st.flush(); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(w.n)/float64(b.N), "B/token")
	b.ReportMetric(float64(b.N)/float64(max(w.writes, 1)), "tokens/write")
}

// BenchmarkSSEWritePerToken measures ns and allocations per streamed token
// (op = one token) for the render + write + flush path.
func BenchmarkSSEWritePerToken(b *testing.B) {
	b.Run("chat/1-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 1, 1, false) })
	b.Run("chat/16-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 4, 16, false) })
	b.Run("completions/1-per-drain", func(b *testing.B) { benchmarkSSE(b, false, 1, 1, false) })
	b.Run("chat-logprobs/1-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 1, 1, true) })
}

// The streaming path allocates nothing per token once warm.
func TestSSERenderAllocationFree(t *testing.T) {
	res := testing.Benchmark(func(b *testing.B) { benchmarkSSE(b, true, 2, 4, true) })
	if a := res.AllocsPerOp(); a != 0 {
		t.Errorf("allocs per token = %d, want 0", a)
	}
	res = testing.Benchmark(func(b *testing.B) { benchmarkSSE(b, false, 1, 1, true) })
	if a := res.AllocsPerOp(); a != 0 {
		t.Errorf("completions allocs per token = %d, want 0", a)
	}
}
