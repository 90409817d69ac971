// Package tokenizer is mocker-server's built-in deterministic tokenizer and
// ChatML chat template. No model files are loaded: one vocabulary of 131072
// ids serves every model name.
//
// Vocabulary:
//
//	0–4          special strings <|endoftext|> <|im_start|> <|im_end|> <think> </think>
//	5–15         reserved (empty text)
//	16, 17, 18   "." "," "\n"
//	19–999       reserved
//	1000–7399    word tokens " " + Word(id−1000)
//	7400–8191    reserved
//	8192–131071  hashed pieces (rendered as a readable 7-byte stand-in)
//
// All text functions of this package are allocation-free except those that
// build a new string from several tokens (Decode, DecodeLiteral, RenderChat)
// or return new slices (Encode, Pieces).
package tokenizer

import "sync"

// Vocabulary layout.
const (
	// VocabSize is the number of token ids; valid ids are [0, VocabSize).
	VocabSize = 131072

	EOS        = 0 // <|endoftext|>
	IMStart    = 1 // <|im_start|>
	IMEnd      = 2 // <|im_end|>
	ThinkStart = 3 // <think>
	ThinkEnd   = 4 // </think>

	Period  = 16 // "."
	Comma   = 17 // ","
	Newline = 18 // "\n"

	// WordBase is the id of Word(0); word tokens are [WordBase, WordBase+NumWords).
	WordBase = 1000
	// NumWords is the number of word tokens (80 × 80 two-syllable words).
	NumWords = 6400
	// HashedBase is the first hashed-piece id; hashed ids are [HashedBase, VocabSize).
	HashedBase = 8192
	// NumHashed is the number of hashed-piece ids.
	NumHashed = VocabSize - HashedBase
)

// Special strings of ids 0–4, in id order.
var specials = [5]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"}

// SpecialString returns the literal string of special id 0–4, or "" for any
// other id.
func SpecialString(id uint32) string {
	if id < uint32(len(specials)) {
		return specials[id]
	}
	return ""
}

const (
	consonants = "bdfghjklmnprstvz"
	vowels     = "aeiou"
)

// wordTable holds " "+Word(k) for every k at [5k, 5k+5): slicing it yields the
// text of a word token without allocating.
var wordTable = func() string {
	b := make([]byte, 0, NumWords*5)
	for k := 0; k < NumWords; k++ {
		b = append(b, ' ')
		b = appendSyl(b, k/80)
		b = appendSyl(b, k%80)
	}
	return string(b)
}()

// hashedTable holds the 7-byte stand-in text of every hashed id (840 KiB),
// built on first use so that processes that never render a hashed id do not
// pay for it.
var hashedTable = sync.OnceValue(func() string {
	b := make([]byte, 0, NumHashed*7)
	for x := 0; x < NumHashed; x++ {
		b = appendHashed(b, x)
	}
	return string(b)
})

// syl(x) = C[x div 5] + V[x mod 5] for x in [0, 80).
func appendSyl(b []byte, x int) []byte {
	return append(b, consonants[x/5], vowels[x%5])
}

// appendHashed appends " " + syl((x div 6400) mod 80) + syl((x div 80) mod 80) + syl(x mod 80).
func appendHashed(b []byte, x int) []byte {
	b = append(b, ' ')
	b = appendSyl(b, (x/6400)%80)
	b = appendSyl(b, (x/80)%80)
	return appendSyl(b, x%80)
}

// Word returns word(k) = syl(k div 80) + syl(k mod 80) for k in [0, 6400)
// (without the leading space of the word token), or "" out of range.
func Word(k int) string {
	if k < 0 || k >= NumWords {
		return ""
	}
	return wordTable[5*k+1 : 5*k+5]
}

// TokenText returns the text of a generated token:
// special and reserved ids render as "", 16–18 as "." "," "\n", word tokens
// as " "+word, hashed ids as their stand-in. Ids outside the vocabulary
// render as "". It never allocates.
func TokenText(id uint32) string {
	switch {
	case id >= WordBase && id < WordBase+NumWords:
		k := int(id-WordBase) * 5
		return wordTable[k : k+5]
	case id == Period:
		return "."
	case id == Comma:
		return ","
	case id == Newline:
		return "\n"
	case id >= HashedBase && id < VocabSize:
		x := int(id-HashedBase) * 7
		return hashedTable()[x : x+7]
	}
	return ""
}

// LiteralText returns the text of id as /detokenize and logprobs show it:
// like TokenText, but special ids 0–4 render as their literal strings
// (e.g. "<think>"). It never allocates.
func LiteralText(id uint32) string {
	if id < uint32(len(specials)) {
		return specials[id]
	}
	return TokenText(id)
}

// AppendText appends TokenText(id) to dst without any other allocation
// (hashed stand-ins are computed in place, the lazy table is not touched).
func AppendText(dst []byte, id uint32) []byte {
	if id >= HashedBase && id < VocabSize {
		return appendHashed(dst, int(id-HashedBase))
	}
	return append(dst, TokenText(id)...)
}

// AppendLiteralText appends LiteralText(id) to dst.
func AppendLiteralText(dst []byte, id uint32) []byte {
	if id < uint32(len(specials)) {
		return append(dst, specials[id]...)
	}
	return AppendText(dst, id)
}

// Decode returns the generated-text form of ids (TokenText of each id
// concatenated; special and reserved ids contribute nothing).
func Decode(ids []uint32) string {
	n := 0
	for _, id := range ids {
		n += textLen(id)
	}
	b := make([]byte, 0, n)
	for _, id := range ids {
		b = AppendText(b, id)
	}
	return string(b)
}

// DecodeLiteral returns the /detokenize form of ids (LiteralText of each id
// concatenated). Pieces outside the word table do not round-trip: hashed ids
// render as their stand-in, reserved ids as "" (what /detokenize answers).
func DecodeLiteral(ids []uint32) string {
	n := 0
	for _, id := range ids {
		n += len(SpecialString(id)) + textLen(id)
	}
	b := make([]byte, 0, n)
	for _, id := range ids {
		b = AppendLiteralText(b, id)
	}
	return string(b)
}

// textLen is len(TokenText(id)) without touching the hashed table.
func textLen(id uint32) int {
	switch {
	case id >= WordBase && id < WordBase+NumWords:
		return 5
	case id == Period, id == Comma, id == Newline:
		return 1
	case id >= HashedBase && id < VocabSize:
		return 7
	}
	return 0
}
