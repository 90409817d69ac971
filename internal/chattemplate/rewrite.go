package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
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
//     applied here, following Jinja2's lexer (lexer.go), and template text is
//     handed to the engine as string literals, so the engine's own trimming
//     (which reaches past expression tags) never applies;
//   - string literals are decoded with Python's escape rules (\r, \xNN,
//     \uNNNN, …) and re-encoded with the few escapes the engine knows
//     (literals.go);
//   - the filters in overriddenFilters are redirected to this package;
//   - "+", "~", "in", loop iterables and mutating method calls get Python's
//     semantics (exprrewrite.go, operators.go);
//   - every {{ expression }} that is not certainly a string prints through
//     Python's str(), so None, floats, lists and dicts print as Jinja2
//     prints them;
//   - names set inside a for loop start each iteration from their value
//     outside the loop (loopscope.go);
//   - comments, {% raw %} markers and transformers' {% generation %} block
//     markers disappear (the generation block renders its body).
//
// It also returns, per line of the rewritten source, the line of the
// original that the engine's error messages should name.
func prepareSource(source string) (string, []int, error) {
	source = strings.ReplaceAll(source, "\r\n", "\n")
	source = strings.ReplaceAll(source, "\r", "\n")
	source = strings.TrimSuffix(source, "\n")

	pieces, err := splitPieces(source)
	if err != nil {
		return "", nil, err
	}
	applyWhitespaceControl(pieces)
	loopLocals := findLoopLocals(pieces)

	var out strings.Builder
	out.Grow(len(source) + len(source)/4)
	lines := []int{1} // lines[n-1]: the original line of rewritten line n
	emitted := 0      // bytes of out already counted in lines
	for i, p := range pieces {
		// Lines written since the last piece belong to the previous one.
		for _, c := range out.String()[emitted:] {
			if c == '\n' {
				lines = append(lines, lines[len(lines)-1])
			}
		}
		emitted = out.Len()
		if p.isTag() {
			lines[len(lines)-1] = max(lines[len(lines)-1], p.line)
		}
		if locals, ok := loopLocals[i]; ok {
			// Remember each name's value outside the loop ...
			for _, name := range locals.names {
				fmt.Fprintf(&out, "{%% set %s%d_%s = %s %%}", loopOuterPrefix, i, name, name)
			}
			body, err := rewriteTagBody(p.text, false)
			if err != nil {
				return "", nil, fmt.Errorf("line %d: %w", p.line, err)
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
				return "", nil, fmt.Errorf("line %d: %w", p.line, err)
			}
			if p.kind == pieceOutput {
				out.WriteString("{{" + body + "}}")
			} else {
				out.WriteString("{%" + body + "%}")
			}
		}
	}
	return out.String(), lines, nil
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
