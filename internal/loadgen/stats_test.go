package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"single", []float64{7}, 0.5, 7},
		{"single p99", []float64{7}, 0.99, 7},
		{"median odd", []float64{1, 2, 3}, 0.5, 2},
		{"median even", []float64{1, 2, 3, 4}, 0.5, 2.5},
		{"p90 of 1..10", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9.1},
		{"p99 of 1..100", seq(100), 0.99, 99.01},
		{"p50 of 1..100", seq(100), 0.5, 50.5},
		{"min", []float64{3, 5}, 0, 3},
		{"max", []float64{3, 5}, 1, 5},
		{"below 0 clamps", []float64{3, 5}, -1, 3},
		{"above 1 clamps", []float64{3, 5}, 2, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Percentile(q=%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("empty input should give NaN")
	}
}

func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want Dist
	}{
		{"empty", nil, Dist{}},
		{"unsorted", []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}, Dist{Count: 4, Mean: 2.5, P50: 2.5, P90: 3.7, P99: 3.97, Max: 4}},
		{"constant", []time.Duration{ms, ms, ms}, Dist{Count: 3, Mean: 1, P50: 1, P90: 1, P99: 1, Max: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.in)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if got.Count != tc.want.Count || !near(got.Mean, tc.want.Mean) || !near(got.P50, tc.want.P50) ||
				!near(got.P90, tc.want.P90) || !near(got.P99, tc.want.P99) || !near(got.Max, tc.want.Max) {
				t.Errorf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReportRows checks the rows every load client's table shares: error
// kinds sorted by name, and the latency table's columns.
func TestReportRows(t *testing.T) {
	var b strings.Builder
	WriteErrorKinds(&b, map[string]int{"timeout": 2, "HTTP 500": 7})
	WriteErrorKinds(&b, nil)
	WriteLatencies(&b, Dist{Count: 3, Mean: 1.5, P50: 1, P90: 2, P99: 2.5, Max: 3}, Dist{Count: 9}, Dist{Count: 3, Max: 12.345})
	want := "       7 × HTTP 500\n" +
		"       2 × timeout\n" +
		"latency ms       mean        p50        p90        p99        max          n\n" +
		"TTFT             1.50       1.00       2.00       2.50       3.00          3\n" +
		"ITL              0.00       0.00       0.00       0.00       0.00          9\n" +
		"E2E              0.00       0.00       0.00       0.00      12.35          3\n"
	if b.String() != want {
		t.Errorf("rows:\n%s\nwant:\n%s", b.String(), want)
	}
}
