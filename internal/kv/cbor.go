package kv

import "encoding/binary"

// The few pieces of canonical CBOR (RFC 8949's core deterministic encoding: shortest-form heads,
// definite lengths) that sha256_cbor block hashing needs. Encoding by hand
// into a reused buffer keeps hashing allocation-free; the tests check the
// output byte for byte against github.com/fxamacker/cbor/v2's canonical
// encoder.

// CBOR major types, already shifted into the high three bits of a head.
const (
	cborUint  = 0 << 5
	cborNeg   = 1 << 5
	cborBytes = 2 << 5
	cborText  = 3 << 5
	cborArray = 4 << 5
	// cborNull is the complete encoding of null (major type 7, value 22).
	cborNull = 0xf6
)

// appendCBORHead appends the shortest head of major type major with
// argument n.
func appendCBORHead(buf []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(buf, major|byte(n))
	case n <= 0xff:
		return append(buf, major|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, major|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(buf, major|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, major|27), n)
}

// appendCBORText appends s as a CBOR text string. Go strings are not
// checked for valid UTF-8, matching what a byte-level hash needs.
func appendCBORText(buf []byte, s string) []byte {
	buf = appendCBORHead(buf, cborText, uint64(len(s)))
	return append(buf, s...)
}
