package api

import (
	"math"
	"strconv"
)

// Hand-written JSON appenders for the streaming hot path: they write into a
// caller-owned buffer and never allocate beyond growing it.

// appendFloat appends f the way encoding/json formats float64 values;
// NaN and ±Inf, which encoding/json refuses, become null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9 like encoding/json.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendUint32s appends a JSON array of ids.
func appendUint32s(b []byte, ids []uint32) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return append(b, ']')
}

// appendByteValues appends the UTF-8 bytes of s as a JSON array of integers.
func appendByteValues(b []byte, s string) []byte {
	b = append(b, '[')
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(s[i]), 10)
	}
	return append(b, ']')
}
