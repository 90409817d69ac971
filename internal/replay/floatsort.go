package replay

import (
	"math"
	"slices"
)

// radixSortThreshold is the length from which sortFloats radix-sorts: below
// it the comparison sort is as fast and needs no scratch.
const radixSortThreshold = 4096

// sortFloats sorts values ascending, as slices.Sort does, for the end of a
// run's report, where it sorts a few latencies per request. A least
// significant digit radix sort over the values' ordered bit patterns takes a
// fixed 8 linear passes instead of n·log n comparisons; NaNs, which have no
// place in that order, fall back to slices.Sort.
func sortFloats(values []float64) {
	if len(values) < radixSortThreshold {
		slices.Sort(values)
		return
	}
	keys := make([]uint64, len(values))
	for i, v := range values {
		if v != v { // NaN
			slices.Sort(values)
			return
		}
		keys[i] = orderedBits(v)
	}
	scratch := make([]uint64, len(keys))
	var counts [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		counts = [256]int{}
		for _, k := range keys {
			counts[byte(k>>shift)]++
		}
		if counts[byte(keys[0]>>shift)] == len(keys) {
			continue // every key has this digit: the pass would not move anything
		}
		pos := 0
		for d, c := range counts {
			counts[d] = pos
			pos += c
		}
		for _, k := range keys {
			d := byte(k >> shift)
			scratch[counts[d]] = k
			counts[d]++
		}
		keys, scratch = scratch, keys
	}
	for i, k := range keys {
		values[i] = fromOrderedBits(k)
	}
}

// orderedBits maps a float to an integer with the same order: positive
// floats get the sign bit set, negative ones all bits flipped.
func orderedBits(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// fromOrderedBits inverts orderedBits.
func fromOrderedBits(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
