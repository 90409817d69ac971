package replay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

const mooncakeTestdata = "../../testdata/mooncake-synthetic-head400.jsonl"

func openTrace(t *testing.T, opts TraceOptions) *MooncakeSource {
	t.Helper()
	f, err := os.Open(mooncakeTestdata)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	src, err := NewMooncakeSource(f, "trace", opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func fleet(n int, cfg engine.Config) []WorkerSpec {
	ws := make([]WorkerSpec, n)
	for i := range ws {
		ws[i] = WorkerSpec{Name: "w" + string(rune('0'+i)), Engine: cfg}
	}
	return ws
}

// TestRunKVAwareBeatsRoundRobinOnSharedPrefixes replays one shared-prefix
// workload (16 groups of 1024-token prefixes) on 4 workers: the KV-aware
// router, which sees only the KV events, must reach a strictly higher
// prefix-cache hit rate than round-robin.
func TestRunKVAwareBeatsRoundRobinOnSharedPrefixes(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.BlockSize = 16
	cfg.NumBlocks = 320 // room for ~4 of the 16 prefixes per worker: round-robin keeps evicting
	rr, kvr := runSharedPrefixFleet(t, cfg, RoundRobin, 40), runSharedPrefixFleet(t, cfg, KVAware, 40)
	t.Logf("hit rate: round_robin %.3f, kv_aware %.3f; TTFT p50 %.1f vs %.1f ms",
		rr.Summary.PrefixCacheHitRate, kvr.Summary.PrefixCacheHitRate, rr.Summary.TTFTMs.P50, kvr.Summary.TTFTMs.P50)
	if !(kvr.Summary.PrefixCacheHitRate > rr.Summary.PrefixCacheHitRate) {
		t.Fatalf("kv_aware hit rate %.4f is not above round_robin's %.4f", kvr.Summary.PrefixCacheHitRate, rr.Summary.PrefixCacheHitRate)
	}
	for _, w := range kvr.Workers {
		if w.Routed == 0 {
			t.Errorf("kv_aware left worker %s idle: %+v", w.Name, kvr.Workers)
		}
	}
}

// runSharedPrefixFleet replays 800 requests (16 groups of 1024-token
// prefixes, 128 more tokens, 32 out) arriving at rate per second on 4
// workers of cfg.
func runSharedPrefixFleet(t *testing.T, cfg engine.Config, kind RouterKind, rate float64) *Report {
	t.Helper()
	src, err := NewSynthetic(SyntheticOptions{Requests: 800, Rate: rate, Input: Dist{Kind: DistFixed, A: 128},
		Output: Dist{Kind: DistFixed, A: 32}, PrefixGroups: 16, PrefixTokens: 1024, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(src, Options{Workers: fleet(4, cfg), Router: kind, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Completed != 800 {
		t.Fatalf("%s: completed %d of 800", kind, rep.Summary.Completed)
	}
	return rep
}

// TestRunKVAwareBeatsRoundRobinOnSharedPrefixTrace replays the committed
// shared-prefix trace (8 system prompts of 4 blocks, made by
// scripts/gen-shared-prefix-trace.py) on 4 workers whose pools hold only a
// few of them: kv_aware must reach a strictly higher hit rate.
func TestRunKVAwareBeatsRoundRobinOnSharedPrefixTrace(t *testing.T) {
	hitRate := func(kind RouterKind) float64 {
		f, err := os.Open("../../testdata/shared-prefix-synthetic.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		src, err := NewMooncakeSource(f, "shared-prefix", TraceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := engine.DefaultConfig()
		cfg.NumBlocks = 256
		rep, err := Run(src, Options{Workers: fleet(4, cfg), Router: kind, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Completed != 300 {
			t.Fatalf("%s: completed %d of 300", kind, rep.Summary.Completed)
		}
		return rep.Summary.PrefixCacheHitRate
	}
	rr, kvr := hitRate(RoundRobin), hitRate(KVAware)
	t.Logf("hit rate: round_robin %.4f, kv_aware %.4f", rr, kvr)
	if !(kvr > rr) {
		t.Fatalf("kv_aware hit rate %.4f is not above round_robin's %.4f", kvr, rr)
	}
}

// TestRunIsDeterministic replays the Mooncake sample twice per router and
// compares the JSON reports byte for byte.
func TestRunIsDeterministic(t *testing.T) {
	for _, kind := range RouterKinds {
		t.Run(string(kind), func(t *testing.T) {
			var out [2]bytes.Buffer
			for i := range out {
				rep, err := Run(openTrace(t, TraceOptions{TimeScale: 0.2, MaxRequests: 120}), Options{Workers: fleet(3, engine.DefaultConfig()), Router: kind, Seed: 42})
				if err != nil {
					t.Fatal(err)
				}
				if err := WriteJSON(&out[i], []*Report{rep}); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
				t.Fatal("two runs gave different JSON reports")
			}
		})
	}
}

// TestRunOneWorkerMatchesEngineSimulator checks the multi-worker event loop
// against the engine's own single-core Simulator, an independent driver:
// every token of every request of the Mooncake sample must come at the same
// virtual instant.
func TestRunOneWorkerMatchesEngineSimulator(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.MaxModelLen = 1 << 17
	cfg.NumBlocks = 4096 // small enough to preempt under this load
	opts := TraceOptions{TimeScale: 0.05, MaxRequests: 250}

	core, err := engine.NewCore(cfg, engine.CoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim := engine.NewSimulator(core)
	out := engine.NewOutput()
	reqs := drainSource(t, openTrace(t, opts))
	n := len(reqs)
	for _, req := range reqs {
		sim.SubmitAt(req.Arrival, &engine.Request{ID: uint64(req.Index + 1), Prompt: req.Prompt,
			PlannedOutput: outputTokens(req.OutputTokens), Choice: req.Index, Out: out})
	}
	sim.Run(0)
	first := make([]time.Duration, n)
	last := make([]time.Duration, n)
	for _, it := range out.Drain(nil) {
		if it.Final {
			continue
		}
		at := it.Time.Sub(engine.VirtualEpoch)
		if first[it.Choice] == 0 {
			first[it.Choice] = at
		}
		last[it.Choice] = at
	}

	var rows []RequestRow
	rep, err := Run(openTrace(t, opts), Options{Workers: fleet(1, cfg),
		Rows: func(r *RequestRow) error { rows = append(rows, *r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("replay gave %d rows, the simulator ran %d requests", len(rows), n)
	}
	for _, r := range rows {
		if r.FinishReason == "rejected" {
			if first[r.Index] != 0 {
				t.Errorf("request %d: rejected by replay, served by the simulator", r.Index)
			}
			continue
		}
		arrival := time.Duration(r.Arrival * float64(time.Millisecond))
		if got, want := r.TTFTMs, ms(first[r.Index])-ms(arrival); !close(got, want) {
			t.Errorf("request %d: TTFT %.6f ms, simulator %.6f ms", r.Index, got, want)
		}
		if got, want := r.E2EMs, ms(last[r.Index])-ms(arrival); !close(got, want) {
			t.Errorf("request %d: E2E %.6f ms, simulator %.6f ms", r.Index, got, want)
		}
	}
	t.Logf("%d requests, %d preemptions, %d passes", n, rep.Summary.Preemptions, rep.Workers[0].Passes)
}

// close compares milliseconds that went through float64 conversions.
func close(a, b float64) bool { return a-b < 1e-5 && b-a < 1e-5 }

// TestMooncakeSourceBadInput checks every malformed-line rule: the error
// names the line, and --skip-bad-lines skips and counts instead.
func TestMooncakeSourceBadInput(t *testing.T) {
	good := `{"timestamp": 10, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]}`
	tests := []struct {
		name, line, want string
	}{
		{"not json", `{"timestamp": 1,`, "not a JSON object"},
		{"missing timestamp", `{"input_length": 10, "output_length": 5}`, `missing "timestamp"`},
		{"missing output", `{"timestamp": 20, "input_length": 10}`, `missing "output_length"`},
		{"earlier timestamp", `{"timestamp": 5, "input_length": 10, "output_length": 5}`, "earlier than the previous"},
		{"zero output", `{"timestamp": 20, "input_length": 10, "output_length": 0}`, "output_length must be ≥ 1"},
		{"zero input", `{"timestamp": 20, "input_length": 0, "output_length": 3}`, "input_length must be ≥ 1"},
		{"too many ids", `{"timestamp": 20, "input_length": 512, "output_length": 3, "hash_ids": [1, 2]}`, "2 hash_ids but input_length 512"},
		{"negative id", `{"timestamp": 20, "input_length": 600, "output_length": 3, "hash_ids": [1, -2]}`, "hash_ids must be ≥ 0"},
		{"wrong type", `{"timestamp": "x", "input_length": 10, "output_length": 5}`, "not a JSON object"},
		// Sizes no model takes are refused before anything is allocated
		// (they used to run out of memory or panic in makeslice).
		{"input 1e12", `{"timestamp": 20, "input_length": 1000000000000, "output_length": 5}`, "input_length 1000000000000 is over the limit of 16777216"},
		{"input 2^62", `{"timestamp": 20, "input_length": 4611686018427387904, "output_length": 5, "hash_ids": [1]}`, "input_length 4611686018427387904 is over the limit"},
		{"output 1e12", `{"timestamp": 20, "input_length": 10, "output_length": 1000000000000}`, "output_length 1000000000000 is over the limit"},
		{"input as 1e12", `{"timestamp": 20, "input_length": 1e12, "output_length": 5}`, "not a JSON object"},
		{"input over int64", `{"timestamp": 20, "input_length": 99999999999999999999, "output_length": 5}`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trace := good + "\n\n" + tt.line + "\n" + strings.Replace(good, "10,", "30,", 1) + "\n"
			src, err := NewMooncakeSource(strings.NewReader(trace), "t.jsonl", TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.Next(); err != nil {
				t.Fatalf("first line: %v", err)
			}
			_, err = src.Next()
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "t.jsonl:3: ") {
				t.Fatalf("error = %v, want t.jsonl:3: …%s…", err, tt.want)
			}

			src, _ = NewMooncakeSource(strings.NewReader(trace), "t.jsonl", TraceOptions{SkipBadLines: true})
			var got []int
			for {
				r, err := src.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("with skipping: %v", err)
				}
				got = append(got, r.Index)
			}
			if len(got) != 2 || src.Skipped() != 1 {
				t.Fatalf("with skipping: requests %v, skipped %d; want 2 requests, 1 skipped", got, src.Skipped())
			}
		})
	}
}

// TestMooncakeSourceSharesPrefixesByHashID checks that equal hash ids give
// equal prompt blocks (so the engine's cache sees the trace's sharing) and
// that time scale and block size apply.
func TestMooncakeSourceSharesPrefixesByHashID(t *testing.T) {
	trace := `{"timestamp": 100, "input_length": 10, "output_length": 2, "hash_ids": [7, 8, 9]}
{"timestamp": 300, "input_length": 9, "output_length": 2, "hash_ids": [7, 8, 5]}
{"timestamp": 300, "input_length": 12, "output_length": 2, "hash_ids": [7]}
`
	src, err := NewMooncakeSource(strings.NewReader(trace), "t", TraceOptions{BlockSize: 4, TimeScale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	reqs := drainSource(t, src)
	if len(reqs) != 3 || reqs[0].Arrival != 50*time.Millisecond || reqs[1].Arrival != 150*time.Millisecond {
		t.Fatalf("requests %+v", reqs)
	}
	a, b, c := reqs[0].Prompt, reqs[1].Prompt, reqs[2].Prompt
	if len(a) != 10 || len(b) != 9 || len(c) != 12 {
		t.Fatalf("prompt lengths %d %d %d", len(a), len(b), len(c))
	}
	if !slicesEqual(a[:8], b[:8]) || slicesEqual(a[8:9], b[8:9]) {
		t.Error("blocks 7, 8 must be shared and blocks 9 and 5 differ")
	}
	if !slicesEqual(a[:4], c[:4]) || slicesEqual(a[4:8], c[4:8]) {
		t.Error("request 3 shares only block 7; its other tokens are its own")
	}
}

func slicesEqual(a, b []uint32) bool { return bytes.Equal(u32bytes(a), u32bytes(b)) }

func u32bytes(a []uint32) []byte {
	out := make([]byte, 0, 4*len(a))
	for _, v := range a {
		out = append(out, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return out
}
