package tokenizer

import (
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// Encode tokenizes text: it splits it into pieces (pieceEnd) and maps each
// piece to an id (PieceID).
// No BOS or other special token is added.
func Encode(text string) []uint32 {
	return AppendEncode(make([]uint32, 0, len(text)/3+8), text)
}

// AppendEncode appends the token ids of text to dst and returns the extended
// slice.
func AppendEncode(dst []uint32, text string) []uint32 {
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		dst = append(dst, PieceID(text[i:j]))
		i = j
	}
	return dst
}

// Pieces returns the pre-tokenized pieces of text (the token strings of
// /tokenize's return_token_strs). Pieces are substrings of text; an invalid
// UTF-8 byte is a piece by itself.
func Pieces(text string) []string {
	out := make([]string, 0, len(text)/3+8)
	for i := 0; i < len(text); {
		j := pieceEnd(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// PieceID maps one piece to its id: special strings → 0–4,
// "." "," "\n" → 16–18, " "+word(k) → 1000+k, anything else →
// 8192 + XXH3-64(seed 0, piece) mod 122880.
func PieceID(p string) uint32 {
	switch len(p) {
	case 1:
		switch p[0] {
		case '.':
			return Period
		case ',':
			return Comma
		case '\n':
			return Newline
		}
	case 5:
		if p[0] == ' ' {
			c1, v1, c2, v2 := consIdx[p[1]], vowIdx[p[2]], consIdx[p[3]], vowIdx[p[4]]
			if c1|v1|c2|v2 >= 0 {
				k := (int(c1)*5+int(v1))*80 + int(c2)*5 + int(v2)
				return WordBase + uint32(k)
			}
		}
	}
	if len(p) > 0 && p[0] == '<' {
		for id, s := range specials {
			if p == s {
				return uint32(id)
			}
		}
	}
	return HashedBase + uint32(xxh3.HashString(p)%NumHashed)
}

// consIdx / vowIdx invert the consonant and vowel alphabets (-1 = not one).
var consIdx, vowIdx = func() (c, v [256]int8) {
	for i := range c {
		c[i], v[i] = -1, -1
	}
	for i := 0; i < len(consonants); i++ {
		c[consonants[i]] = int8(i)
	}
	for i := 0; i < len(vowels); i++ {
		v[vowels[i]] = int8(i)
	}
	return c, v
}()

// specialAt returns the length of the special string starting at t[i], or 0.
func specialAt(t string, i int) int {
	if t[i] != '<' {
		return 0
	}
	rest := t[i:]
	for _, s := range specials {
		if len(rest) >= len(s) && rest[:len(s)] == s {
			return len(s)
		}
	}
	return 0
}

// attachable reports whether a single space right before t[k] attaches to
// the piece starting at t[k]: the character exists, is not space, tab, \n or
// \r, and does not start a special string (a leading space joins the next
// word, as in GPT-style pre-tokenizers).
func attachable(t string, k int) bool {
	if k >= len(t) {
		return false
	}
	switch t[k] {
	case ' ', '\t', '\n', '\r':
		return false
	}
	return specialAt(t, k) == 0
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

const (
	maxLetters = 6
	maxDigits  = 3
	maxSpaces  = 16
)

// pieceEnd returns the end (exclusive) of the piece that starts at t[i],
// i < len(t).
func pieceEnd(t string, i int) int {
	// 1. Special strings.
	if n := specialAt(t, i); n > 0 {
		return i + n
	}
	j := i
	c := t[i]
	// 2. A single space attaches to the following piece.
	if c == ' ' && attachable(t, i+1) {
		j = i + 1
		c = t[j]
	}
	// 3. The piece proper, starting at t[j].
	switch {
	case isLetter(c):
		k := j + 1
		for k < len(t) && k-j < maxLetters && isLetter(t[k]) {
			k++
		}
		return k
	case isDigit(c):
		k := j + 1
		for k < len(t) && k-j < maxDigits && isDigit(t[k]) {
			k++
		}
		return k
	case c == '\n':
		return j + 1
	case c == '\r' && j+1 < len(t) && t[j+1] == '\n':
		return j + 2
	case (c == ' ' || c == '\t') && j == i:
		// A run of spaces/tabs that did not attach: at most 16 bytes; a run
		// of more than one character ending with a space that is followed by
		// an attachable character leaves that space for the next piece.
		k := i + 1
		for k < len(t) && k-i < maxSpaces && (t[k] == ' ' || t[k] == '\t') {
			k++
		}
		if k-i > 1 && t[k-1] == ' ' && attachable(t, k) {
			k--
		}
		return k
	}
	// Anything else: one UTF-8 character; an invalid byte is a piece by
	// itself (DecodeRuneInString reports size 1 for it).
	if c < utf8.RuneSelf {
		return j + 1
	}
	_, size := utf8.DecodeRuneInString(t[j:])
	return j + size
}
