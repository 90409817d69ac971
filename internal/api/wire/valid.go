package wire

import (
	"bytes"
	"encoding/binary"
)

// validJSON reports whether b is one JSON value between optional
// whitespace that encoding/json would accept, for bodies whose size makes
// encoding/json's byte-at-a-time scanner the request's largest cost (a
// multimodal body carries megabytes of base64 in a few strings). It is at
// least as strict as encoding/json: whatever it accepts, encoding/json
// accepts, so a caller can skip encoding/json's own pass when it returns
// true and use encoding/json (and its error messages) when it returns
// false. It skips string contents with bytes.IndexByte and a check of eight bytes at a time, and returns
// where the strings of bigString bytes or more end (nil when there are
// none), for the splitters and ParseString of the body's nested values.
func validJSON(b []byte) (bool, bigStrings) {
	v := validator{b: b}
	v.space()
	if !v.value() {
		return false, nil
	}
	v.space()
	return v.i == len(b), v.big
}

// bigString is the length from which a string (quotes included) is
// remembered in bigStrings: the size of a data URL, not of a text.
const bigString = splitMin

// bigStrings remembers, for one validated body, each string of bigString
// bytes or more, keyed by the address of its opening quote in the body:
// the splitter of every nesting level would otherwise scan a data URL's
// megabytes again to find its end, and ParseString once more to check its
// bytes. A nil bigStrings knows nothing and costs nothing.
type bigStrings map[*byte]bigStringInfo

type bigStringInfo struct {
	n     int  // length with the quotes
	plain bool // printable ASCII without escapes: its value is its bytes
}

// at returns what is known of the string starting at b[i].
func (bs bigStrings) at(b []byte, i int) (bigStringInfo, bool) {
	if bs == nil || len(b)-i < bigString {
		return bigStringInfo{}, false
	}
	s, ok := bs[&b[i]]
	return s, ok && i+s.n <= len(b)
}

// maxDepth is encoding/json's nesting limit; deeper input is left to it
// (and its error).
const maxDepth = 10000

type validator struct {
	b     []byte
	i     int
	depth int
	big   bigStrings
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

// scanPlain sums up a run of string bytes that holds no quote and no
// backslash: seen is every byte OR-ed (its lanes8 bits say non-ASCII),
// ctl has a lanes8 bit set when some byte is a control character. The
// has-less-than term is exact about whether any lane matches, so the
// words' terms can be OR-ed and tested once, after the loop.
func scanPlain(b []byte) (seen, ctl uint64) {
	for len(b) >= 32 {
		x0, x1 := binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
		x2, x3 := binary.LittleEndian.Uint64(b[16:24]), binary.LittleEndian.Uint64(b[24:32])
		seen |= x0 | x1 | x2 | x3
		ctl |= (x0-lanes1*0x20)&^x0 | (x1-lanes1*0x20)&^x1 | (x2-lanes1*0x20)&^x2 | (x3-lanes1*0x20)&^x3
		b = b[32:]
	}
	for _, c := range b {
		seen |= uint64(c)
		if c < 0x20 {
			ctl |= lanes8
		}
	}
	return seen, ctl & lanes8
}

// escapeLen is the length of the valid escape sequence at b[i] ('\\'), 0
// when it is not one.
func escapeLen(b []byte, i int) int {
	if i+1 >= len(b) {
		return 0
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if i+6 > len(b) {
			return 0
		}
		for _, h := range b[i+2 : i+6] {
			if !isHex(h) {
				return 0
			}
		}
		return 6
	}
	return 0
}

// string checks a string from its opening quote: no control characters,
// valid escapes. encoding/json accepts any other byte, valid UTF-8 or not.
// It finds quotes and backslashes with bytes.IndexByte and checks the runs
// between them with scanPlain; each byte is passed once by each.
func (v *validator) string() bool {
	b := v.b
	start := v.i
	i := start + 1
	var seen, ctl uint64
	escaped := false
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return false
		}
		q += i
		// b[i:q] holds no quote; check it up to each backslash.
		for i <= q {
			bs := bytes.IndexByte(b[i:q], '\\')
			if bs < 0 {
				break
			}
			bs += i
			s, c := scanPlain(b[i:bs])
			seen, ctl = seen|s, ctl|c
			n := escapeLen(b, bs)
			if n == 0 {
				return false
			}
			escaped = true
			i = bs + n
		}
		if i > q {
			continue // the quote at q was escaped
		}
		s, c := scanPlain(b[i:q])
		if ctl|c != 0 {
			return false
		}
		v.i = q + 1
		if n := v.i - start; n >= bigString {
			if v.big == nil {
				v.big = bigStrings{}
			}
			v.big[&b[start]] = bigStringInfo{n: n, plain: !escaped && (seen|s)&lanes8 == 0}
		}
		return true
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
