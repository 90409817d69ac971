package chattemplate

import (
	"fmt"
	"strings"
)

// pieceKind classifies the parts of a template.
type pieceKind int

const (
	pieceText      pieceKind = iota // literal text
	pieceOutput                     // {{ … }}
	pieceStatement                  // {% … %}
	pieceComment                    // {# … #}
	pieceDropped                    // {% raw %}, {% endraw %}, {% generation %}, {% endgeneration %}
)

// piece is one part of a template; tags remember their whitespace-control
// markers ('-', '+' or 0) on each side.
type piece struct {
	kind        pieceKind
	text        string // the text, or a tag's body
	left, right byte
	line        int
}

func (p *piece) isTag() bool { return p.kind != pieceText }

// splitPieces cuts source into text and tags; a raw block's content is text.
func splitPieces(source string) ([]piece, error) {
	var pieces []piece
	pos := 0
	for {
		open := nextTagOpen(source, pos)
		if open < 0 {
			pieces = append(pieces, piece{kind: pieceText, text: source[pos:]})
			return pieces, nil
		}
		pieces = append(pieces, piece{kind: pieceText, text: source[pos:open]})
		if source[open+1] == '#' {
			end := strings.Index(source[open+2:], "#}")
			if end < 0 {
				return nil, fmt.Errorf("line %d: comment is never closed", lineAt(source, open))
			}
			body := source[open+2 : open+2+end]
			p := piece{kind: pieceComment, line: lineAt(source, open)}
			if body != "" && (body[0] == '-' || body[0] == '+') {
				p.left = body[0]
			}
			if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+') && (n > 1 || p.left == 0) {
				p.right = body[n-1]
			}
			pieces = append(pieces, p)
			pos = open + 2 + end + 2
			continue
		}
		tag, err := scanTag(source, open)
		if err != nil {
			return nil, err
		}
		p := piece{kind: pieceOutput, text: tag.body, line: lineAt(source, open)}
		if len(tag.opener) == 3 {
			p.left = tag.opener[2]
		}
		if len(tag.closer) == 3 {
			p.right = tag.closer[0]
		}
		pos = tag.end
		if tag.isStatement {
			p.kind = pieceStatement
			switch statementKeyword(tag.body) {
			case "generation", "endgeneration":
				p.kind = pieceDropped
			case "raw":
				p.kind = pieceDropped
				pieces = append(pieces, p)
				end, err := rawBlockEnd(source, tag.end)
				if err != nil {
					return nil, err
				}
				closing, _ := scanTag(source, end.open)
				pieces = append(pieces, piece{kind: pieceText, text: source[tag.end:end.open]})
				p = piece{kind: pieceDropped, line: lineAt(source, end.open)}
				if len(closing.opener) == 3 {
					p.left = closing.opener[2]
				}
				if len(closing.closer) == 3 {
					p.right = closing.closer[0]
				}
				pos = closing.end
			}
		}
		pieces = append(pieces, p)
	}
}

// applyWhitespaceControl trims the text pieces around tags as Jinja2's
// lexer does with trim_blocks and lstrip_blocks on:
//
//   - "-" on a tag's side strips all whitespace on that side;
//   - otherwise a block or comment tag that is alone on its line after
//     indentation loses that indentation (lstrip_blocks; "+" keeps it), and
//     the newline right after a block or comment tag goes (trim_blocks).
//
// Output tags ({{ }}) get neither default. Pieces are visited in order
// because lstrip_blocks looks at what the previous tag left: after a
// trimmed newline the following text starts a line.
func applyWhitespaceControl(pieces []piece) {
	lineStarting := true // the text at pieces[i] starts a line
	for i := range pieces {
		tag := &pieces[i]
		if !tag.isTag() {
			continue
		}
		isBlock := tag.kind != pieceOutput
		if i > 0 && pieces[i-1].kind == pieceText {
			text := &pieces[i-1].text
			switch {
			case tag.left == '-':
				*text = strings.TrimRightFunc(*text, isPythonSpace)
			case tag.left != '+' && isBlock:
				lineStart := strings.LastIndexByte(*text, '\n') + 1
				if (lineStart > 0 || lineStarting) && strings.Trim((*text)[lineStart:], " \t") == "" {
					*text = (*text)[:lineStart]
				}
			}
		}
		lineStarting = false
		if i+1 < len(pieces) && pieces[i+1].kind == pieceText {
			text := &pieces[i+1].text
			switch {
			case tag.right == '-':
				trimmed := strings.TrimLeftFunc(*text, isPythonSpace)
				lineStarting = strings.HasSuffix((*text)[:len(*text)-len(trimmed)], "\n")
				*text = trimmed
			case tag.right != '+' && isBlock && strings.HasPrefix(*text, "\n"):
				*text = (*text)[1:]
				lineStarting = true
			}
		}
	}
}

// nextTagOpen finds the next "{{", "{%" or "{#" at or after pos.
func nextTagOpen(source string, pos int) int {
	for {
		i := strings.IndexByte(source[pos:], '{')
		if i < 0 || pos+i+1 >= len(source) {
			return -1
		}
		switch source[pos+i+1] {
		case '{', '%', '#':
			return pos + i
		}
		pos += i + 1
	}
}

// scannedTag is one {{ … }} or {% … %} tag with its whitespace-control
// markers kept in opener and closer.
type scannedTag struct {
	opener, body, closer string
	isStatement          bool
	end                  int // offset just past the closer
}

// scanTag reads the tag starting at open. Like Jinja2's lexer it skips
// string literals and balanced brackets, so "}}" inside a dict literal or a
// string does not end the tag.
func scanTag(source string, open int) (scannedTag, error) {
	isStatement := source[open+1] == '%'
	closeChar := byte('}')
	if isStatement {
		closeChar = '%'
	}
	bodyStart := open + 2
	if bodyStart < len(source) && (source[bodyStart] == '-' || source[bodyStart] == '+') {
		bodyStart++
	}
	depth := 0
	for i := bodyStart; i < len(source); i++ {
		switch c := source[i]; c {
		case '\'', '"':
			end := skipString(source, i)
			if end < 0 {
				return scannedTag{}, fmt.Errorf("line %d: string literal is never closed", lineAt(source, i))
			}
			i = end - 1
		case '(', '[', '{':
			depth++
		case ')', ']':
			depth--
		case '}', '%':
			if c == '}' && depth > 0 {
				depth--
				continue
			}
			if c != closeChar || depth > 0 || i+1 >= len(source) || source[i+1] != '}' {
				continue
			}
			bodyEnd := i
			if bodyEnd > bodyStart && (source[bodyEnd-1] == '-' || source[bodyEnd-1] == '+') {
				bodyEnd--
			}
			return scannedTag{
				opener:      source[open:bodyStart],
				body:        source[bodyStart:bodyEnd],
				closer:      source[bodyEnd : i+2],
				isStatement: isStatement,
				end:         i + 2,
			}, nil
		}
	}
	kind := "expression"
	if isStatement {
		kind = "statement"
	}
	return scannedTag{}, fmt.Errorf("line %d: %s tag is never closed", lineAt(source, open), kind)
}

// skipString returns the offset just past the string literal starting at
// start, or -1 when it is not closed.
func skipString(source string, start int) int {
	quote := source[start]
	for i := start + 1; i < len(source); i++ {
		switch source[i] {
		case '\\':
			i++
		case quote:
			return i + 1
		}
	}
	return -1
}

// rawEnd locates the {% endraw %} tag that closes a raw block.
type rawEnd struct{ open int }

// rawBlockEnd finds the {% endraw %} after a raw block's opening tag, which
// ends at from.
func rawBlockEnd(source string, from int) (rawEnd, error) {
	for pos := from; ; {
		open := strings.Index(source[pos:], "{%")
		if open < 0 {
			return rawEnd{}, fmt.Errorf("line %d: raw block is never closed", lineAt(source, from))
		}
		open += pos
		if tag, err := scanTag(source, open); err == nil && statementKeyword(tag.body) == "endraw" {
			return rawEnd{open: open}, nil
		}
		pos = open + 2
	}
}

func statementKeyword(body string) string {
	body = strings.TrimLeft(body, " \t\n")
	end := 0
	for end < len(body) && isNameByte(body[end]) {
		end++
	}
	return body[:end]
}

func lineAt(source string, offset int) int {
	return strings.Count(source[:offset], "\n") + 1
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
