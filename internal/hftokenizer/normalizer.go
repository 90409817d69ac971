package hftokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a section of input text before pre-tokenization.
type normalizer func(string) string

// compileNormalizer builds the normalizer of tokenizer.json; nil means
// none. Supported: NFC, NFD, NFKC, NFKD, Replace (literal pattern),
// Prepend and Sequence of those.
func compileNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		return unicodeForm(norm.NFC), nil
	case "NFD":
		return unicodeForm(norm.NFD), nil
	case "NFKC":
		return unicodeForm(norm.NFKC), nil
	case "NFKD":
		return unicodeForm(norm.NFKD), nil
	case "Replace":
		from, err := literalPattern("normalizer Replace", c.Pattern)
		if err != nil {
			return nil, err
		}
		to := ""
		if c.Content != nil {
			to = *c.Content
		}
		return func(s string) string { return strings.ReplaceAll(s, from, to) }, nil
	case "Prepend":
		prefix := c.Prepend
		// Sections are never empty here, so unconditional prepending
		// matches both tokenizers.js and the Rust crate (which skips
		// empty input).
		return func(s string) string { return prefix + s }, nil
	case "Sequence":
		var steps []normalizer
		for i, member := range c.Normalizers {
			step, err := compileNormalizer(member)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if step != nil {
				steps = append(steps, step)
			}
		}
		return func(s string) string {
			for _, step := range steps {
				s = step(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (supported: NFC, NFD, NFKC, NFKD, Replace, Prepend, Sequence)", c.Type)
}

// unicodeForm applies a Unicode normalization form; the quick check skips
// the copy for text already in that form (all ASCII text, most prose).
func unicodeForm(form norm.Form) normalizer {
	return func(s string) string {
		if form.IsNormalString(s) {
			return s
		}
		return form.String(s)
	}
}

// literalPattern returns a pattern's literal string; regex patterns are
// not supported where a literal is expected.
func literalPattern(where string, p *patternJSON) (string, error) {
	switch {
	case p == nil:
		return "", fmt.Errorf("%s: missing pattern", where)
	case p.String != nil && *p.String != "":
		return *p.String, nil
	case p.Regex != nil:
		return "", fmt.Errorf("%s: regex pattern %q is not supported (only literal String patterns)", where, *p.Regex)
	}
	return "", fmt.Errorf("%s: empty pattern", where)
}
