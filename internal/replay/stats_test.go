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
