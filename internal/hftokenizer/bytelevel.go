package hftokenizer

import "unicode/utf8"

// byteLevelAlphabet maps each byte to the printable rune GPT-2's byte-level
// BPE uses for it: printable Latin-1 bytes stand for themselves, the other
// 68 bytes are shifted to U+0100 and up, in byte order.
var byteLevelAlphabet = func() [256]rune {
	var table [256]rune
	shifted := rune(0)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE && b <= 0xFF:
			table[b] = rune(b)
		default:
			table[b] = 256 + shifted
			shifted++
		}
	}
	return table
}()

// byteLevelByte is the inverse of byteLevelAlphabet.
var byteLevelByte = func() map[rune]byte {
	inverse := make(map[rune]byte, 256)
	for b, r := range byteLevelAlphabet {
		inverse[r] = byte(b)
	}
	return inverse
}()

// byteLevelDecode turns a byte-level vocabulary string back into the bytes
// it stands for. A string with a rune outside the alphabet (never seen in a
// real vocabulary) decodes to its own UTF-8 bytes, as the Rust decoder does.
func byteLevelDecode(token string) string {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		b, ok := byteLevelByte[r]
		if !ok {
			return token
		}
		out = append(out, b)
	}
	return string(out)
}

// byteLevelEncode is the forward mapping: raw bytes to their vocabulary
// spelling (e.g. " hello" → "Ġhello").
func byteLevelEncode(raw string) string {
	out := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		out = utf8.AppendRune(out, byteLevelAlphabet[raw[i]])
	}
	return string(out)
}
