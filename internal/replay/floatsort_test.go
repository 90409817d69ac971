package replay

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortFloatsMatchesSlicesSort compares the radix sort with the standard
// library's comparison sort on inputs above and below the radix threshold.
func TestSortFloatsMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	tests := []struct {
		name string
		gen  func(i int) float64
		n    int
	}{
		{"latencies with duplicates", func(int) float64 { return float64(rng.IntN(5000)) / 7 }, 50_000},
		{"lognormal", func(int) float64 { return math.Exp(rng.NormFloat64()) * 20 }, 20_000},
		{"mixed signs, zeros and infinities", func(i int) float64 {
			switch i % 11 {
			case 0:
				return 0
			case 1:
				return math.Inf(1)
			case 2:
				return math.Inf(-1)
			case 3:
				return math.SmallestNonzeroFloat64
			}
			return rng.NormFloat64() * 1e6
		}, 30_000},
		{"all equal", func(int) float64 { return 42.5 }, 10_000},
		{"short", func(int) float64 { return rng.Float64() }, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]float64, tc.n)
			for i := range got {
				got[i] = tc.gen(i)
			}
			want := slices.Clone(got)
			slices.Sort(want)
			sortFloats(got)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("index %d: got %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSortFloatsSortsNaNLikeSlicesSort checks the NaN fallback.
func TestSortFloatsSortsNaNLikeSlicesSort(t *testing.T) {
	values := make([]float64, 5000)
	for i := range values {
		values[i] = float64(len(values) - i)
	}
	values[100] = math.NaN()
	sortFloats(values)
	if !math.IsNaN(values[0]) || values[1] != 1 || values[len(values)-1] != float64(len(values)) {
		t.Fatalf("got %v … %v", values[:3], values[len(values)-1])
	}
}
