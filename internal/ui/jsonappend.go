package ui

import (
	"math"
	"strconv"
)

// The engine view is encoded by hand: it is rebuilt up to ten times a
// second with thousands of rows, and encoding/json's reflection over
// []any rows cost ~10 ms per update (BenchmarkEncodeEngine).

// appendFloat appends f with at most two decimals; NaN as null (a time
// that has not happened).
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, round2(f), 'f', -1, 64)
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// appendKey appends ,"key": (without the comma when first).
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}
