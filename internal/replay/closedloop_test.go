package replay

import (
	"bytes"
	"errors"
	"io"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// closedLoop builds a closed-loop source or fails the test.
func closedLoop(t *testing.T, opts ClosedLoopOptions) *ClosedLoop {
	t.Helper()
	g, err := NewClosedLoop(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func fixedLen(n int) Dist { return Dist{Kind: DistFixed, A: float64(n)} }

// runRows runs src on one worker of cfg and returns the report and every row.
func runRows(t *testing.T, src Source, cfg engine.Config, workers int) (*Report, []RequestRow) {
	t.Helper()
	var rows []RequestRow
	rep, err := Run(src, Options{Workers: fleet(workers, cfg), Seed: 7,
		Rows: func(r *RequestRow) error { rows = append(rows, *r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return rep, rows
}

// TestClosedLoopOneClientExactTimes: with one client and the fixed timing
// model (20 ms prefill + 10 ms decode per pass, docs/timing-model.md), each
// request takes TTFT = 20 + 10 = 30 ms and then 10 ms per token; the next
// starts the instant the previous one ends, so request i arrives at
// i × (30 + (OSL−1)·10) ms and the run lasts N times that.
func TestClosedLoopOneClientExactTimes(t *testing.T) {
	const n, osl = 5, 8
	src := closedLoop(t, ClosedLoopOptions{Concurrency: 1, Requests: n, Input: fixedLen(100), Output: fixedLen(osl), Seed: 1})
	rep, rows := runRows(t, src, fixedTimingConfig(), 1)
	e2e := 30.0 + (osl-1)*10
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for i, r := range rows {
		if r.Index != i || r.Arrival != float64(i)*e2e || r.TTFTMs != 30 || r.ITLMeanMs != 10 || r.E2EMs != e2e || r.OutputTokens != osl {
			t.Errorf("row %d = %+v, want arrival %g, TTFT 30, ITL 10, E2E %g, %d tokens", i, r, float64(i)*e2e, e2e, osl)
		}
	}
	s := rep.Summary
	if s.DurationS != n*e2e/1000 || s.TTFTMs.P50 != 30 || s.ITLMs.P50 != 10 {
		t.Errorf("summary: duration %g s, TTFT p50 %g, ITL p50 %g; want %g s, 30, 10", s.DurationS, s.TTFTMs.P50, s.ITLMs.P50, n*e2e/1000)
	}
	if want := float64(n*osl) / (n * e2e / 1000); math.Abs(s.OutputTokenThroughput-want) > 1e-9 {
		t.Errorf("output throughput %g tok/s, want %g", s.OutputTokenThroughput, want)
	}
}

// TestClosedLoopSteadyStateBehindAQueue: two clients on an engine that runs
// one sequence at a time (max_num_seqs 1), fixed timing. Request 0 runs
// [0, 70) ms (30 + 4 × 10 for 5 tokens); request 1, sent at 0, waits and
// runs [70, 140): TTFT 100. When request 0 ends at 70 its client sends
// request 2, which waits for request 1 and runs [140, 210): first token at
// 170, TTFT 170 − 70 = 100 again. So from the second request on, request i
// arrives at (i−1)·70 ms and waits one whole request (70 ms) before its own
// 30 ms to the first token: TTFT 100, ITL 10, one request every 70 ms.
func TestClosedLoopSteadyStateBehindAQueue(t *testing.T) {
	const n, osl = 9, 5
	cfg := fixedTimingConfig()
	cfg.MaxNumSeqs = 1
	src := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: n, Input: fixedLen(64), Output: fixedLen(osl), Seed: 1})
	rep, rows := runRows(t, src, cfg, 1)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Index < rows[j].Index })
	for i, r := range rows {
		wantTTFT, wantArrival := 100.0, float64(i-1)*70
		if i == 0 {
			wantTTFT, wantArrival = 30, 0
		}
		if r.Arrival != wantArrival || r.TTFTMs != wantTTFT || r.ITLMeanMs != 10 {
			t.Errorf("request %d: arrival %g TTFT %g ITL %g, want %g, %g, 10", i, r.Arrival, r.TTFTMs, r.ITLMeanMs, wantArrival, wantTTFT)
		}
	}
	if got, want := rep.Summary.DurationS, float64(n)*70/1000; math.Abs(got-want) > 1e-12 {
		t.Errorf("duration %g s, want %g", got, want)
	}
}

// TestClosedLoopFourClientsInStep: four clients on the fixed timing model
// stay in step: each round prefills all four prompts in one pass (30 ms to
// the first token) and decodes them together (10 ms per token), and all
// four send again when the round ends. So TTFT is 30, ITL 10, and the
// output throughput 4 × OSL tokens per round of 30 + (OSL−1)·10 ms.
func TestClosedLoopFourClientsInStep(t *testing.T) {
	const n, osl = 40, 6
	src := closedLoop(t, ClosedLoopOptions{Concurrency: 4, Requests: n, Input: fixedLen(100), Output: fixedLen(osl), Seed: 3})
	rep, _ := runRows(t, src, fixedTimingConfig(), 1)
	s := rep.Summary
	round := 30.0 + (osl-1)*10
	if s.TTFTMs.Min != 30 || s.TTFTMs.Max != 30 || s.ITLMs.Min != 10 || s.ITLMs.Max != 10 {
		t.Errorf("TTFT [%g, %g] ITL [%g, %g], want exactly 30 and 10", s.TTFTMs.Min, s.TTFTMs.Max, s.ITLMs.Min, s.ITLMs.Max)
	}
	if want := 4 * osl / (round / 1000); math.Abs(s.OutputTokenThroughput-want) > 1e-9 {
		t.Errorf("output throughput %g, want %g", s.OutputTokenThroughput, want)
	}
}

// TestClosedLoopBoundsConcurrency runs a desynchronised closed loop (random
// prompt lengths, the polynomial timing model, two workers) and checks from
// the rows alone: exactly N requests, exactly OSL tokens each, never more
// than C in flight, and a new request only when one finished (so the
// number in flight is exactly C until the clients run out of requests).
func TestClosedLoopBoundsConcurrency(t *testing.T) {
	const c, n, osl = 6, 150, 17
	src := closedLoop(t, ClosedLoopOptions{Concurrency: c, Requests: n,
		Input: Dist{Kind: DistUniform, A: 10, B: 900}, Output: fixedLen(osl), Seed: 11})
	rep, rows := runRows(t, src, engine.DefaultConfig(), 2)
	if len(rows) != n || rep.Summary.Completed != n || rep.Summary.Unfinished != 0 {
		t.Fatalf("%d rows, %d completed, %d unfinished; want %d, %d, 0", len(rows), rep.Summary.Completed, rep.Summary.Unfinished, n, n)
	}
	// Integer nanoseconds: the rows' float milliseconds would make an end
	// and the next start at one instant differ in the last bit.
	ns := func(x float64) int64 { return int64(math.Round(x * 1e6)) }
	delta := map[int64][2]int{} // instant → (starts, ends)
	seen := map[int]bool{}
	for _, r := range rows {
		if r.OutputTokens != osl || r.FinishReason != "length" {
			t.Fatalf("request %d: %d tokens (%s), want %d", r.Index, r.OutputTokens, r.FinishReason, osl)
		}
		seen[r.Index] = true
		s, e := ns(r.Arrival), ns(r.Arrival+r.E2EMs)
		d := delta[s]
		d[0]++
		delta[s] = d
		d = delta[e]
		d[1]++
		delta[e] = d
	}
	if len(seen) != n {
		t.Fatalf("%d distinct request indexes, want %d", len(seen), n)
	}
	var instants []int64
	for at := range delta {
		instants = append(instants, at)
	}
	sort.Slice(instants, func(i, j int) bool { return instants[i] < instants[j] })
	// Every end lets its client send at once while requests are left, so
	// after each instant exactly min(C, N − ended) are in flight.
	inFlight, ended := 0, 0
	for _, at := range instants {
		d := delta[at]
		inFlight += d[0] - d[1]
		ended += d[1]
		if want := min(c, n-ended); inFlight != want {
			t.Fatalf("%d requests in flight at %d ns, want min(C=%d, %d left) = %d", inFlight, at, c, n-ended, want)
		}
	}
}

// TestClosedLoopIsDeterministic: the same seed gives a byte-identical
// report; another seed, other prompt lengths and so another report.
func TestClosedLoopIsDeterministic(t *testing.T) {
	run := func(seed uint64) []byte {
		src := closedLoop(t, ClosedLoopOptions{Concurrency: 8, Requests: 120,
			Input: Dist{Kind: DistLognormal, A: 400, B: 200}, Output: fixedLen(32), Seed: seed})
		rep, err := Run(src, Options{Workers: fleet(2, engine.DefaultConfig()), Router: LeastLoaded, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, []*Report{rep}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, other := run(5), run(5), run(6)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different reports")
	}
	if bytes.Equal(a, other) {
		t.Fatal("different seeds gave the same report")
	}
}

// TestClosedLoopSourceProtocol drives the source by hand: C requests at 0,
// then nothing until a completion, then one at the completion's instant,
// and io.EOF after N.
func TestClosedLoopSourceProtocol(t *testing.T) {
	g := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: 3, Input: fixedLen(5), Output: fixedLen(2)})
	for i := 0; i < 2; i++ {
		r, err := g.Next()
		if err != nil || r.Arrival != 0 || r.Index != i || len(r.Prompt) != 5 || r.OutputTokens != 2 {
			t.Fatalf("request %d = %+v, %v", i, r, err)
		}
	}
	if _, err := g.Next(); !errors.Is(err, ErrAwaitCompletion) {
		t.Fatalf("with every client waiting: %v, want ErrAwaitCompletion", err)
	}
	g.Done(0, 42*time.Millisecond)
	if r, err := g.Next(); err != nil || r.Arrival != 42*time.Millisecond || r.Index != 2 {
		t.Fatalf("after a completion at 42 ms: %+v, %v", r, err)
	}
	g.Done(1, 50*time.Millisecond)
	if _, err := g.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after N requests: %v, want io.EOF", err)
	}
	// Prompts share nothing without prefix groups.
	a, _ := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: 2, Input: fixedLen(64), Output: fixedLen(1)}).Next()
	h := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: 2, Input: fixedLen(64), Output: fixedLen(1)})
	h.Next()
	b, _ := h.Next()
	if a.Prompt[0] == b.Prompt[0] {
		t.Fatal("two requests' prompts start alike without --prefix-groups")
	}
	if _, err := NewClosedLoop(ClosedLoopOptions{Concurrency: 0, Requests: 1, Input: fixedLen(1), Output: fixedLen(1)}); err == nil {
		t.Fatal("concurrency 0 accepted")
	}
}

// TestReportThroughputPerGPU: GPUs = Σ DP ranks × GPUs per rank.
func TestReportThroughputPerGPU(t *testing.T) {
	src := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: 10, Input: fixedLen(50), Output: fixedLen(4)})
	rep, err := Run(src, Options{Workers: []WorkerSpec{
		{Name: "w0", Engine: fixedTimingConfig(), DPSize: 2, GPUsPerRank: 4},
		{Name: "w1", Engine: fixedTimingConfig(), GPUsPerRank: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s.GPUs != 10 || math.Abs(s.OutputTokenThroughputPerGPU-s.OutputTokenThroughput/10) > 1e-12 || s.OutputTokenThroughput == 0 {
		t.Fatalf("GPUs %d, per GPU %g, total %g; want 10 GPUs and total/10", s.GPUs, s.OutputTokenThroughputPerGPU, s.OutputTokenThroughput)
	}
}

// TestClosedLoopRampAndClientDelay: with a ramp the clients' first requests
// are spread as mocker-bench spreads its connections; with a client delay
// the next request comes that long after the last token. One worker,
// max_num_seqs 1, fixed timing: request 0 (client 0, t=0) runs [0, 70);
// client 1's first request (t = 1 s / 2 = 500 ms) finds the worker idle;
// client 0's next request comes at 70 + 5 = 75 ms, before client 1's.
func TestClosedLoopRampAndClientDelay(t *testing.T) {
	cfg := fixedTimingConfig()
	cfg.MaxNumSeqs = 1
	src := closedLoop(t, ClosedLoopOptions{Concurrency: 2, Requests: 4, Input: fixedLen(32), Output: fixedLen(5),
		Ramp: time.Second, ClientDelay: 5 * time.Millisecond})
	_, rows := runRows(t, src, cfg, 1)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Index < rows[j].Index })
	// Emission order: client 0 at 0, then the earliest free instant:
	// client 0 again at 75, then 150 (after [75, 145)), then client 1 at 500.
	want := []float64{0, 75, 150, 500}
	for i, r := range rows {
		if r.Arrival != want[i] || r.TTFTMs != 30 {
			t.Errorf("request %d: arrival %g ms TTFT %g, want %g ms and 30", i, r.Arrival, r.TTFTMs, want[i])
		}
	}
	if _, err := NewClosedLoop(ClosedLoopOptions{Concurrency: 1, Requests: 1, Input: fixedLen(1), Output: fixedLen(1), ClientDelay: -1}); err == nil {
		t.Fatal("a negative client delay was accepted")
	}
}
