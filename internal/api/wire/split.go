package wire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A body is validated once, by DecodeBody; its nested objects and arrays
// are then split here without running encoding/json's validator and
// decoder over them again at every level (a multimodal message holds
// megabytes of data URLs, which each level would otherwise scan twice).
// Anything the splitter does not expect — a key with escapes, malformed
// structure — makes it give up, and the caller decodes with encoding/json
// as before, errors included.

// splitMin is the size from which nested values are split here: smaller
// ones cost encoding/json little, and keep its exact behaviour.
const splitMin = 4 << 10

// splitObject returns a JSON object's members (values alias raw). big,
// when the body's, lets it jump over the long strings.
func splitObject(raw []byte, big bigStrings) (map[string]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return m, skipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		end, ok := skipString(raw, i, big)
		if !ok || bytes.IndexByte(raw[i+1:end-1], '\\') >= 0 || !utf8.Valid(raw[i+1:end-1]) {
			// encoding/json unescapes keys and replaces invalid UTF-8.
			return nil, false
		}
		key := string(raw[i+1 : end-1])
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend, ok := skipValue(raw, i, big)
		if !ok {
			return nil, false
		}
		m[key] = raw[i:vend:vend]
		i = skipSpace(raw, vend)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return m, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

// splitArray returns a JSON array's elements (aliasing raw).
func splitArray(raw []byte, big bigStrings) ([]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	out := []json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, skipSpace(raw, i+1) == len(raw)
	}
	for {
		end, ok := skipValue(raw, i, big)
		if !ok {
			return nil, false
		}
		out = append(out, raw[i:end:end])
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return out, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int, big bigStrings) (int, bool) {
	if s, ok := big.at(b, i); ok {
		return i + s.n, true
	}
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return 0, false
		}
		q += j
		bs := 0
		for k := q - 1; k > i && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int, big bigStrings) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i, big)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j, big)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return 0, false
	}
	return j, true
}
