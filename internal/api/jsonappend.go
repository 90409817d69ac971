package api

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Hand-written JSON appenders for the streaming hot path: they write into a
// caller-owned buffer and never allocate beyond growing it.

const hexDigits = "0123456789abcdef"

// safeASCII[c] is true for ASCII bytes that need no escaping in a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a quoted JSON string the way vLLM's streamed
// chunks spell it (pydantic's model_dump_json; the same escaping as
// Python's json.dumps with ensure_ascii=False, which the tests check): '"' and '\\' are backslash-escaped, control
// characters are written as \b, \f, \n, \r, \t or \u00xx, and everything
// else is written as is — HTML characters ('<', '>', '&') and U+2028/U+2029
// included. Invalid UTF-8 becomes U+FFFD, one per bad byte.
//
// The bytes equal encoding/json's with SetEscapeHTML(false) except for
// U+2028 and U+2029, which encoding/json always escapes (for JSONP);
// an SSE client splits lines only at CR and LF, and JSON allows both
// characters raw, so they decode to the same string either way.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringContent(b, s)
	return append(b, '"')
}

// appendStringContent appends the escaped body of a JSON string (no quotes).
func appendStringContent(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// A run of non-ASCII bytes that is valid UTF-8 as a whole is
		// written as is: one utf8.ValidString over the run costs much
		// less than decoding it rune by rune, and real tokenizers' text
		// (CJK, accented words) is mostly such runs. Only a run with a
		// bad byte is decoded rune by rune (within the run, so a long
		// bad run stays linear).
		end := nonASCIIRunEnd(s, i)
		if utf8.ValidString(s[i:end]) {
			i = end
			continue
		}
		for i < end {
			r, size := utf8.DecodeRuneInString(s[i:end])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
		}
	}
	return append(b, s[start:]...)
}

// nonASCIIRunEnd returns the end of the run of bytes ≥ 0x80 starting at i.
func nonASCIIRunEnd(s string, i int) int {
	for i < len(s) && s[i] >= utf8.RuneSelf {
		i++
	}
	return i
}

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
