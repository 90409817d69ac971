package hftokenizer

import (
	"strings"
	"unicode/utf8"
)

// Encode returns the token ids of text. addSpecialTokens applies the
// post-processor (e.g. Llama's leading BOS), as Hugging Face's
// add_special_tokens does. Special-token strings inside text (such as
// "<|im_start|>") become their special ids, as in Hugging Face's default.
// Invalid UTF-8 bytes are read as U+FFFD, the character Go's JSON decoder
// would have produced.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) []uint32 {
	if !utf8.ValidString(text) {
		text = replaceInvalidUTF8(text)
	}
	ids := make([]uint32, 0, len(text)/3+4)
	if addSpecialTokens {
		ids = append(ids, t.postProcess.prefix...)
	}
	var stack [8]section
	sections := t.rawTrie.split(text, stack[:0])
	applyStrips(sections, t.added)
	for index, s := range sections {
		ids = t.encodeSection(ids, s, index)
	}
	if addSpecialTokens {
		ids = append(ids, t.postProcess.suffix...)
	}
	return ids
}

// encodeSection encodes one section of the added-token split: an added
// token, or plain text that is normalized, split again at normalized added
// tokens, pre-tokenized and run through the model.
func (t *Tokenizer) encodeSection(ids []uint32, s section, index int) []uint32 {
	if s.token >= 0 {
		return append(ids, t.added[s.token].id)
	}
	text := s.text
	if text == "" {
		return ids
	}
	if i, ok := t.addedByContent[text]; ok {
		return append(ids, t.added[i].id)
	}
	if t.normalize != nil {
		text = t.normalize(text)
		if text == "" {
			return ids
		}
	}
	var stack [4]section
	parts := t.normalizedTrie.split(text, stack[:0])
	applyStrips(parts, t.added)
	for _, part := range parts {
		if part.token >= 0 {
			ids = append(ids, t.added[part.token].id)
			continue
		}
		if part.text == "" {
			continue
		}
		if i, ok := t.addedByContent[part.text]; ok {
			ids = append(ids, t.added[i].id)
			continue
		}
		unk := false
		t.preTokenize.run(part.text, index, func(piece string) {
			ids, unk = t.model.encodeWord(piece, ids, unk)
		})
	}
	return ids
}

// replaceInvalidUTF8 replaces every invalid byte with U+FFFD, as
// encoding/json does when it decodes a string.
func replaceInvalidUTF8(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}
