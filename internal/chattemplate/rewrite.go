package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names under which this package's own implementations are handed to the
// engine. The engine looks a filter up among its built-ins first and then
// among the render variables, so a built-in it gets wrong is replaced by
// renaming it in the source (| tojson becomes | chattemplate_tojson).
const (
	printFuncName = "chattemplate_str"
	renamedPrefix = "chattemplate_"
)

// overriddenFilters are the built-in filters whose Jinja2 behaviour the
// engine does not reproduce: tojson (key order with indent, Python float
// and escaping rules, ensure_ascii), trim and string (None must become
// "None", Python's whitespace set), join (items go through str()), length
// and count (None has no length).
var overriddenFilters = map[string]bool{
	"tojson": true,
	"trim":   true,
	"string": true,
	"join":   true,
	"length": true,
	"count":  true,
}

// prepareSource rewrites a Jinja2 chat template into the dialect the engine
// renders identically:
//
//   - newlines are normalised and one trailing newline is dropped, as
//     Jinja2's lexer does (keep_trailing_newline=False);
//   - whitespace control ("-" markers, lstrip_blocks, trim_blocks) is
//     applied here, following Jinja2's lexer, and template text is handed to
//     the engine as string literals, so the engine's own trimming (which
//     reaches past expression tags) never applies;
//   - string literals are decoded with Python's escape rules (\r, \xNN,
//     \uNNNN, …) and re-encoded with the few escapes the engine knows;
//   - the filters in overriddenFilters are redirected to this package;
//   - every {{ expression }} prints through Python's str(), so None, floats,
//     lists and dicts print as Jinja2 prints them;
//   - comments, {% raw %} markers and transformers' {% generation %} block
//     markers disappear (the generation block renders its body).
func prepareSource(source string) (string, error) {
	source = strings.ReplaceAll(source, "\r\n", "\n")
	source = strings.ReplaceAll(source, "\r", "\n")
	source = strings.TrimSuffix(source, "\n")

	pieces, err := splitPieces(source)
	if err != nil {
		return "", err
	}
	applyWhitespaceControl(pieces)
	loopLocals := findLoopLocals(pieces)

	var out strings.Builder
	out.Grow(len(source) + len(source)/4)
	for i, p := range pieces {
		if locals, ok := loopLocals[i]; ok {
			// Remember each name's value outside the loop ...
			for _, name := range locals.names {
				fmt.Fprintf(&out, "{%% set %s%d_%s = %s %%}", loopOuterPrefix, i, name, name)
			}
			body, err := rewriteTagBody(p.text, false)
			if err != nil {
				return "", fmt.Errorf("line %d: %w", p.line, err)
			}
			out.WriteString("{%" + body + "%}")
			// ... and start every iteration from it.
			for _, name := range locals.names {
				fmt.Fprintf(&out, "{%% set %s = %s%d_%s %%}", name, loopOuterPrefix, i, name)
			}
			continue
		}
		switch p.kind {
		case pieceText:
			if p.text != "" {
				out.WriteString("{{ " + encodeEngineString(p.text) + " }}")
			}
		case pieceOutput, pieceStatement:
			body, err := rewriteTagBody(p.text, p.kind == pieceOutput)
			if err != nil {
				return "", fmt.Errorf("line %d: %w", p.line, err)
			}
			if p.kind == pieceOutput {
				out.WriteString("{{" + body + "}}")
			} else {
				out.WriteString("{%" + body + "%}")
			}
		}
	}
	return out.String(), nil
}

// loopOuterPrefix names the variables that keep a value from outside a
// for loop (see findLoopLocals).
const loopOuterPrefix = renamedPrefix + "outer_"

// loopLocal lists the names a for loop's body assigns with {% set %}.
type loopLocal struct{ names []string }

// findLoopLocals maps the index of each {% for %} piece to the names its
// body assigns. In Jinja2 such an assignment lasts one iteration: the next
// iteration sees the value from outside the loop again (or undefined). The
// engine keeps one scope for all iterations, so prepareSource resets the
// names at the top of each iteration to the value saved before the loop.
func findLoopLocals(pieces []piece) map[int]loopLocal {
	out := map[int]loopLocal{}
	var open []int // indexes of the enclosing {% for %} pieces
	targets := map[int][]string{}
	for i, p := range pieces {
		if p.kind != pieceStatement {
			continue
		}
		switch statementKeyword(p.text) {
		case "for":
			open = append(open, i)
			targets[i] = forTargets(p.text)
		case "endfor":
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		case "set":
			for _, name := range setTargets(p.text) {
				for _, loop := range open {
					// The engine binds the loop's own variables anew
					// every iteration already.
					locals := out[loop]
					if !containsString(locals.names, name) && !containsString(targets[loop], name) {
						locals.names = append(locals.names, name)
					}
					out[loop] = locals
				}
			}
		}
	}
	for loop, locals := range out {
		if len(locals.names) == 0 {
			delete(out, loop)
		}
	}
	return out
}

// forTargets returns the names a {% for %} binds ("for a, b in …").
func forTargets(body string) []string {
	body = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body), "for"))
	if in := strings.Index(body, " in "); in >= 0 {
		body = body[:in]
	}
	var names []string
	for _, part := range strings.Split(body, ",") {
		names = append(names, strings.Trim(part, " ()"))
	}
	return names
}

// setTargets returns the plain names a {% set %} statement assigns
// ("set a = …", "set a, b = …", "set a" blocks); namespace attributes
// (ns.x) are not scoped and are left out.
func setTargets(body string) []string {
	body = strings.TrimSpace(body)
	body = strings.TrimSpace(strings.TrimPrefix(body, "set"))
	if eq := strings.IndexByte(body, '='); eq >= 0 {
		body = body[:eq]
	}
	var names []string
	for _, part := range strings.Split(body, ",") {
		name := strings.TrimSpace(part)
		if name == "" || strings.ContainsAny(name, ".[( |") {
			continue
		}
		names = append(names, name)
	}
	return names
}

func containsString(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

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

// rewriteTagBody rewrites the inside of one tag: string literals, overridden
// filter names and, for an output tag, the str() wrapper.
func rewriteTagBody(body string, isOutput bool) (string, error) {
	var out strings.Builder
	out.Grow(len(body) + 16)
	afterPipe := false      // the previous token was the filter operator
	afterFilterWord := true // at the start of a statement: "filter NAME"
	literalOnly := true     // the whole expression is one string literal
	literals := 0
	// What the expression evaluates to at the top level (bracket depth 0):
	// a "+"/"~" chain with a string literal operand is a string in the
	// engine, and printing a string needs no str() wrapper. Any operator of
	// lower or mixed precedence makes the type unknown.
	depth, concat, topLiterals, unknownType := 0, false, 0, false
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			out.WriteByte(c)
			i++
			continue
		case c == '\'' || c == '"':
			end := skipString(body, i)
			if end < 0 {
				return "", fmt.Errorf("string literal %s is never closed", strconv.Quote(body[i:]))
			}
			text, err := decodePythonString(body[i+1 : end-1])
			if err != nil {
				return "", err
			}
			out.WriteString(encodeEngineString(text))
			literals++
			if depth == 0 {
				topLiterals++
			}
			i = end
			afterPipe, afterFilterWord = false, false
			continue
		case isNameByte(c) && !(c >= '0' && c <= '9'):
			end := i
			for end < len(body) && isNameByte(body[end]) {
				end++
			}
			name := body[i:end]
			if depth == 0 && topLevelKeywords[name] {
				unknownType = true
			}
			switch {
			case (afterPipe || afterFilterWord && !isOutput && statementKeyword(body) == "filter" && name != "filter") && overriddenFilters[name]:
				out.WriteString(renamedPrefix + name)
			default:
				out.WriteString(name)
			}
			literalOnly = false
			afterPipe = false
			if name != "filter" {
				afterFilterWord = false
			}
			i = end
			continue
		case c == '|':
			afterPipe = true
		default:
			afterPipe = false
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
			case '+', '~':
				concat = concat || depth == 0
			case '.', ',', ':':
			default:
				if depth == 0 && (c < '0' || c > '9') {
					unknownType = true // comparison, arithmetic, …
				}
			}
		}
		literalOnly = false
		afterFilterWord = false
		out.WriteByte(c)
		i++
	}
	rewritten := rewriteOperators(out.String(), isOutput)
	if !isOutput || literalOnly && literals == 1 || concat && topLiterals > 0 && !unknownType {
		return rewritten, nil
	}
	return " " + printFuncName + "(" + rewritten + ") ", nil
}

// topLevelKeywords are the operators spelled as words; at the top level
// of an output expression they make its type unknown.
var topLevelKeywords = map[string]bool{
	"if": true, "else": true, "and": true, "or": true, "not": true, "in": true, "is": true,
}

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
