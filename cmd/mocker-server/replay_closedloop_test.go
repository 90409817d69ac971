package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplay_ClosedLoopJSON runs the closed loop from the command line with
// the fixed timing model (20 ms prefill, 10 ms decode): one client, 4
// requests of 50 tokens out, so each request takes 30 + 49 × 10 = 520 ms,
// the run 2.08 s, 200 tokens → 96.15 tok/s, and per GPU over 2 workers × 2
// DP ranks × TP 2 = 8 GPUs.
func TestReplay_ClosedLoopJSON(t *testing.T) {
	out, stderr, err := runCLI(t, "replay", "--json", "--timing-model", "fixed", "--workers", "2",
		"--data-parallel-size", "2", "--tensor-parallel-size", "2",
		"--concurrency", "1", "--requests", "4", "--input-len", "300", "--output-len", "50")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var rep struct {
		Summary struct {
			Completed        int                   `json:"completed"`
			OutputTokens     int                   `json:"output_tokens"`
			DurationS        float64               `json:"duration_s"`
			OutputThroughput float64               `json:"output_token_throughput"`
			GPUs             int                   `json:"gpus"`
			PerGPU           float64               `json:"output_token_throughput_per_gpu"`
			TTFT             struct{ P50 float64 } `json:"ttft_ms"`
			ITL              struct{ P50 float64 } `json:"itl_ms"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	s := rep.Summary
	if s.Completed != 4 || s.OutputTokens != 200 || s.DurationS != 2.08 || s.TTFT.P50 != 30 || s.ITL.P50 != 10 || s.GPUs != 8 {
		t.Fatalf("summary %+v; want 4 requests, 200 tokens, 2.08 s, TTFT 30, ITL 10, 8 GPUs", s)
	}
	if d := s.PerGPU - 200/2.08/8; d > 1e-9 || d < -1e-9 {
		t.Errorf("per-GPU throughput %g, want %g", s.PerGPU, 200/2.08/8)
	}
	table, _, err := runCLI(t, "replay", "--timing-model", "fixed", "--concurrency", "2", "--requests", "4", "--output-len", "5")
	if err != nil || !strings.Contains(table, "output tok/s per GPU") {
		t.Errorf("table (err %v) has no per-GPU row:\n%s", err, table)
	}
}

// TestReplay_GPUsFollowFleetGroups: a fleet file's group with its own
// --tensor-parallel-size counts that many GPUs per DP rank; the others take
// the command line's. Here 2 workers at the command line's TP 2, plus 1
// worker with 2 DP ranks at TP 4: 2·2 + 2·4 = 12 GPUs.
func TestReplay_GPUsFollowFleetGroups(t *testing.T) {
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte("workers:\n  - count: 2\n  - count: 1\n    args: [--tensor-parallel-size, '4', --data-parallel-size, '2']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "replay", "--json", "--timing-model", "fixed", "--fleet-file", fleet,
		"--tensor-parallel-size", "2", "--concurrency", "4", "--requests", "12", "--output-len", "8")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var rep struct {
		Summary struct {
			GPUs       int     `json:"gpus"`
			Throughput float64 `json:"output_token_throughput"`
			PerGPU     float64 `json:"output_token_throughput_per_gpu"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if s := rep.Summary; s.GPUs != 12 || s.Throughput == 0 || math.Abs(s.PerGPU-s.Throughput/12) > 1e-9 {
		t.Fatalf("summary %+v, want 12 GPUs and throughput / 12 per GPU", s)
	}
}

// TestReplay_ClientDelay: with --client-delay a client's next request
// misses the pass that starts when its previous request ends. Fixed timing
// (20 ms prefill + 10 ms decode), two clients whose requests have different
// output lengths, so one is often still decoding when the other ends.
// Without a delay the new request joins the very next pass: TTFT 30 ms,
// always. With 1 ms it arrives 1 ms into that pass and waits for the one
// after: TTFT 9 + 30 = 39 ms when that pass only decodes, 29 + 30 = 59 ms
// when it prefills the other client's new request (the worst case).
func TestReplay_ClientDelay(t *testing.T) {
	ttft := func(args ...string) [2]float64 {
		t.Helper()
		out, stderr, err := runCLI(t, append([]string{"replay", "--json", "--timing-model", "fixed",
			"--concurrency", "2", "--requests", "20", "--input-len", "64", "--output-len", "uniform:3:9"}, args...)...)
		if err != nil {
			t.Fatalf("replay: %v\n%s", err, stderr)
		}
		var rep struct {
			Summary struct {
				TTFT struct{ Min, Max float64 } `json:"ttft_ms"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return [2]float64{rep.Summary.TTFT.Min, rep.Summary.TTFT.Max}
	}
	if got := ttft(); got != [2]float64{30, 30} {
		t.Errorf("no delay: TTFT min/max %v, want 30 and 30", got)
	}
	if got := ttft("--client-delay", "1ms"); got != [2]float64{30, 59} {
		t.Errorf("1 ms delay: TTFT min/max %v, want 30 (the other client idle) and 59 (arriving 1 ms into a prefill pass)", got)
	}
}
