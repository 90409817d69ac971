package hftokenizer

import (
	"strings"
	"unicode/utf8"
)

// addedToken is a token matched in the raw text before normalization and
// pre-tokenization (special tokens such as <|im_start|>, and extra tokens
// such as Gemma's "\n\n" or Qwen's <think>).
type addedToken struct {
	id         uint32
	content    string
	special    bool
	lstrip     bool
	rstrip     bool
	normalized bool
}

// tokenTrie finds added tokens in text: at each position the longest
// token that starts there, scanning left to right (Hugging Face's
// leftmost-longest rule).
type tokenTrie struct {
	nodes []trieNode
	// first marks the bytes some token starts with, so most positions are
	// skipped without touching the trie; firstBytes lists them.
	first      [256]bool
	firstBytes string
}

type trieNode struct {
	children map[byte]int32
	token    int32 // index into the tokenizer's added tokens, or -1
}

func newTokenTrie() *tokenTrie {
	return &tokenTrie{nodes: []trieNode{{token: -1}}}
}

func (t *tokenTrie) insert(key string, token int) {
	if key == "" {
		return
	}
	if !t.first[key[0]] {
		t.first[key[0]] = true
		t.firstBytes += key[:1]
	}
	node := int32(0)
	for i := 0; i < len(key); i++ {
		next, ok := t.nodes[node].children[key[i]]
		if !ok {
			next = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{token: -1})
			if t.nodes[node].children == nil {
				t.nodes[node].children = map[byte]int32{}
			}
			t.nodes[node].children[key[i]] = next
		}
		node = next
	}
	t.nodes[node].token = int32(token)
}

// longestAt returns the token (index) of the longest key starting at pos
// and the match's end, or -1.
func (t *tokenTrie) longestAt(text string, pos int) (token, end int) {
	token, node := -1, int32(0)
	for i := pos; i < len(text); i++ {
		next, ok := t.nodes[node].children[text[i]]
		if !ok {
			break
		}
		node = next
		if t.nodes[node].token >= 0 {
			token, end = int(t.nodes[node].token), i+1
		}
	}
	return token, end
}

// section is a piece of the input: either plain text or one added token.
type section struct {
	text  string
	token int // index of the added token, or -1 for plain text
}

// split cuts text at every added token, appending to sections.
func (t *tokenTrie) split(text string, sections []section) []section {
	if len(t.nodes) == 1 {
		return append(sections, section{text: text, token: -1})
	}
	start := 0
	for i := 0; i < len(text); {
		if len(t.firstBytes) == 1 {
			// One possible first byte (Qwen's "<"): jump to it.
			skip := strings.IndexByte(text[i:], t.firstBytes[0])
			if skip < 0 {
				break
			}
			i += skip
		}
		if t.first[text[i]] {
			if token, end := t.longestAt(text, i); token >= 0 {
				if i > start {
					sections = append(sections, section{text: text[start:i], token: -1})
				}
				sections = append(sections, section{text: text[i:end], token: token})
				i, start = end, end
				continue
			}
		}
		i++
	}
	if start < len(text) {
		sections = append(sections, section{text: text[start:], token: -1})
	}
	return sections
}

// applyStrips trims the plain neighbours of tokens with lstrip/rstrip, as
// tokenizers.js does (String.prototype.trimEnd/trimStart).
func applyStrips(sections []section, tokens []addedToken) {
	for i, s := range sections {
		if s.token < 0 {
			continue
		}
		if tokens[s.token].lstrip && i > 0 && sections[i-1].token < 0 {
			sections[i-1].text = trimJSSpaceRight(sections[i-1].text)
		}
		if tokens[s.token].rstrip && i+1 < len(sections) && sections[i+1].token < 0 {
			sections[i+1].text = trimJSSpaceLeft(sections[i+1].text)
		}
	}
}

// isJSSpace is JavaScript's trim() set: WhiteSpace and LineTerminator,
// which includes U+FEFF and not U+0085.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func trimJSSpaceLeft(s string) string {
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[size:]
	}
	return s
}

func trimJSSpaceRight(s string) string {
	for s != "" {
		r, size := utf8.DecodeLastRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[:len(s)-size]
	}
	return s
}
