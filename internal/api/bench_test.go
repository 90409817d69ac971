package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
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
func benchJob(tb testing.TB, model tokenizer.Model, chat bool, choices, tokens int, logprobs bool) (*job, *streamer, *discardWriter) {
	tb.Helper()
	cfg := testConfig(tb, nil)
	s := NewServer(testOptions(cfg), make([]*engine.Engine, 1), Deps{Tokenizer: model})
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
	return j, newStreamer(j, w, nil), w
}

// sseDriver feeds a detached streaming job its planned tokens, round-robin
// over its choices, as the engine's drains would.
type sseDriver struct {
	job      *job
	streamer *streamer
	writer   *discardWriter
	items    []engine.OutputItem
	pos      []int // next planned token per choice
	tokens   int   // planned tokens per choice
	fed      int   // tokens fed so far
}

func newSSEDriver(tb testing.TB, chat bool, choices, batch int, logprobs bool) *sseDriver {
	return newSSEDriverWith(tb, nil, chat, choices, batch, logprobs)
}

// newSSEDriverWith is newSSEDriver with a tokenizer (nil: the built-in one).
func newSSEDriverWith(tb testing.TB, model tokenizer.Model, chat bool, choices, batch int, logprobs bool) *sseDriver {
	const tokens = 1 << 16
	j, st, w := benchJob(tb, model, chat, choices, tokens, logprobs)
	return &sseDriver{job: j, streamer: st, writer: w, items: make([]engine.OutputItem, batch),
		pos: make([]int, choices), tokens: tokens}
}

// drain renders n tokens (n <= batch) into the reused buffer and writes
// them with one Write and one Flush.
func (d *sseDriver) drain(tb testing.TB, n int) {
	choices := len(d.pos)
	for i := range n {
		c := (d.fed + i) % choices
		if d.pos[c] == d.tokens-1 { // keep clear of the final token
			d.pos[c] = 0
			d.job.ch[c].n, d.job.ch[c].started = 0, false
		}
		d.items[i] = engine.OutputItem{Choice: c, Token: d.job.ch[c].plan.IDs[d.pos[c]]}
		d.pos[c]++
	}
	d.streamer.render(d.items[:n])
	if err := d.streamer.flush(); err != nil {
		tb.Fatal(err)
	}
	d.fed += n
}

// benchmarkSSE streams b.N tokens in drains of `batch` tokens spread over
// `choices` sequences.
func benchmarkSSE(b *testing.B, chat bool, choices, batch int, logprobs bool) {
	benchmarkSSEWith(b, nil, chat, choices, batch, logprobs)
}

func benchmarkSSEWith(b *testing.B, model tokenizer.Model, chat bool, choices, batch int, logprobs bool) {
	d := newSSEDriverWith(b, model, chat, choices, batch, logprobs)
	b.ReportAllocs()
	b.ResetTimer()
	for d.fed < b.N {
		d.drain(b, min(batch, b.N-d.fed))
	}
	b.StopTimer()
	b.ReportMetric(float64(d.writer.n)/float64(b.N), "B/token")
	b.ReportMetric(float64(b.N)/float64(max(d.writer.writes, 1)), "tokens/write")
}

// BenchmarkSSEWritePerToken measures ns and allocations per streamed token
// (op = one token) for the render + write + flush path.
func BenchmarkSSEWritePerToken(b *testing.B) {
	b.Run("chat/1-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 1, 1, false) })
	b.Run("chat/16-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 4, 16, false) })
	b.Run("completions/1-per-drain", func(b *testing.B) { benchmarkSSE(b, false, 1, 1, false) })
	b.Run("chat-logprobs/1-per-drain", func(b *testing.B) { benchmarkSSE(b, true, 1, 1, true) })
}

// The streaming path allocates nothing per token once warm: the first
// drains grow the reused buffer, later ones only fill it.
func TestSSERenderAllocationFree(t *testing.T) {
	for _, tc := range []struct {
		name           string
		chat           bool
		choices, batch int
		logprobs       bool
	}{
		{"chat/1-per-drain", true, 1, 1, false},
		{"chat/16-per-drain", true, 4, 16, false},
		{"chat-logprobs/4-per-drain", true, 2, 4, true},
		{"completions/1-per-drain", false, 1, 1, false},
		{"completions-logprobs/1-per-drain", false, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSSEDriver(t, tc.chat, tc.choices, tc.batch, tc.logprobs)
			for range 1000 {
				d.drain(t, tc.batch)
			}
			if allocs := testing.AllocsPerRun(1000, func() { d.drain(t, tc.batch) }); allocs != 0 {
				t.Errorf("%v allocations per drain of %d tokens, want 0", allocs, tc.batch)
			}
		})
	}
}
