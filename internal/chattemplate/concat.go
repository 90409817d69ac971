package chattemplate

import (
	"strings"

	"github.com/ardanlabs/jinja"
)

// concatFuncName is this package's "~" operator. Jinja2's a ~ b is
// str(a) + str(b); the engine prints None as "" and 2.0 as "2" there.
const concatFuncName = renamedPrefix + "cat"

func concatValues(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var b strings.Builder
	for _, arg := range args {
		b.WriteString(pyStr(arg))
	}
	return jinja.NewString(b.String()), nil
}

// exprToken is one token of a tag body, whitespace included, so the body
// can be written back unchanged around the rewritten parts.
type exprToken struct {
	text string
	kind exprTokenKind
}

type exprTokenKind int

const (
	tokenSpace exprTokenKind = iota
	tokenString
	tokenName
	tokenOther
)

var twoCharOperators = map[string]bool{"==": true, "!=": true, "<=": true, ">=": true, "//": true, "**": true}

// tokenizeTagBody splits a tag body (already in the engine's dialect) into
// tokens; two-character operators stay together.
func tokenizeTagBody(body string) []exprToken {
	var tokens []exprToken
	for i := 0; i < len(body); {
		c := body[i]
		end := i + 1
		kind := tokenOther
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			for end < len(body) && (body[end] == ' ' || body[end] == '\t' || body[end] == '\n') {
				end++
			}
			kind = tokenSpace
		case c == '\'' || c == '"':
			if end = skipString(body, i); end < 0 {
				end = len(body)
			}
			kind = tokenString
		case isNameByte(c):
			for end < len(body) && isNameByte(body[end]) {
				end++
			}
			kind = tokenName
		case end < len(body) && twoCharOperators[body[i:end+1]]:
			end++
		}
		tokens = append(tokens, exprToken{text: body[i:end], kind: kind})
		i = end
	}
	return tokens
}

// rewriteConcat turns every run of "~" operands into one
// chattemplate_cat(a, b, …) call. An operand ends at anything that binds
// less tightly than "~": a comma, colon or "=", a comparison, or one of the
// keywords and, or, not, if, else, in, is (and the statement words).
func rewriteConcat(body string) string {
	if !strings.Contains(body, "~") {
		return body
	}
	return concatGroup(tokenizeTagBody(body))
}

var concatBoundaries = map[string]bool{
	",": true, ":": true, "=": true, "==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"and": true, "or": true, "not": true, "if": true, "else": true, "in": true, "is": true,
	"set": true, "for": true, "elif": true, "recursive": true,
}

// concatGroup rewrites the tokens inside one bracket level.
func concatGroup(tokens []exprToken) string {
	var out strings.Builder
	start := 0
	for i := 0; i < len(tokens); i++ {
		if closing := matchingBracket(tokens, i); closing > i {
			i = closing
			continue
		}
		if t := tokens[i]; t.kind != tokenString && t.kind != tokenSpace && concatBoundaries[t.text] {
			out.WriteString(concatOperands(tokens[start:i]))
			out.WriteString(t.text)
			start = i + 1
		}
	}
	out.WriteString(concatOperands(tokens[start:]))
	return out.String()
}

// concatOperands writes one boundary-free stretch, as a concatenation call
// when it has top-level "~" operators.
func concatOperands(tokens []exprToken) string {
	var parts []string
	var part strings.Builder
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		if closing := matchingBracket(tokens, i); closing > i {
			part.WriteString(t.text)
			part.WriteString(concatGroup(tokens[i+1 : closing]))
			part.WriteString(tokens[closing].text)
			i = closing
			continue
		}
		if t.kind == tokenOther && t.text == "~" {
			parts = append(parts, part.String())
			part.Reset()
			continue
		}
		part.WriteString(t.text)
	}
	parts = append(parts, part.String())
	if len(parts) == 1 {
		return parts[0]
	}
	lead := parts[0][:len(parts[0])-len(strings.TrimLeft(parts[0], " \t\n"))]
	last := parts[len(parts)-1]
	trail := last[len(strings.TrimRight(last, " \t\n")):]
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return lead + concatFuncName + "(" + strings.Join(parts, ", ") + ")" + trail
}

// matchingBracket returns the index of the bracket closing the one at i, or
// -1 when tokens[i] opens none.
func matchingBracket(tokens []exprToken, i int) int {
	if tokens[i].kind != tokenOther || !strings.Contains("([{", tokens[i].text) {
		return -1
	}
	depth := 0
	for j := i; j < len(tokens); j++ {
		if tokens[j].kind != tokenOther {
			continue
		}
		switch tokens[j].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}
