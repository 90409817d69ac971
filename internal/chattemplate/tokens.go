package chattemplate

// exprToken is one token of a tag body, whitespace included, so the body
// can be written back unchanged around the rewritten parts.
type exprToken struct {
	text  string
	kind  exprTokenKind
	start int // byte offset in the body (set by newExprParser)
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
