// Package jsonenc appends JSON strings to a caller's buffer without
// allocating beyond growing it: the one JSON string escaper of the server's
// hand-written encoders (SSE chunks, the live UI's view, generated JSON
// instances).
//
// The contract is vLLM's: its JSON is written by Python (pydantic's
// model_dump_json, escaping as json.dumps with ensure_ascii=False), so '"'
// and '\\' are backslash-escaped, control characters are written as \b,
// \f, \n, \r, \t or lowercase \u00xx, and everything else is written as is
// — HTML characters ('<', '>', '&') and U+2028/U+2029 included. Invalid
// UTF-8 becomes U+FFFD (written \ufffd), one per bad byte, as encoding/json
// does.
//
// The bytes equal encoding/json's with SetEscapeHTML(false) except for
// U+2028 and U+2029, which encoding/json always escapes (for JSONP); JSON
// allows both raw and an SSE client splits lines only at CR and LF, so
// they decode to the same string either way.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// safeASCII[c] is true for ASCII bytes that need no escaping in a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s to dst as a quoted JSON string.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringContent(dst, s)
	return append(dst, '"')
}

// AppendStringContent appends the escaped body of s as a JSON string,
// without the quotes: for a string assembled from pieces (a chunk's
// content written token by token).
func AppendStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
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
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
		}
	}
	return append(dst, s[start:]...)
}

// nonASCIIRunEnd returns the end of the run of bytes ≥ 0x80 starting at i.
func nonASCIIRunEnd(s string, i int) int {
	for i < len(s) && s[i] >= utf8.RuneSelf {
		i++
	}
	return i
}
