package chattemplate

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
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
		b.WriteString(pyFloatRepr(val.AsFloat()))
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

// pyFloatRepr formats f as Python's repr(float) (also what json.dumps
// writes): the shortest digits that round-trip, positional notation with at
// least one fractional digit for 1e-4 <= |f| < 1e16, otherwise
// "d.ddde+XX" with a two-digit minimum exponent.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	// 'e' with precision -1 gives the shortest round-trip digits.
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mantissa, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mantissa, ".", "", 1)
	if exp < -4 || exp >= 16 {
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		expSign := "+"
		if exp < 0 {
			expSign, exp = "-", -exp
		}
		expDigits := strconv.Itoa(exp)
		if len(expDigits) < 2 {
			expDigits = "0" + expDigits
		}
		return sign + out + "e" + expSign + expDigits
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}
