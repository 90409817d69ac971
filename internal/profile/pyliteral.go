package profile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxLiteralDepth bounds container nesting in a .npy header. Real headers
// nest two deep (the dict and its shape tuple); the bound keeps a crafted
// header of a million '[' from exhausting the stack.
const maxLiteralDepth = 16

// pyLiteral parses the subset of Python literals .npy headers use: dicts,
// tuples, lists, quoted strings, integers (with an optional Python 2 "L"
// suffix), True, False and None.
type pyLiteral struct {
	src string
	pos int
}

func (p *pyLiteral) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// value parses one literal at container nesting depth.
func (p *pyLiteral) value(depth int) (any, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, errors.New("unexpected end of header")
	}
	switch c := p.src[p.pos]; {
	case c == '{' || c == '(' || c == '[':
		if depth >= maxLiteralDepth {
			return nil, fmt.Errorf("containers nested deeper than %d", maxLiteralDepth)
		}
		p.pos++
		if c == '{' {
			return p.dict(depth + 1)
		}
		end := byte(')')
		if c == '[' {
			end = ']'
		}
		return p.sequence(end, depth+1)
	case c == '\'' || c == '"':
		return p.str(c)
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.integer()
	default:
		for _, kw := range []struct {
			word  string
			value any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.src[p.pos:], kw.word) {
				p.pos += len(kw.word)
				return kw.value, nil
			}
		}
		return nil, fmt.Errorf("unexpected %q", p.src[p.pos:])
	}
}

// dict parses the rest of a dict after its '{'.
func (p *pyLiteral) dict(depth int) (map[string]any, error) {
	d := map[string]any{}
	for {
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			return d, nil
		}
		k, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, errors.New("dict key is not a string")
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, fmt.Errorf("missing ':' after key %q", key)
		}
		p.pos++
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		d[key] = v
		if err := p.separator('}'); err != nil {
			return nil, err
		}
	}
}

// sequence parses the rest of a tuple or list after its opening bracket.
func (p *pyLiteral) sequence(end byte, depth int) ([]any, error) {
	seq := []any{}
	for {
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == end {
			p.pos++
			return seq, nil
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		seq = append(seq, v)
		if err := p.separator(end); err != nil {
			return nil, err
		}
	}
}

// str parses a string literal quoted with quote; a backslash keeps the
// next byte as it is (headers hold no escapes that need decoding).
func (p *pyLiteral) str(quote byte) (string, error) {
	p.pos++
	var sb strings.Builder
	for p.pos < len(p.src) {
		ch := p.src[p.pos]
		p.pos++
		switch {
		case ch == quote:
			return sb.String(), nil
		case ch == '\\' && p.pos < len(p.src):
			sb.WriteByte(p.src[p.pos])
			p.pos++
		default:
			sb.WriteByte(ch)
		}
	}
	return "", errors.New("unterminated string")
}

// integer parses a decimal integer with an optional sign and Python 2 "L".
func (p *pyLiteral) integer() (int, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", p.src[start:p.pos])
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'L' || p.src[p.pos] == 'l') {
		p.pos++
	}
	return n, nil
}

// separator consumes the ',' after a container element, or accepts the
// container's closing byte (left for the caller's loop to consume).
func (p *pyLiteral) separator(end byte) error {
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		return nil
	}
	if p.pos < len(p.src) && p.src[p.pos] == end {
		return nil
	}
	return fmt.Errorf("expected ',' or %q", end)
}
