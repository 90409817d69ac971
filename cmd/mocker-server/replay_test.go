package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const replayTrace = "../../testdata/mooncake-synthetic-head400.jsonl"

// TestReplay_JSONIsByteIdentical runs the replay command twice on the
// committed Mooncake sample with kv_aware routing over 3 workers and
// compares stdout byte for byte; the CSV has one row per request.
func TestReplay_JSONIsByteIdentical(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "rows.csv")
	args := []string{"replay", "--json", "--workers", "3", "--router", "kv_aware", "--max-model-len", "65536",
		"--time-scale", "0.5", "--csv", csvPath, replayTrace}
	first, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	second, stderr, err := runCLI(t, append([]string{"replay", "--port", "9000"}, args[1:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("two runs printed different JSON")
	}
	if !strings.Contains(stderr, "warning: --port has no effect in replay") {
		t.Errorf("a serve-only flag must be named on stderr, got %q", stderr)
	}
	var rep struct {
		Summary struct{ Requests, Completed, Rejected int } `json:"summary"`
		Workers []struct{ Routed int }                      `json:"workers"`
	}
	if err := json.Unmarshal([]byte(first), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	if rep.Summary.Requests != 400 || rep.Summary.Completed+rep.Summary.Rejected != 400 || rep.Summary.Completed < 390 || len(rep.Workers) != 3 {
		t.Errorf("summary %+v, %d workers; want 400 requests, all answered, on 3 workers", rep.Summary, len(rep.Workers))
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 401 || rows[0][0] != "index" {
		t.Errorf("CSV has %d lines (header %v), want a header and 400 rows", len(rows), rows[0])
	}
}

// TestReplay_BadInputExitsWithOneLine checks command-line and trace errors:
// one clear line and exit status 2.
func TestReplay_BadInputExitsWithOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"timestamp": 5, "input_length": 10, "output_length": 3}`+"\n"+
		`{"timestamp": 1, "input_length": 10, "output_length": 3}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no workload", []string{"replay"}, "needs a TRACE file or a synthetic workload"},
		{"unknown router", []string{"replay", "--router", "best", replayTrace}, `unknown router "best"`},
		{"zero workers", []string{"replay", "--workers", "0", replayTrace}, "--workers must be ≥ 1"},
		{"missing trace", []string{"replay", filepath.Join(dir, "none.jsonl")}, "no such file"},
		{"non-monotonic", []string{"replay", bad}, "bad.jsonl:2: timestamp 1 ms is earlier"},
		{"bad distribution", []string{"replay", "--requests", "10", "--input-len", "gauss:1:2"}, `unknown kind "gauss"`},
		{"bad engine flag", []string{"replay", "--max-num-seqs", "0", replayTrace}, "--max-num-seqs must be between 1 and 65536, got 0"},
		{"concurrency with a trace", []string{"replay", "--concurrency", "4", replayTrace}, "not with a TRACE"},
		{"concurrency without requests", []string{"replay", "--concurrency", "4"}, "--concurrency needs --requests"},
		{"concurrency zero", []string{"replay", "--concurrency", "0", "--requests", "5"}, "--concurrency must be ≥ 1"},
		{"concurrency with rate", []string{"replay", "--concurrency", "4", "--requests", "5", "--rate", "3"}, "--rate sets open-loop arrivals"},
		{"concurrency with turns", []string{"replay", "--concurrency", "4", "--requests", "5", "--turns", "2"}, "--turns sets open-loop arrivals"},
		{"client delay without concurrency", []string{"replay", "--requests", "5", "--client-delay", "1ms"}, "--client-delay applies to the closed loop"},
		{"negative client delay", []string{"replay", "--concurrency", "2", "--requests", "5", "--client-delay", "-1ms"}, "--client-delay must be ≥ 0"},
		{"trace flag without a trace", []string{"replay", "--requests", "5", "--time-scale", "2"}, "--time-scale applies to a TRACE"},
		{"trace flag with the closed loop", []string{"replay", "--concurrency", "2", "--requests", "5", "--max-requests", "3"}, "--max-requests applies to a TRACE"},
		{"bad tensor parallel", []string{"replay", "--requests", "5", "--tensor-parallel-size", "0"}, "--tensor-parallel-size must be an integer ≥ 1"},
		{"prefill worker", []string{"replay", "--disaggregation-mode", "prefill", replayTrace},
			"not supported in replay: disaggregated prefill/decode (worker 0: --disaggregation-mode prefill)"},
		{"P/D connector", []string{"replay", "--kv-transfer-config", `{"kv_connector":"NixlConnector"}`, replayTrace},
			"not supported in replay: disaggregated prefill/decode (worker 0: --kv-transfer-config with NixlConnector)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runCLI(t, tt.args...)
			if err == nil {
				t.Fatal("replay succeeded")
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
		})
	}
}

// TestReplay_FleetFileBuildsHeterogeneousWorkers replays on a fleet file of
// two groups: 2 default workers and 1 with a tiny KV pool set by its args.
// The small worker must show a far higher peak KV usage, and a bad fleet
// file is one clear error.
func TestReplay_FleetFileBuildsHeterogeneousWorkers(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.yaml")
	abs, _ := filepath.Abs("../../configs/fast-ci.yaml")
	if err := os.WriteFile(fleet, []byte("workers:\n  - count: 2\n    config: "+abs+
		"\n  - count: 1\n    args: [--num-gpu-blocks-override, '512', --block-size, '16']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "replay", "--json", "--fleet-file", fleet, "--requests", "60", "--rate", "20",
		"--input-len", "1000", "--output-len", "50")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var rep struct {
		Label   string `json:"label"`
		Workers []struct {
			Name       string  `json:"name"`
			Routed     int     `json:"routed"`
			KVUsageMax float64 `json:"kv_usage_max"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Label != "fleet" || len(rep.Workers) != 3 || rep.Workers[2].Routed != 20 {
		t.Fatalf("report %+v, want fleet label and 3 workers of 20 requests each", rep)
	}
	if !(rep.Workers[2].KVUsageMax > 2*rep.Workers[0].KVUsageMax) {
		t.Errorf("the 512-block worker's peak KV usage %.3f is not well above the 4096-block workers' %.3f",
			rep.Workers[2].KVUsageMax, rep.Workers[0].KVUsageMax)
	}

	for name, body := range map[string]string{
		"unknown key": "workers:\n  - count: 1\n    cnfig: x.yaml\n",
		"zero count":  "workers:\n  - count: 0\n",
		"bad flag":    "workers:\n  - count: 1\n    args: [--max-num-seqs, zero]\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(fleet, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, err := runCLI(t, "replay", "--fleet-file", fleet, replayTrace)
			if err == nil || exitCode(err) != 2 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
				t.Errorf("err %v (exit %d), stderr %q: want one or two lines and exit 2", err, exitCode(err), stderr)
			}
		})
	}
}

// TestReplay_CompareWithASyntheticWorkload: replay --help's own example,
// --compare A.yaml B.yaml with --requests N, compares A and B (there is no
// TRACE to take the last argument), exactly as --config A --config B does.
func TestReplay_CompareWithASyntheticWorkload(t *testing.T) {
	a, b := "../../configs/vllm-default.yaml", "../../configs/prefix-cache-off.yaml"
	workload := []string{"--requests", "40", "--prefix-groups", "2", "--prefix-len", "256", "--input-len", "128", "--output-len", "8", "--json", "--no-progress"}
	compare, stderr, err := runCLI(t, append([]string{"replay", "--compare", a, b}, workload...)...)
	if err != nil {
		t.Fatalf("--compare A B --requests: %v\n%s", err, stderr)
	}
	configs, stderr, err := runCLI(t, append([]string{"replay", "--config", a, "--config", b}, workload...)...)
	if err != nil {
		t.Fatalf("--config A --config B: %v\n%s", err, stderr)
	}
	if compare != configs {
		t.Errorf("--compare A B and --config A --config B differ:\n%s\nvs\n%s", compare, configs)
	}
	for _, name := range []string{`"vllm-default"`, `"prefix-cache-off"`} {
		if !strings.Contains(compare, name) {
			t.Errorf("the report names no setup %s:\n%.2000s", name, compare)
		}
	}
}

// TestReplay_HitRateHasNoPointWhereNoRequestStarted: the hit-rate timeline
// is the hit rate of the requests whose first token came in each bucket; a
// bucket where none did (the run's draining end, gaps between arrivals) is
// null, not 0, so the report's chart does not show a fall to zero that
// never happened.
func TestReplay_HitRateHasNoPointWhereNoRequestStarted(t *testing.T) {
	out, stderr, err := runCLI(t, "replay", "--requests", "200", "--rate", "20", "--input-len", "512", "--output-len", "256",
		"--prefix-groups", "2", "--prefix-len", "256", "--json", "--no-progress")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		Summary struct {
			Completed int `json:"completed"`
		} `json:"summary"`
		Timeline struct {
			HitRate []*float64 `json:"hit_rate"`
		} `json:"timeline"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	h := rep.Timeline.HitRate
	if len(h) == 0 || h[0] == nil || h[len(h)-1] != nil {
		t.Fatalf("hit_rate: want a value in the first bucket (requests start there) and null in the last (256 tokens still decoding): %v", h)
	}
	for i, v := range h {
		if v != nil && (*v < 0 || *v > 1) {
			t.Errorf("bucket %d: hit rate %v", i, *v)
		}
	}
}
