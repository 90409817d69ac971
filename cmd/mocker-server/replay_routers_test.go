package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReplay_SeveralRoutersInOneReport gives --router three times, once as a
// comma list: every policy is replayed (none silently dropped) and each
// report carries its policy; a policy given twice is an error.
func TestReplay_SeveralRoutersInOneReport(t *testing.T) {
	out, stderr, err := runCLI(t, "replay", "--json", "--workers", "3", "--max-model-len", "65536", "--max-requests", "120",
		"--router", "round_robin,least_loaded", "--router", "kv_aware", replayTrace)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var doc struct {
		Reports []struct {
			Label   string `json:"label"`
			Router  string `json:"router"`
			Summary struct {
				Completed int     `json:"completed"`
				Hit       float64 `json:"prefix_cache_hit_rate"`
			} `json:"summary"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not a JSON list of reports: %v\n%.300s", err, out)
	}
	reps := doc.Reports
	want := []string{"round_robin", "least_loaded", "kv_aware"}
	if len(reps) != len(want) {
		t.Fatalf("%d reports, want %d (one per --router policy)", len(reps), len(want))
	}
	for i, r := range reps {
		if r.Router != want[i] || r.Label != want[i] || r.Summary.Completed < 110 {
			t.Errorf("report %d: label %q router %q completed %d; want %s with the workload done", i, r.Label, r.Router, r.Summary.Completed, want[i])
		}
	}
	if reps[2].Summary.Hit <= reps[0].Summary.Hit {
		t.Errorf("kv_aware hit rate %.3f not above round_robin's %.3f on the shared-prefix sample", reps[2].Summary.Hit, reps[0].Summary.Hit)
	}
	table, _, err := runCLI(t, "replay", "--workers", "2", "--max-requests", "40", "--max-model-len", "65536", "--router", "random", "--router", "prefix_hash", replayTrace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "random") || !strings.Contains(table, "prefix_hash") {
		t.Errorf("the table names not both policies:\n%s", table)
	}
	if _, stderr, err := runCLI(t, "replay", "--router", "kv_aware,kv_aware", replayTrace); err == nil || !strings.Contains(stderr+err.Error(), "given twice") {
		t.Errorf("a policy given twice: err %v, stderr %q", err, stderr)
	}
}
