package ui

import (
	"slices"
	"testing"
)

func TestRing_KeepsTheNewestInOrder(t *testing.T) {
	for _, tc := range []struct {
		pushes int
		want   []int
	}{
		{0, nil},
		{2, []int{1, 2}},
		{3, []int{1, 2, 3}},
		{7, []int{5, 6, 7}},
	} {
		r := newRing[int](3)
		for i := 1; i <= tc.pushes; i++ {
			r.push(i)
		}
		var got []int
		r.each(func(v int) { got = append(got, v) })
		if !slices.Equal(got, tc.want) || r.len() != len(tc.want) {
			t.Errorf("%d pushes: %v (len %d), want %v", tc.pushes, got, r.len(), tc.want)
		}
	}
}

func TestPercentiles_NearestRankOfTheSortedValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals []float64
		want [3]float64
	}{
		{"empty", nil, [3]float64{}},
		{"one", []float64{7}, [3]float64{7, 7, 7}},
		{"1..100 shuffled", func() []float64 {
			v := make([]float64, 100)
			for i := range v {
				v[i] = float64((i*37)%100 + 1)
			}
			return v
		}(), [3]float64{51, 91, 100}},
	} {
		if got := percentiles(tc.vals); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
