package hftokenizer

import (
	"unicode"
	"unicode/utf8"
)

// splitPattern is a Split pre-tokenizer regex this package runs with a
// hand-written scanner, because the patterns use look-ahead (\s+(?!\S)),
// which Go's regexp does not have. A pattern is recognised only by its
// exact text: anything else fails Load instead of being approximated.
type splitPattern struct {
	name  string
	regex string
	// maxDigits is how many \p{N} characters one piece holds: 1 for
	// Qwen2's \p{N}, 3 for Llama 3's \p{N}{1,3}. It is the only difference
	// between the two patterns.
	maxDigits int
}

// knownSplitPatterns are the patterns in use, exactly as tokenizer.json
// spells them.
var knownSplitPatterns = []splitPattern{
	{
		name:      "Qwen2",
		regex:     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		maxDigits: 1,
	},
	{
		name:      "Llama 3",
		regex:     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		maxDigits: 3,
	},
}

func findSplitPattern(regex string) (splitPattern, bool) {
	for _, p := range knownSplitPatterns {
		if p.regex == regex {
			return p, true
		}
	}
	return splitPattern{}, false
}

// charClass is the class of a rune as the patterns see it.
type charClass uint8

const (
	classOther   charClass = iota // none of the below: punctuation, symbols, marks, …
	classLetter                   // \p{L}
	classNumber                   // \p{N}
	classSpace                    // \s: Unicode White_Space (tokenizers.js and Oniguruma agree)
	classNewline                  // \r or \n (also \s)
)

var asciiClass = func() [utf8.RuneSelf]charClass {
	var table [utf8.RuneSelf]charClass
	for r := rune(0); r < utf8.RuneSelf; r++ {
		table[r] = classifySlow(r)
	}
	return table
}()

func classifySlow(r rune) charClass {
	switch {
	case r == '\r' || r == '\n':
		return classNewline
	case unicode.Is(unicode.White_Space, r):
		return classSpace
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	}
	return classOther
}

// runeAt decodes the rune at text[pos] and its class.
func runeAt(text string, pos int) (rune, int, charClass) {
	if c := text[pos]; c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, size := utf8.DecodeRuneInString(text[pos:])
	return r, size, classifySlow(r)
}

func isSpaceClass(c charClass) bool { return c == classSpace || c == classNewline }

// letterRunEnd returns the end of the run of letters starting at pos,
// with a fast path over ASCII letters (most text).
func letterRunEnd(text string, pos int) int {
	for pos < len(text) {
		c := text[pos]
		if c < utf8.RuneSelf {
			if asciiClass[c] != classLetter {
				return pos
			}
			pos++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[pos:])
		if !unicode.IsLetter(r) {
			return pos
		}
		pos += size
	}
	return pos
}

// runEnd returns the end of the run of runes starting at pos for which
// keep is true, stopping after max runes when max > 0.
func runEnd(text string, pos int, keep func(charClass) bool, max int) int {
	for n := 0; pos < len(text) && (max == 0 || n < max); n++ {
		_, size, class := runeAt(text, pos)
		if !keep(class) {
			break
		}
		pos += size
	}
	return pos
}

func isNumberClass(c charClass) bool  { return c == classNumber }
func isOtherClass(c charClass) bool   { return c == classOther }
func isNewlineClass(c charClass) bool { return c == classNewline }

// split calls emit with each piece of text, in order; the pieces tile the
// text (every character matches one of the alternatives).
func (p splitPattern) split(text string, emit func(string)) {
	for pos := 0; pos < len(text); {
		end := p.matchAt(text, pos)
		emit(text[pos:end])
		pos = end
	}
}

// matchAt returns the end of the match at pos, trying the alternatives in
// the pattern's order as a backtracking regex engine does.
func (p splitPattern) matchAt(text string, pos int) int {
	r0, size0, class0 := runeAt(text, pos)
	next := pos + size0

	// (?i:'s|'t|'re|'ve|'m|'ll|'d) — case-insensitive over ASCII only, as
	// tokenizers.js rewrites it.
	if r0 == '\'' {
		if end := contractionEnd(text, next); end > 0 {
			return end
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+
	if class0 == classLetter {
		return letterRunEnd(text, next)
	}
	if class0 != classNewline && class0 != classNumber && next < len(text) {
		if _, _, class1 := runeAt(text, next); class1 == classLetter {
			return letterRunEnd(text, next)
		}
	}

	// \p{N} or \p{N}{1,3}
	if class0 == classNumber {
		return runEnd(text, pos, isNumberClass, p.maxDigits)
	}

	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	othersFrom := -1
	if r0 == ' ' {
		if next < len(text) {
			if _, _, class1 := runeAt(text, next); class1 == classOther {
				othersFrom = next
			}
		}
	} else if class0 == classOther {
		othersFrom = pos
	}
	if othersFrom >= 0 {
		end := runEnd(text, othersFrom, isOtherClass, 0)
		return runEnd(text, end, isNewlineClass, 0)
	}

	// Here text[pos] is whitespace: find the run's end, the start of its
	// last character and the end of its last newline.
	end, lastStart, lastNewlineEnd := pos, pos, -1
	for end < len(text) {
		_, size, class := runeAt(text, end)
		if !isSpaceClass(class) {
			break
		}
		if class == classNewline {
			lastNewlineEnd = end + size
		}
		lastStart = end
		end += size
	}
	// \s*[\r\n]+ — \s* backs off to the run's last newline.
	if lastNewlineEnd > 0 {
		return lastNewlineEnd
	}
	// \s+(?!\S) — at the end of the text the whole run; before a
	// non-space, all but the last whitespace character.
	if end == len(text) {
		return end
	}
	if lastStart > pos {
		return lastStart
	}
	// \s+
	return end
}

// contractionEnd matches s|t|re|ve|m|ll|d (ASCII case-insensitive) at pos
// and returns the end of the match, or 0.
func contractionEnd(text string, pos int) int {
	lower := func(i int) byte {
		if i >= len(text) {
			return 0
		}
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch c := lower(pos); c {
	case 's', 't', 'm', 'd':
		return pos + 1
	case 'r', 'v':
		if lower(pos+1) == 'e' {
			return pos + 2
		}
	case 'l':
		if lower(pos+1) == 'l' {
			return pos + 2
		}
	}
	return 0
}
