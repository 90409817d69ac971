package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestDocs_SpeculativeAndOffloadThroughputTable: the throughput table of
// docs/speculative-and-offload.md is what the page's commands print (the
// page says so); the replay is deterministic, so the figures must match
// to the table's rounding.
func TestDocs_SpeculativeAndOffloadThroughputTable(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "speculative-and-offload.md"))
	if err != nil {
		t.Fatal(err)
	}
	workload := strings.Fields("--workers 1 --num-gpu-blocks 600 --seed 7 --requests 600 --rate 2 --input-len 1500 " +
		"--output-len 128 --prefix-groups 40 --prefix-len 1024 --turns 3 --turn-gap 10s")
	if !strings.Contains(strings.Join(strings.Fields(string(page)), " "), strings.Join(workload, " ")) {
		t.Fatal("the page's workload changed: update this test's copy")
	}
	spec := `{"method":"eagle","num_speculative_tokens":3,"acceptance_rate":0.7}`
	for _, tc := range []struct {
		row   string
		extra []string
	}{
		{"baseline", nil},
		{"CPU tier 8 GiB", []string{"--kv-offloading-size", "8"}},
		{"speculative k = 3, 0.7", []string{"--speculative-config", spec}},
		{"both", []string{"--speculative-config", spec, "--kv-offloading-size", "8"}},
	} {
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(tc.row) + ` \|(.*)\|$`).FindStringSubmatch(string(page))
		if m == nil {
			t.Fatalf("no table row %q", tc.row)
		}
		var cells []string
		for _, c := range strings.Split(m[1], "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		args := append(append([]string{"replay", "--json"}, workload...), tc.extra...)
		stdout, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.row, err, stderr)
		}
		var report struct {
			Summary struct {
				Duration    float64                `json:"duration_s"`
				Throughput  float64                `json:"output_token_throughput"`
				HitRate     float64                `json:"prefix_cache_hit_rate"`
				Preemptions int                    `json:"preemptions"`
				TTFT        struct{ Mean float64 } `json:"ttft_ms"`
				ITL         struct{ Mean float64 } `json:"itl_ms"`
				E2E         struct{ Mean float64 } `json:"e2e_ms"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("%s: %v", tc.row, err)
		}
		s := report.Summary
		got := []string{fmt.Sprintf("%.2f", s.Duration), fmt.Sprintf("%.2f", s.Throughput), fmt.Sprintf("%.2f %%", 100*s.HitRate),
			thousandsSep(s.TTFT.Mean), fmt.Sprintf("%.2f", s.ITL.Mean), thousandsSep(s.E2E.Mean), fmt.Sprint(s.Preemptions)}
		if strings.Join(got, " | ") != strings.Join(cells, " | ") {
			t.Errorf("row %q:\n page %q\n run  %q", tc.row, cells, got)
		}
	}
}

// thousandsSep rounds x and writes it with thousands separators.
func thousandsSep(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
