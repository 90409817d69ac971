package hftokenizer

import "unicode/utf8"

// appendLossyUTF8 appends src to dst as text, replacing every maximal
// invalid subpart with one U+FFFD — the WHATWG/Unicode "best practice"
// that JavaScript's TextDecoder, Rust's from_utf8_lossy and Python's
// errors="replace" share (Go's utf8.DecodeRune replaces byte by byte,
// which differs on truncated sequences such as E2 82 41).
//
// When final is false, a trailing sequence that is a valid but incomplete
// prefix of a character is not consumed: pending is its length, and the
// caller keeps those bytes until more arrive. When final is true such a
// prefix becomes one U+FFFD.
func appendLossyUTF8(dst, src []byte, final bool) (out []byte, pending int) {
	i := 0
	for i < len(src) {
		c := src[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		need, low, high := utf8SequenceShape(c)
		if need == 0 {
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		j := i + 1
		for k := 0; k < need; k++ {
			if j == len(src) {
				if !final {
					return dst, len(src) - i
				}
				return append(dst, "\uFFFD"...), 0
			}
			lo, hi := byte(0x80), byte(0xBF)
			if k == 0 {
				lo, hi = low, high
			}
			if src[j] < lo || src[j] > hi {
				break
			}
			j++
		}
		if j-i == need+1 {
			dst = append(dst, src[i:j]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		i = j
	}
	return dst, 0
}

// utf8SequenceShape says, for a non-ASCII lead byte, how many continuation
// bytes follow and the allowed range of the first one (which rules out
// overlong forms, surrogates and code points above U+10FFFF). need is 0
// for a byte that cannot start a character.
func utf8SequenceShape(lead byte) (need int, low, high byte) {
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		return 1, 0x80, 0xBF
	case lead == 0xE0:
		return 2, 0xA0, 0xBF
	case lead == 0xED:
		return 2, 0x80, 0x9F
	case lead >= 0xE1 && lead <= 0xEF:
		return 2, 0x80, 0xBF
	case lead == 0xF0:
		return 3, 0x90, 0xBF
	case lead == 0xF4:
		return 3, 0x80, 0x8F
	case lead >= 0xF1 && lead <= 0xF3:
		return 3, 0x80, 0xBF
	}
	return 0, 0, 0
}
