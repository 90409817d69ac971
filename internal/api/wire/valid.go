package wire

import "encoding/binary"

// validJSON reports whether b is one JSON value between optional
// whitespace that encoding/json would accept, for bodies whose size makes
// encoding/json's byte-at-a-time scanner the request's largest cost (a
// multimodal body carries megabytes of base64 in a few strings). It is at
// least as strict as encoding/json: whatever it accepts, encoding/json
// accepts, so a caller can skip encoding/json's own pass when it returns
// true and use encoding/json (and its error messages) when it returns
// false. It skips string contents eight bytes at a time.
func validJSON(b []byte) bool {
	v := validator{b: b}
	v.space()
	if !v.value() {
		return false
	}
	v.space()
	return v.i == len(b)
}

// maxDepth is encoding/json's nesting limit; deeper input is left to it
// (and its error).
const maxDepth = 10000

type validator struct {
	b     []byte
	i     int
	depth int
}

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value() bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object()
	case c == '[':
		return v.array()
	case c == '"':
		return v.string()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	}
	return false
}

func (v *validator) object() bool {
	if v.depth++; v.depth > maxDepth {
		return false
	}
	v.i++ // '{'
	v.space()
	if v.i < len(v.b) && v.b[v.i] == '}' {
		v.i++
		v.depth--
		return true
	}
	for {
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.string() {
			return false
		}
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value() {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			v.depth--
			return true
		default:
			return false
		}
	}
}

func (v *validator) array() bool {
	if v.depth++; v.depth > maxDepth {
		return false
	}
	v.i++ // '['
	v.space()
	if v.i < len(v.b) && v.b[v.i] == ']' {
		v.i++
		v.depth--
		return true
	}
	for {
		if !v.value() {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			v.depth--
			return true
		default:
			return false
		}
	}
}

func (v *validator) literal(lit string) bool {
	if len(v.b)-v.i < len(lit) || string(v.b[v.i:v.i+len(lit)]) != lit {
		return false
	}
	v.i += len(lit)
	return true
}

func (v *validator) digits() int {
	n := 0
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
		n++
	}
	return n
}

// number is JSON's -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (v *validator) number() bool {
	if v.b[v.i] == '-' {
		v.i++
	}
	if v.i >= len(v.b) {
		return false
	}
	if v.b[v.i] == '0' {
		v.i++
	} else if v.digits() == 0 {
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}

// SWAR constants: a byte's lowest and highest bit in every lane.
const (
	lanes1 = 0x0101010101010101
	lanes8 = 0x8080808080808080
)

// stringStop is nonzero when a byte of x (eight bytes of a string) is '"',
// '\\' or a control character: the bytes a string scan must stop at. Each
// term is the classic has-zero-byte / has-less-than test, exact about
// whether any lane matches.
func stringStop(x uint64) uint64 {
	q := x ^ (lanes1 * '"')
	s := x ^ (lanes1 * '\\')
	return (((q - lanes1) &^ q) | ((s - lanes1) &^ s) | ((x - lanes1*0x20) &^ x)) & lanes8
}

// string checks a string from its opening quote: no control characters,
// valid escapes. encoding/json accepts any other byte, valid UTF-8 or not.
func (v *validator) string() bool {
	b := v.b
	i := v.i + 1
	for {
		for i+16 <= len(b) && stringStop(binary.LittleEndian.Uint64(b[i:]))|stringStop(binary.LittleEndian.Uint64(b[i+8:])) == 0 {
			i += 16
		}
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			v.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return false
					}
				}
				i += 6
			default:
				return false
			}
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
