package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGapHistogramAgreesWithExactPercentiles compares the fixed-memory
// histogram with exact percentiles of the same 50,000 values.
func TestGapHistogramAgreesWithExactPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h gapHistogram
	values := make([]float64, 0, 50000)
	for i := 0; i < 50000; i++ {
		v := math.Exp(rng.NormFloat64()) * 20 // lognormal around 20 ms
		if i%100 == 0 {
			v = 0 // tokens delivered together
		}
		h.add(v)
		values = append(values, v)
	}
	got, want := h.stat(), summarize(values)
	if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max || math.Abs(got.Mean-want.Mean) > 1e-9*want.Mean {
		t.Fatalf("exact fields: got %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", got.P50, want.P50}, {"p90", got.P90, want.P90}, {"p95", got.P95, want.P95}, {"p99", got.P99, want.P99}} {
		if math.Abs(c.got-c.want) > 0.0006*c.want {
			t.Errorf("%s = %.6f, exact %.6f", c.name, c.got, c.want)
		}
	}
}

// TestGapHistogramRunsSumLikeSingleValues feeds long runs of equal gaps (as
// one pass delivers) and checks count, min, max and mean against a plain
// one-at-a-time sum, bit for bit, and a percentile against the exact one.
func TestGapHistogramRunsSumLikeSingleValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var h gapHistogram
	var values []float64
	var sum float64
	for len(values) < 100_000 {
		v := float64(rng.IntN(40_000_000)) / 1e6 // ms at ns resolution
		if rng.IntN(10) == 0 {
			v = 0
		}
		for range 1 + rng.IntN(300) {
			h.add(v)
			values = append(values, v)
			sum += v
		}
	}
	got, want := h.stat(), summarize(values)
	if got.Count != len(values) || got.Min != want.Min || got.Max != want.Max || got.Mean != sum/float64(len(values)) {
		t.Fatalf("exact fields: got %+v, want count %d min %v max %v mean %v", got, len(values), want.Min, want.Max, sum/float64(len(values)))
	}
	if math.Abs(got.P50-want.P50) > 0.0006*want.P50 {
		t.Errorf("p50 = %.6f, exact %.6f", got.P50, want.P50)
	}
}
