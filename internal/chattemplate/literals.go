package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodePythonString decodes the inside of a Jinja2 string literal, which
// Jinja2 reads with Python's unicode-escape rules.
func decodePythonString(lit string) (string, error) {
	if strings.IndexByte(lit, '\\') < 0 {
		return lit, nil
	}
	return decodeEscapes(lit, false)
}

// decodeEscapes decodes Python's backslash escapes in text. With latin1,
// every other non-ASCII byte becomes the character of that code point, as
// Python's codecs.decode(text, "unicode_escape") does to UTF-8 text.
func decodeEscapes(lit string, latin1 bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c != '\\' || i+1 >= len(lit) {
			if latin1 && c >= utf8.RuneSelf {
				b.WriteRune(rune(c))
			} else {
				b.WriteByte(c)
			}
			continue
		}
		i++
		if decoded, ok := shortEscape(lit[i]); ok {
			b.WriteByte(decoded)
			continue
		}
		switch e := lit[i]; e {
		case '\n':
			// backslash-newline continues the line
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			digits := 2
			switch e {
			case 'u':
				digits = 4
			case 'U':
				digits = 8
			}
			if i+digits >= len(lit) {
				return "", fmt.Errorf(`truncated \%c escape in string literal`, e)
			}
			n, err := strconv.ParseUint(lit[i+1:i+1+digits], 16, 32)
			if err != nil || n > utf8.MaxRune {
				return "", fmt.Errorf(`bad \%c escape in string literal`, e)
			}
			b.WriteRune(rune(n))
			i += digits
		case '0', '1', '2', '3', '4', '5', '6', '7':
			end := i
			for end < len(lit) && end < i+3 && lit[end] >= '0' && lit[end] <= '7' {
				end++
			}
			n, _ := strconv.ParseUint(lit[i:end], 8, 32)
			b.WriteRune(rune(n))
			i = end - 1
		default:
			// Python keeps an unknown escape as written.
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}

// encodeEngineString quotes text for the engine, whose literals know only
// the \\ and \' escapes needed here; every other byte is written raw.
func encodeEngineString(text string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(text) + "'"
}
