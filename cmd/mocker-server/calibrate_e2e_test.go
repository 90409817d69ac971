package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/profile"
	"github.com/mocker-server/mocker-server/internal/replay"
)

// truthProfile is an interpolated profile the calibrator does not know: a
// convex prefill curve and a decode grid that grows with both KV use and
// context, on axes unlike the ones calibrate chooses.
const truthProfile = `{
 "prefill_isl": [1, 1000, 4000, 16000],
 "prefill_ttft_ms": [12, 30, 95, 420],
 "decode_active_kv_tokens": [0, 50000, 200000, 1000000],
 "decode_context_length": [0, 4000, 32000],
 "decode_itl": [[7, 7.5, 9], [9, 9.8, 12], [14, 15, 18], [30, 32, 38]]
}`

// TestCalibrateRecoversKnownTruth calibrates a real serve whose timing the
// calibrator does not know — the polynomial with its coefficients changed
// by speedup ratios, and an interpolated profile — with a one-minute budget,
// then replays workloads the probes never ran (the Mooncake sample at half
// its rate on eight round-robin workers, and closed-loop concurrency
// sweeps) with the calibrated profile
// and with the true model: TTFT and ITL medians must agree within 5 %, p90
// within 10 %.
func TestCalibrateRecoversKnownTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("calibrates two live servers for about a minute each")
	}
	if raceEnabled {
		// The race detector slows the live server several times over its
		// model, which the calibrator would measure as the truth: the
		// recovery runs alone without it (make check-calibrate).
		t.Skip("timing recovery runs without the race detector: make check-calibrate")
	}
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.json")
	if err := os.WriteFile(truthPath, []byte(truthProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		overlay map[string]any
	}{
		// prefill_ms = poly/1.5, decode_ms = poly/(1.5·0.8): coefficients
		// the calibrator has never seen.
		{"polynomial", map[string]any{"timing_model": "polynomial", "speedup_ratio": 1.5, "decode_speedup_ratio": 0.8}},
		{"interpolated", map[string]any{"planner_profile_data": truthPath, "speedup_ratio": 1}},
		// The hardware model prices attention over a cached prefix, which
		// the profile's prefill_cached_ms_per_mtok must capture for the
		// Mooncake sample's long shared prefixes.
		{"hardware", map[string]any{"hardware": "h100_sxm", "model": "meta-llama/Llama-3.1-8B-Instruct",
			"max_model_len": 32768, "speedup_ratio": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadConfig(t, tc.overlay)
			// With the production wiring, as a deployment runs it: /metrics
			// (the server's own TTFT, which calibrate compares with the
			// client's to take the HTTP overhead out).
			srv := e2eStartProduction(t, cfg)
			out := filepath.Join(dir, tc.name+".json")
			var stdout, stderr bytes.Buffer
			start := time.Now()
			err := run(context.Background(), []string{"calibrate", "--url", srv.url, "--out", out, "--budget", "60s",
				"--max-concurrency", "64", "--no-progress"}, &stdout, &stderr)
			t.Logf("calibrate took %v:\n%s%s", time.Since(start).Round(time.Second), stdout.String(), stderr.String())
			if err != nil {
				t.Fatal(err)
			}
			calibrated, err := profile.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			var trueProf *engine.Profile
			if p, ok := tc.overlay["planner_profile_data"]; ok {
				if trueProf, err = profile.Load(p.(string)); err != nil {
					t.Fatal(err)
				}
			}
			truth := cfg.EngineConfig(trueProf)
			fitted := truth
			fitted.Timing = engine.TimingConfig{Model: engine.TimingInterpolated, Profile: calibrated}
			fitted.TimingModel = nil // a hardware truth sets its model here
			fitted.SpeedupRatio, fitted.DecodeSpeedupRatio = 1, 1

			var problems []string
			check := func(workload string, want, got latencies) {
				for _, c := range []struct {
					name      string
					want, got float64
					tol       float64
				}{
					{"TTFT p50", want.ttft50, got.ttft50, 0.05}, {"TTFT p90", want.ttft90, got.ttft90, 0.10},
					{"ITL p50", want.itl50, got.itl50, 0.05}, {"ITL p90", want.itl90, got.itl90, 0.10},
				} {
					d := (c.got - c.want) / c.want
					t.Logf("%-28s %-8s true %9.2f ms  calibrated %9.2f ms  %+6.1f%%", workload, c.name, c.want, c.got, 100*d)
					if math.Abs(d) > c.tol {
						problems = append(problems, fmt.Sprintf("%s %s: calibrated %.2f ms vs true %.2f ms (%+.1f%%, limit %.0f%%)",
							workload, c.name, c.got, c.want, 100*d, 100*c.tol))
					}
				}
			}
			check("mooncake ×½ rate, 8 workers", mooncakeLatencies(t, truth), mooncakeLatencies(t, fitted))
			for _, conc := range []int{1, 8, 32} {
				check(fmt.Sprintf("closed loop, concurrency %d", conc), closedLoop(t, truth, conc), closedLoop(t, fitted, conc))
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// latencies are a workload's TTFT and per-request ITL percentiles in ms.
type latencies struct{ ttft50, ttft90, itl50, itl90 float64 }

func mooncakeLatencies(t *testing.T, cfg engine.Config) latencies {
	t.Helper()
	f, err := os.Open("../../testdata/mooncake-synthetic-head400.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Half the trace's rate: at full rate on eight workers the median TTFT
	// sits where requests that arrive during a long prefill pass and wait
	// for its end meet those that do not, and a 1 % change in a pass's
	// length moves single requests across that line.
	src, err := replay.NewMooncakeSource(f, "mooncake", replay.TraceOptions{TimeScale: 2})
	if err != nil {
		t.Fatal(err)
	}
	var workers []replay.WorkerSpec
	for i := range 8 {
		workers = append(workers, replay.WorkerSpec{Name: fmt.Sprintf("w%d", i), Engine: cfg})
	}
	rep, err := replay.Run(src, replay.Options{Workers: workers, Router: replay.RoundRobin})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	return latencies{s.TTFTMs.P50, s.TTFTMs.P90, s.ITLMs.P50, s.ITLMs.P90}
}

// closedLoop runs conc clients on one engine in virtual time, each sending
// its next request the instant its last one finished, 60 requests per
// client, prompt 100–3000 and output 32–256 tokens (seeded).
func closedLoop(t *testing.T, cfg engine.Config, conc int) latencies {
	t.Helper()
	core, err := engine.NewCore(cfg, engine.CoreOptions{SkipTokenGaps: true})
	if err != nil {
		t.Fatal(err)
	}
	sim := engine.NewSimulator(core)
	out := engine.NewUnsyncedOutput()
	rng := rand.New(rand.NewPCG(7, uint64(conc)))
	const perClient = 60
	type flight struct {
		arrival, first, last time.Duration
		n                    int
	}
	flights := map[int]*flight{}
	next, sent := 0, 0
	submit := func(at time.Duration) {
		id := next
		next++
		sent++
		prompt := make([]uint32, 100+rng.IntN(2900))
		for i := range prompt {
			prompt[i] = uint32(rng.Uint64())
		}
		planned := make([]uint32, 32+rng.IntN(224))
		flights[id] = &flight{arrival: at}
		sim.SubmitAt(at, &engine.Request{ID: uint64(id + 1), Prompt: prompt, PlannedOutput: planned, Choice: id, Out: out})
	}
	for range conc {
		submit(0)
	}
	var ttft, itl []float64
	var items []engine.OutputItem
	sim.AfterPass = func(int) {
		items = out.Drain(items[:0])
		for _, it := range items {
			f := flights[it.Choice]
			at := it.Time.Sub(engine.VirtualEpoch)
			if it.Final {
				if f.n > 1 {
					itl = append(itl, float64(f.last-f.first)/float64(f.n-1)/1e6)
				}
				delete(flights, it.Choice)
				if sent < conc*perClient {
					submit(sim.Now())
				}
				continue
			}
			if f.n == 0 {
				f.first = at
				ttft = append(ttft, float64(at-f.arrival)/1e6)
			}
			f.last = at
			f.n++
		}
	}
	sim.Run(0)
	return latencies{pct(ttft, 0.5), pct(ttft, 0.9), pct(itl, 0.5), pct(itl, 0.9)}
}

func pct(v []float64, q float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[int(q*float64(len(v)-1))]
}

// TestCalibrateProfileRoundTrip: the profile calibrate writes loads back
// (through the same reader serve, fleet and replay use) into exactly the
// arrays it reported, and a server started with it runs.
func TestCalibrateProfileRoundTrip(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 8, "fixed_decode_ms": 3, "speedup_ratio": 1})
	srv := e2eStartProduction(t, cfg) // /metrics: the HTTP overhead is taken out
	out := filepath.Join(t.TempDir(), "p.json")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"calibrate", "--url", srv.url, "--out", out, "--budget", "20s",
		"--max-concurrency", "16", "--json", "--no-progress"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep struct {
		Fit struct {
			Grid struct{ Prefill, KV, Ctx []float64 } `json:"grid"`
		} `json:"fit"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var file struct {
		engine.Profile
		Calibration json.RawMessage `json:"calibration"`
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	loaded, err := profile.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(*loaded) != fmt.Sprint(file.Profile) || fmt.Sprint(loaded.PrefillISL) != fmt.Sprint(rep.Fit.Grid.Prefill) ||
		fmt.Sprint(loaded.DecodeActiveKVTokens) != fmt.Sprint(rep.Fit.Grid.KV) {
		t.Fatalf("loaded profile differs from the written one:\n%v\n%v", *loaded, file.Profile)
	}
	if len(file.Calibration) < 100 {
		t.Fatalf("no calibration provenance in the profile")
	}
	// The fixed truth: prefill 8 ms (+ a 3 ms decode in the same pass),
	// decode 3 ms everywhere; the fit must find it (loosely: a loaded
	// machine, or the race detector, adds noise — one late server adds to
	// every measured prefill, so the prefill bound is one-sided wider:
	// 10.02 ms was fitted once under -race at load 5; TestCalibrateRecovers-
	// KnownTruth, run alone by make check-calibrate, holds the tight bounds).
	m, err := engine.NewInterpolatedTiming(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.DecodeMs(2000, 0, 500); math.Abs(d-3) > 0.6 {
		t.Errorf("fitted decode at (2000, 500) = %.2f ms, true 3", d)
	}
	if p := m.PrefillMs(2048); p < 6 || p > 11 {
		t.Errorf("fitted prefill at 2048 = %.2f ms, true 8", p)
	}
	cfg2 := loadConfig(t, map[string]any{"planner_profile_data": out, "speedup_ratio": 1})
	srv2 := startServe(t, cfg2, time.Second)
	resp, err := srv2.client.Post(srv2.url+"/v1/completions", "application/json",
		bytes.NewReader([]byte(`{"prompt":"hello","max_tokens":3}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("serve with the calibrated profile answered %d", resp.StatusCode)
	}
}
