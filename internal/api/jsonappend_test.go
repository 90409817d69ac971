package api

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzAppendFloat: finite floats are written byte for byte as encoding/json
// writes them and decode to the same bits; NaN and ±Inf become null.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e13,
		-0.0001234, math.MaxFloat64, math.SmallestNonzeroFloat64, -9999.999, math.Inf(1), math.NaN()} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		got := appendFloat(nil, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if string(got) != "null" {
				t.Errorf("appendFloat(%v) = %s, want null", v, got)
			}
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
		var back float64
		if err := json.Unmarshal(got, &back); err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Errorf("appendFloat(%v) = %s decodes to %v (%v)", v, got, back, err)
		}
	})
}

// FuzzAppendIntegers: token-id arrays and byte-value arrays are written as
// encoding/json writes []uint32 and []int.
func FuzzAppendIntegers(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Add([]byte("héllo"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ids := make([]uint32, 0, len(raw)/4)
		for i := 0; i+4 <= len(raw); i += 4 {
			ids = append(ids, uint32(raw[i])|uint32(raw[i+1])<<8|uint32(raw[i+2])<<16|uint32(raw[i+3])<<24)
		}
		want, _ := json.Marshal(ids)
		if got := appendUint32s(nil, ids); !bytes.Equal(got, want) {
			t.Errorf("appendUint32s(%v) = %s, encoding/json writes %s", ids, got, want)
		}
		values := make([]int, len(raw))
		for i, c := range raw {
			values[i] = int(c)
		}
		want, _ = json.Marshal(values)
		if got := appendByteValues(nil, string(raw)); !bytes.Equal(got, want) {
			t.Errorf("appendByteValues(%q) = %s, encoding/json writes %s", raw, got, want)
		}
	})
}
