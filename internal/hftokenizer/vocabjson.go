package hftokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The vocabulary and merges are most of tokenizer.json (151k entries each
// for Qwen3, 514k merges for Gemma 3). encoding/json decodes them through
// reflection at about a third of the speed of this small scanner, which
// reads exactly the two shapes they have: {"token": id, …} and
// ["a b", …] or [["a", "b"], …]. Strings with escapes fall back to
// encoding/json, so the result is the same.

// jsonScanner reads one JSON value held in memory.
type jsonScanner struct {
	data []byte
	pos  int
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

// expect consumes the byte c after optional whitespace.
func (s *jsonScanner) expect(c byte) error {
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != c {
		return s.errorf("want %q", c)
	}
	s.pos++
	return nil
}

// peek returns the next non-space byte without consuming it (0 at end).
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// next reports whether another element follows in an object or array
// closed by end, consuming the separating comma or the closing byte.
func (s *jsonScanner) next(end byte, first bool) (bool, error) {
	c := s.peek()
	switch {
	case c == end:
		s.pos++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		s.pos++
		return true, nil
	}
	return false, s.errorf("want ',' or %q", end)
}

func (s *jsonScanner) string() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start, escaped := s.pos, false
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '\\':
			escaped = true
			s.pos += 2
			continue
		case '"':
			s.pos++
			if !escaped {
				return string(s.data[start : s.pos-1]), nil
			}
			var text string
			if err := json.Unmarshal(s.data[start-1:s.pos], &text); err != nil {
				return "", s.errorf("%v", err)
			}
			return text, nil
		}
		s.pos++
	}
	return "", s.errorf("unterminated string")
}

func (s *jsonScanner) uint32() (uint32, error) {
	s.skipSpace()
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	n, err := strconv.ParseUint(string(s.data[start:s.pos]), 10, 32)
	if err != nil {
		return 0, s.errorf("want a token id: %v", err)
	}
	return uint32(n), nil
}

// parseVocab reads {"token": id, …}.
func parseVocab(raw []byte) (map[string]uint32, error) {
	s := &jsonScanner{data: raw}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	vocab := make(map[string]uint32, len(raw)/16)
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if err != nil || !more {
			return vocab, err
		}
		token, err := s.string()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		id, err := s.uint32()
		if err != nil {
			return nil, err
		}
		vocab[token] = id
	}
}

// parseMerges reads ["a b", …] or [["a", "b"], …].
func parseMerges(raw []byte) ([][2]string, error) {
	s := &jsonScanner{data: raw}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	var merges [][2]string
	for first := true; ; first = false {
		more, err := s.next(']', first)
		if err != nil || !more {
			return merges, err
		}
		var pair [2]string
		if s.peek() == '[' {
			s.pos++
			if pair[0], err = s.string(); err != nil {
				return nil, err
			}
			if err := s.expect(','); err != nil {
				return nil, err
			}
			if pair[1], err = s.string(); err != nil {
				return nil, err
			}
			if err := s.expect(']'); err != nil {
				return nil, err
			}
		} else {
			joined, err := s.string()
			if err != nil {
				return nil, err
			}
			var ok bool
			if pair[0], pair[1], ok = cutMerge(joined); !ok {
				return nil, fmt.Errorf("merge %d %q: no space between the two parts", len(merges), joined)
			}
		}
		merges = append(merges, pair)
	}
}
