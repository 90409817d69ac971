package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// decodeJSON turns raw JSON into a template value the way Python's json.loads
// does for transformers: objects keep their key order (templates iterate over
// tool parameter properties and print them), numbers without a fraction or
// exponent stay integers and the rest are floats, null is None, and a
// repeated key keeps its first position with the last value.
//
// It is a small dedicated parser rather than encoding/json's token stream,
// which cost more than rendering the template itself.
func decodeJSON(raw []byte) (jinja.Value, error) {
	p := jsonParser{data: raw}
	p.skipSpace()
	val, err := p.value(0)
	if err != nil {
		return jinja.Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return jinja.Value{}, p.errorf("unexpected data after the JSON value")
	}
	return val, nil
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 512

type jsonParser struct {
	data []byte
	pos  int
	// members is a stack of the key/value pairs of the objects being
	// read, so each object's key slice and map get their final size at
	// once.
	members []jsonMember
	// elements is the same kind of stack for arrays.
	elements []jinja.Value
}

type jsonMember struct {
	key   string
	value jinja.Value
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Value{}, p.errorf("nested deeper than %d levels", maxJSONDepth)
	}
	if p.pos >= len(p.data) {
		return jinja.Value{}, p.errorf("unexpected end of JSON")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		return jinja.NewString(s), err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case p.literal("true"):
		return jinja.NewBool(true), nil
	case p.literal("false"):
		return jinja.NewBool(false), nil
	case p.literal("null"):
		return jinja.None(), nil
	}
	return jinja.Value{}, p.errorf("invalid character %q", p.data[p.pos])
}

func (p *jsonParser) literal(word string) bool {
	if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) object(depth int) (jinja.Value, error) {
	p.pos++ // {
	p.skipSpace()
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return jinja.NewDict(), nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return jinja.Value{}, p.errorf("expected a string key")
		}
		key, err := p.string()
		if err != nil {
			return jinja.Value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return jinja.Value{}, p.errorf("expected ':' after key %q", key)
		}
		p.pos++
		p.skipSpace()
		item, err := p.value(depth + 1)
		if err != nil {
			return jinja.Value{}, err
		}
		p.members = append(p.members, jsonMember{key, item})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jinja.Value{}, p.errorf("object is never closed")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			return newDict(p.members[base:]), nil
		default:
			return jinja.Value{}, p.errorf("expected ',' or '}' in object")
		}
	}
}

// newDict builds a dict from its members in order; a repeated key keeps
// its first position and takes the last value, as a Python dict does.
func newDict(members []jsonMember) jinja.Value {
	obj := jinja.NewDict()
	dict := obj.AsDict()
	dict.Keys = make([]string, 0, len(members))
	if len(members) > 8 {
		dict.Data = make(map[string]jinja.Value, len(members))
	}
	for _, m := range members {
		dict.Set(m.key, m.value)
	}
	return obj
}

func (p *jsonParser) array(depth int) (jinja.Value, error) {
	p.pos++ // [
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return jinja.NewList(nil), nil
	}
	base := len(p.elements)
	defer func() { p.elements = p.elements[:base] }()
	for {
		item, err := p.value(depth + 1)
		if err != nil {
			return jinja.Value{}, err
		}
		p.elements = append(p.elements, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jinja.Value{}, p.errorf("array is never closed")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return jinja.NewList(append([]jinja.Value(nil), p.elements[base:]...)), nil
		default:
			return jinja.Value{}, p.errorf("expected ',' or ']' in array")
		}
	}
}

// commonStrings are keys and values every chat request repeats; reading
// them from this table saves an allocation each (the lookup itself does
// not allocate).
var commonStrings = func() map[string]string {
	words := []string{
		"role", "content", "user", "assistant", "system", "tool", "developer", "tool_calls", "tool_call_id",
		"name", "type", "function", "arguments", "id", "text", "image_url", "reasoning_content",
		"description", "parameters", "properties", "required", "enum", "items", "object", "string",
		"integer", "number", "boolean", "array", "null", "default", "title", "format",
	}
	table := make(map[string]string, len(words))
	for _, w := range words {
		table[w] = w
	}
	return table
}()

// string reads a string literal; p.pos is at its opening quote.
func (p *jsonParser) string() (string, error) {
	p.pos++
	start := p.pos
	// Fast path: no escapes, no control characters, valid UTF-8.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			if common, ok := commonStrings[string(s)]; ok {
				p.pos++
				return common, nil
			}
			if utf8.Valid(s) {
				p.pos++
				return string(s), nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	p.pos = start
	var b strings.Builder
	b.Grow(p.pos - start + 16)
	for p.pos < len(p.data) {
		// Copy the run of plain ASCII up to the next byte that needs care.
		run := p.pos
		for run < len(p.data) {
			if c := p.data[run]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			run++
		}
		b.Write(p.data[p.pos:run])
		p.pos = run
		if p.pos >= len(p.data) {
			break
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
			r, size := utf8.DecodeRune(p.data[p.pos:])
			b.WriteRune(r)
			p.pos += size
		}
	}
	return "", p.errorf("string is never closed")
}

// escape decodes one backslash escape at p.pos.
func (p *jsonParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.data) {
		return p.errorf("string is never closed")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	if decoded, ok := shortEscape(c); ok {
		b.WriteByte(decoded)
		return nil
	}
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// A high surrogate followed by \u low surrogate is one rune;
			// an unpaired surrogate becomes U+FFFD as in encoding/json.
			low := rune(-1)
			if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
				save := p.pos
				p.pos += 2
				if low, err = p.hex4(); err != nil {
					return err
				}
				if utf16.DecodeRune(r, low) == utf8.RuneError {
					p.pos = save
					low = -1
				}
			}
			r = utf16.DecodeRune(r, low)
		}
		b.WriteRune(r)
	default:
		return p.errorf("invalid escape \\%c", c)
	}
	return nil
}

func (p *jsonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errorf("truncated \\u escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}

// number reads a JSON number and keeps Python's int/float split: "2" is an
// int, "2.0" and "2e0" are floats (printed "2.0" by both str() and
// json.dumps).
func (p *jsonParser) number() (jinja.Value, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if digits() == 0 || p.data[intStart] == '0' && p.pos-intStart > 1 {
		return jinja.Value{}, p.errorf("invalid number")
	}
	isFloat := false
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		isFloat = true
		if digits() == 0 {
			return jinja.Value{}, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		isFloat = true
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return jinja.Value{}, p.errorf("invalid number")
		}
	}
	text := string(p.data[start:p.pos])
	if !isFloat {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			// Python ints are unbounded; the closest this engine has is a
			// float, which prints differently. Refuse rather than render a
			// different prompt.
			return jinja.Value{}, p.errorf("integer %s does not fit in 64 bits", text)
		}
		return jinja.NewInt(n), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && (!errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0)) {
		// Too large for a float64 (1E700): encoding/json, which read the
		// request before this reader sees it, refuses such a number too,
		// so the two readers agree on what a document is. (Python would
		// read inf.) Underflow (1e-400) reads as 0, as in both.
		return jinja.Value{}, p.errorf("number %s is out of range", text)
	}
	return jinja.NewFloat(f), nil
}
