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
	second, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("two runs printed different JSON")
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
		{"bad engine flag", []string{"replay", "--max-num-seqs", "0", replayTrace}, "max_num_seqs"},
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
