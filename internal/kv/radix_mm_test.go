package kv

import (
	"slices"
	"testing"
)

// TestRadixPadValueVectors checks the pad value against Python's hashlib,
// SGLang's data_hash reduced as set_pad_value reduces it:
//
//	int.from_bytes(hashlib.sha256(b).digest()[:8], "big") % (1 << 30)
//
// with b the NUL-joined ids.
func TestRadixPadValueVectors(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want uint32
	}{
		{nil, 419175444},                        // b""
		{[]string{"abc"}, 251777002},            // b"abc"
		{[]string{"img-a"}, 796812537},          // b"img-a"
		{[]string{"img-a", "img-b"}, 492488863}, // b"img-a\x00img-b"
		{[]string{"", "x"}, 819762160},          // b"\x00x"
	} {
		if got := RadixPadValue(tc.ids...); got != tc.want {
			t.Errorf("RadixPadValue(%q) = %d, want %d", tc.ids, got, tc.want)
		}
	}
}

func TestPadRadixKey(t *testing.T) {
	base := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	for _, tc := range []struct {
		name string
		pads []MMPad
		want []uint32
	}{
		{"none", nil, base},
		{"one run", []MMPad{{Offset: 2, Length: 3, Value: 9}}, []uint32{1, 2, 9, 9, 9, 6, 7, 8}},
		{"two values", []MMPad{{Offset: 0, Length: 1, Value: 7}, {Offset: 6, Length: 2, Value: 9}}, []uint32{7, 2, 3, 4, 5, 6, 9, 9}},
		{"past the end is clipped", []MMPad{{Offset: 6, Length: 10, Value: 9}}, []uint32{1, 2, 3, 4, 5, 6, 9, 9}},
		{"before the start is clipped", []MMPad{{Offset: -2, Length: 3, Value: 9}}, []uint32{9, 2, 3, 4, 5, 6, 7, 8}},
		{"outside or empty runs do nothing", []MMPad{{Offset: 8, Length: 2, Value: 9}, {Offset: -5, Length: 2, Value: 9}, {Offset: 1, Length: 0, Value: 9}, {Offset: 1, Length: -4, Value: 9}}, base},
		{"a huge length does not overflow", []MMPad{{Offset: 3, Length: int(^uint(0) >> 1), Value: 9}}, []uint32{1, 2, 3, 9, 9, 9, 9, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Clone(base)
			PadRadixKey(got, tc.pads)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
