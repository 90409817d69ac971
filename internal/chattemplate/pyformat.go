package chattemplate

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"

	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// pyStr formats a value the way Python's str() does, which is what Jinja2
// prints for {{ value }}: None is "None", 2.0 is "2.0", lists and dicts use
// repr() for their items. Undefined prints as nothing, like Jinja2's default
// Undefined.
func pyStr(val jinja.Value) string {
	switch {
	case val.IsUndefined():
		return ""
	case val.IsString():
		return val.AsString()
	}
	var b strings.Builder
	writeRepr(&b, val)
	return b.String()
}

// writeRepr writes Python's repr() of val.
func writeRepr(b *strings.Builder, val jinja.Value) {
	switch {
	case val.IsUndefined(), val.IsNone():
		// An undefined value inside a container only reaches here through
		// a template that built the container itself; Jinja2 would print
		// its Undefined repr, which no real template relies on.
		b.WriteString("None")
	case val.IsBool():
		if val.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case val.IsInt():
		b.WriteString(strconv.FormatInt(val.AsInt(), 10))
	case val.IsFloat():
		b.WriteString(pyrepr.Float(val.AsFloat()))
	case val.IsString():
		writeStringRepr(b, val.AsString())
	case val.IsList():
		b.WriteByte('[')
		for i, item := range val.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, item)
		}
		b.WriteByte(']')
	case val.IsDict():
		dict := val.AsDict()
		b.WriteByte('{')
		for i, key := range dict.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeStringRepr(b, key)
			b.WriteString(": ")
			writeRepr(b, dict.Data[key])
		}
		b.WriteByte('}')
	default:
		b.WriteString(val.String())
	}
}

// writeStringRepr writes Python's repr() of a str: single quotes unless the
// text has a single quote and no double quote, backslash escapes for the
// quote, backslash and control characters, printable Unicode kept as is.
func writeStringRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			b.WriteString(`\x`)
			writeHex(b, uint32(r), 2)
		case r < 0x10000:
			b.WriteString(`\u`)
			writeHex(b, uint32(r), 4)
		default:
			b.WriteString(`\U`)
			writeHex(b, uint32(r), 8)
		}
	}
	b.WriteByte(quote)
}

func writeHex(b *strings.Builder, n uint32, digits int) {
	const hexDigits = "0123456789abcdef"
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(n>>uint(shift))&0xf])
	}
}
