package chattemplate

import (
	"errors"
	"strings"
)

// Where the engine's operators are looser than Python's, prepareSource
// routes them through this package (see operators.go): "+" (str + None is
// a TypeError, not a concatenation), "~" (str() of each side), "in" / "not
// in" (nothing is "in" None), and the iterable of a for loop (None is not
// iterable). Finding an operator's operands takes a parser: this is a
// precedence-climbing reader for Jinja2's expression grammar that leaves
// every other construct's text as written.
const (
	addFuncName       = renamedPrefix + "add"
	inFuncName        = renamedPrefix + "in"
	iterFuncName      = renamedPrefix + "iter"
	refuseFuncName    = renamedPrefix + "refuse"
	concatFuncName    = renamedPrefix + "cat"
	strMethodFuncName = renamedPrefix + "strmethod"
	mathFuncName      = renamedPrefix + "math"
)

// stringMethods are the str methods whose engine versions differ from
// Python's: without arguments they strip only space, tab, CR and LF.
var stringMethods = map[string]bool{"strip": true, "lstrip": true, "rstrip": true}

// mutatingMethods are the methods transformers' ImmutableSandboxedEnvironment
// refuses to call (on lists, dicts and sets; no other type has them): a call
// is a SecurityError there, so it becomes one here instead of modifying the
// request's data.
var mutatingMethods = map[string]bool{
	"append": true, "extend": true, "insert": true, "remove": true, "pop": true, "sort": true,
	"reverse": true, "clear": true, "popitem": true, "setdefault": true, "update": true,
	"add": true, "discard": true,
}

// exprPart is one piece of a rewritten expression: literal text or a
// rewritten sub-expression.
type exprPart struct {
	text string
	node *exprNode
}

// exprNode is an expression as it will be written back.
type exprNode struct{ parts []exprPart }

func (n *exprNode) write(b *strings.Builder) {
	for _, part := range n.parts {
		if part.node != nil {
			part.node.write(b)
		} else {
			b.WriteString(part.text)
		}
	}
}

// call builds fn(args…).
func call(fn string, args ...*exprNode) *exprNode {
	n := &exprNode{parts: []exprPart{{text: fn + "("}}}
	for i, arg := range args {
		if i > 0 {
			n.parts = append(n.parts, exprPart{text: ", "})
		}
		n.parts = append(n.parts, exprPart{node: arg})
	}
	n.parts = append(n.parts, exprPart{text: ")"})
	return n
}

var errNotUnderstood = errors.New("expression not understood")

// exprParser reads the tokens of one tag body (spaces dropped; offsets
// kept so untouched text is copied exactly).
type exprParser struct {
	body   string
	tokens []exprToken
	pos    int
}

func newExprParser(body string) *exprParser {
	var tokens []exprToken
	offset := 0
	for _, t := range tokenizeTagBody(body) {
		t.start = offset
		offset += len(t.text)
		if t.kind != tokenSpace {
			tokens = append(tokens, t)
		}
	}
	return &exprParser{body: body, tokens: tokens}
}

func (p *exprParser) peek() exprToken {
	if p.pos < len(p.tokens) {
		return p.tokens[p.pos]
	}
	return exprToken{kind: tokenSpace, start: len(p.body)}
}

// is reports whether the next token is the operator or keyword text.
func (p *exprParser) is(text string) bool {
	t := p.peek()
	return (t.kind == tokenOther || t.kind == tokenName) && t.text == text
}

func (p *exprParser) isAt(i int, text string) bool {
	return i < len(p.tokens) && (p.tokens[i].kind == tokenOther || p.tokens[i].kind == tokenName) && p.tokens[i].text == text
}

// offset is where the next token starts (the body's end after the last).
func (p *exprParser) offset() int { return p.peek().start }

// end is where the previous token ends.
func (p *exprParser) end() int {
	t := p.tokens[p.pos-1]
	return t.start + len(t.text)
}

// span returns body[from:to] with the given sub-expressions, which lie
// inside it in order, written in place of their own text.
func (p *exprParser) span(from, to int, children ...spanned) *exprNode {
	n := &exprNode{}
	for _, child := range children {
		n.parts = append(n.parts, exprPart{text: p.body[from:child.from]}, exprPart{node: child.node})
		from = child.to
	}
	n.parts = append(n.parts, exprPart{text: p.body[from:to]})
	return n
}

// spanned is a sub-expression with the byte range it replaces.
type spanned struct {
	node     *exprNode
	from, to int
}

// parseExpression: or-expression ["if" or-expression ["else" expression]].
func (p *exprParser) parseExpression(withCondition bool) (spanned, error) {
	value, err := p.parseOr()
	if err != nil || !withCondition || !p.is("if") {
		return value, err
	}
	p.pos++
	cond, err := p.parseOr()
	if err != nil {
		return spanned{}, err
	}
	children := []spanned{value, cond}
	if p.is("else") {
		p.pos++
		other, err := p.parseExpression(true)
		if err != nil {
			return spanned{}, err
		}
		children = append(children, other)
	}
	return spanned{p.span(value.from, p.end(), children...), value.from, p.end()}, nil
}

// parseChain reads operands separated by any of ops, keeping the text.
func (p *exprParser) parseChain(next func() (spanned, error), ops ...string) (spanned, error) {
	first, err := next()
	if err != nil {
		return spanned{}, err
	}
	children := []spanned{first}
	for p.isAny(ops) {
		p.pos++
		operand, err := next()
		if err != nil {
			return spanned{}, err
		}
		children = append(children, operand)
	}
	if len(children) == 1 {
		return first, nil
	}
	return spanned{p.span(first.from, p.end(), children...), first.from, p.end()}, nil
}

func (p *exprParser) isAny(ops []string) bool {
	for _, op := range ops {
		if p.is(op) {
			return true
		}
	}
	return false
}

func (p *exprParser) parseOr() (spanned, error)  { return p.parseChain(p.parseAnd, "or") }
func (p *exprParser) parseAnd() (spanned, error) { return p.parseChain(p.parseNot, "and") }

func (p *exprParser) parseNot() (spanned, error) {
	if !p.is("not") {
		return p.parseCompare()
	}
	from := p.offset()
	p.pos++
	operand, err := p.parseNot()
	if err != nil {
		return spanned{}, err
	}
	return spanned{p.span(from, p.end(), operand), from, p.end()}, nil
}

var comparisonOps = []string{"==", "!=", "<", ">", "<=", ">="}

// parseCompare turns a single "a in b" or "a not in b" into a call;
// chains and other comparisons keep the engine's operators.
func (p *exprParser) parseCompare() (spanned, error) {
	left, err := p.parseConcat()
	if err != nil {
		return spanned{}, err
	}
	children := []spanned{left}
	var membership []bool // per operator: negated "not in"
	others := 0
	for {
		switch {
		case p.isAny(comparisonOps):
			p.pos++
			others++
		case p.is("in"):
			p.pos++
			membership = append(membership, false)
		case p.is("not") && p.isAt(p.pos+1, "in"):
			p.pos += 2
			membership = append(membership, true)
		default:
			if len(children) == 1 {
				return left, nil
			}
			if others == 0 && len(membership) == 1 {
				node := call(inFuncName, children[0].node, children[1].node)
				if membership[0] {
					node = &exprNode{parts: []exprPart{{text: "(not "}, {node: node}, {text: ")"}}}
				}
				return spanned{node, left.from, p.end()}, nil
			}
			return spanned{p.span(left.from, p.end(), children...), left.from, p.end()}, nil
		}
		right, err := p.parseConcat()
		if err != nil {
			return spanned{}, err
		}
		children = append(children, right)
	}
}

// parseConcat turns a "~" chain into one call.
func (p *exprParser) parseConcat() (spanned, error) {
	first, err := p.parseMath1()
	if err != nil || !p.is("~") {
		return first, err
	}
	args := []*exprNode{first.node}
	for p.is("~") {
		p.pos++
		operand, err := p.parseMath1()
		if err != nil {
			return spanned{}, err
		}
		args = append(args, operand.node)
	}
	return spanned{call(concatFuncName, args...), first.from, p.end()}, nil
}

// parseMath1 folds "+" and "-" from the left: a run of "+" becomes one
// call (which folds left itself), "-" keeps the engine's operator.
func (p *exprParser) parseMath1() (spanned, error) {
	first, err := p.parseMath2()
	if err != nil || !p.is("+") && !p.is("-") {
		return first, err
	}
	acc := first.node
	var sum []*exprNode // operands of the current run of "+"
	flush := func() {
		if len(sum) > 0 {
			acc = call(addFuncName, append([]*exprNode{acc}, sum...)...)
			sum = nil
		}
	}
	for p.is("+") || p.is("-") {
		plus := p.is("+")
		p.pos++
		operand, err := p.parseMath2()
		if err != nil {
			return spanned{}, err
		}
		if plus {
			sum = append(sum, operand.node)
			continue
		}
		flush()
		acc = &exprNode{parts: []exprPart{{text: "("}, {node: acc}, {text: " - "}, {node: operand.node}, {text: ")"}}}
	}
	flush()
	return spanned{acc, first.from, p.end()}, nil
}

// parseMath2 folds "*", "/", "//" and "%" from the left into calls with
// Python's semantics (string repetition and formatting, floor division and
// modulo, ZeroDivisionError).
func (p *exprParser) parseMath2() (spanned, error) {
	return p.parseArithmetic(p.parsePow, "*", "/", "//", "%")
}

// parsePow folds "**" from the left, as Jinja2 does (Python folds right).
func (p *exprParser) parsePow() (spanned, error) { return p.parseArithmetic(p.parseUnary, "**") }

func (p *exprParser) parseArithmetic(next func() (spanned, error), ops ...string) (spanned, error) {
	acc, err := next()
	if err != nil {
		return spanned{}, err
	}
	for p.isAny(ops) {
		op := p.peek().text
		p.pos++
		operand, err := next()
		if err != nil {
			return spanned{}, err
		}
		acc = spanned{call(mathFuncName, &exprNode{parts: []exprPart{{text: "'" + op + "'"}}}, acc.node, operand.node), acc.from, p.end()}
	}
	return acc, nil
}

// parseUnary: a sign, or a primary with its postfix operations, filters and
// tests. Calls of the string methods in stringMethods and of mutating
// methods become calls of this package's functions; the rest of the chain
// keeps its text.
func (p *exprParser) parseUnary() (spanned, error) {
	from := p.offset()
	if p.is("-") || p.is("+") {
		p.pos++
		operand, err := p.parseUnary()
		if err != nil {
			return spanned{}, err
		}
		return spanned{p.span(from, p.end(), operand), from, p.end()}, nil
	}
	children, err := p.parsePrimary()
	if err != nil {
		return spanned{}, err
	}
	// The chain so far is base (a rewritten call, or nil) followed by the
	// text from segment on with its children.
	var base *exprNode
	segment := from
	upTo := func(end int) *exprNode {
		text := p.span(segment, end, children...)
		if base == nil {
			return text
		}
		return &exprNode{parts: []exprPart{{node: base}, {node: text}}}
	}
	for {
		switch {
		case p.is("."):
			dot := p.offset()
			p.pos++
			if p.peek().kind != tokenName {
				return spanned{}, errNotUnderstood
			}
			name := p.peek().text
			p.pos++
			fn := ""
			switch {
			case !p.is("("):
			case stringMethods[name]:
				fn = strMethodFuncName
			case mutatingMethods[name]:
				fn = refuseFuncName
			}
			if fn == "" {
				continue
			}
			object := upTo(dot)
			args, err := p.parseBracket()
			if err != nil {
				return spanned{}, err
			}
			callArgs := []*exprNode{object, {parts: []exprPart{{text: "'" + name + "'"}}}}
			if fn == strMethodFuncName {
				for _, arg := range args {
					callArgs = append(callArgs, arg.node)
				}
			}
			base, segment, children = call(fn, callArgs...), p.end(), nil
		case p.is("[") || p.is("("):
			inner, err := p.parseBracket()
			if err != nil {
				return spanned{}, err
			}
			children = append(children, inner...)
		case p.is("|"):
			p.pos++
			if p.peek().kind != tokenName {
				return spanned{}, errNotUnderstood
			}
			p.pos++
			for p.is(".") { // dotted filter names
				p.pos += 2
			}
			if p.is("(") {
				inner, err := p.parseBracket()
				if err != nil {
					return spanned{}, err
				}
				children = append(children, inner...)
			}
		case p.is("is"):
			p.pos++
			if p.is("not") {
				p.pos++
			}
			if p.peek().kind != tokenName {
				return spanned{}, errNotUnderstood
			}
			p.pos++
			switch t := p.peek(); {
			case p.is("("):
				inner, err := p.parseBracket()
				if err != nil {
					return spanned{}, err
				}
				children = append(children, inner...)
			case t.kind == tokenString || t.kind == tokenName && isNumber(t.text):
				p.pos++ // a test's single argument: "is divisibleby 3"
			}
		default:
			return spanned{upTo(p.end()), from, p.end()}, nil
		}
	}
}

func isNumber(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// parsePrimary reads a name, literal or bracketed group and returns the
// sub-expressions inside it.
func (p *exprParser) parsePrimary() ([]spanned, error) {
	switch t := p.peek(); {
	case t.kind == tokenName, t.kind == tokenString:
		p.pos++
		// Jinja2 joins adjacent string literals.
		for t.kind == tokenString && p.peek().kind == tokenString {
			p.pos++
		}
		// A number with a fraction is three tokens here: 1 . 5
		if isNumber(t.text) && p.is(".") && p.pos+1 < len(p.tokens) && isNumber(p.tokens[p.pos+1].text) {
			p.pos += 2
		}
		return nil, nil
	case p.is("(") || p.is("[") || p.is("{"):
		return p.parseBracket()
	}
	return nil, errNotUnderstood
}

// parseBracket reads a parenthesised, bracketed or braced group: its items
// are expressions, possibly "name=" keyword arguments, "key: value" pairs
// or slice parts.
func (p *exprParser) parseBracket() ([]spanned, error) {
	closer := map[string]string{"(": ")", "[": "]", "{": "}"}[p.peek().text]
	p.pos++
	var items []spanned
	for !p.is(closer) {
		if p.pos >= len(p.tokens) {
			return nil, errNotUnderstood
		}
		switch {
		case p.is(",") || p.is(":"):
			p.pos++ // separators, and the empty parts of a slice
			continue
		case p.peek().kind == tokenName && p.isAt(p.pos+1, "="):
			p.pos += 2 // keyword argument
		}
		item, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
		if !p.is(",") && !p.is(":") && !p.is(closer) {
			return nil, errNotUnderstood
		}
	}
	p.pos++
	return items, nil
}

// rewriteOperators rewrites the expressions of one tag body (already in
// the engine's dialect). A body it cannot read is returned unchanged, so
// the engine's own operators apply there.
func rewriteOperators(body string, isOutput bool) string {
	p := newExprParser(body)
	if len(p.tokens) == 0 {
		return body
	}
	rewriteAt := func(start int, withCondition bool, wrap string) (string, bool) {
		p.pos = start
		expr, err := p.parseExpression(withCondition)
		if err != nil {
			return "", false
		}
		var b strings.Builder
		b.WriteString(body[:expr.from])
		if wrap != "" {
			call(wrap, expr.node).write(&b)
		} else {
			expr.node.write(&b)
		}
		rest := body[expr.to:]
		return b.String() + rest, true
	}
	var out string
	ok := false
	switch {
	case isOutput:
		if out, ok = rewriteAt(0, true, ""); ok && p.pos != len(p.tokens) {
			ok = false
		}
	default:
		switch p.tokens[0].text {
		case "if", "elif":
			if out, ok = rewriteAt(1, true, ""); ok && p.pos != len(p.tokens) {
				ok = false
			}
		case "set":
			for i, t := range p.tokens {
				if t.kind == tokenOther && t.text == "=" {
					if out, ok = rewriteAt(i+1, true, ""); ok && p.pos != len(p.tokens) {
						ok = false
					}
					break
				}
			}
		case "for":
			out, ok = rewriteFor(p)
		}
	}
	if !ok {
		return body
	}
	return out
}

// rewriteFor checks the iterable of "for targets in iterable [if cond]
// [recursive]" and rewrites the condition's operators.
func rewriteFor(p *exprParser) (string, bool) {
	in := -1
	for i, t := range p.tokens {
		if t.kind == tokenName && t.text == "in" {
			in = i
			break
		}
	}
	if in < 0 {
		return "", false
	}
	p.pos = in + 1
	iterable, err := p.parseExpression(false)
	if err != nil {
		return "", false
	}
	var cond spanned
	hasCond := false
	if p.is("if") {
		p.pos++
		if cond, err = p.parseExpression(true); err != nil {
			return "", false
		}
		hasCond = true
	}
	if p.is("recursive") {
		p.pos++
	}
	if p.pos != len(p.tokens) {
		return "", false
	}
	var b strings.Builder
	b.WriteString(p.body[:iterable.from])
	call(iterFuncName, iterable.node).write(&b)
	if hasCond {
		b.WriteString(p.body[iterable.to:cond.from])
		cond.node.write(&b)
		b.WriteString(p.body[cond.to:])
	} else {
		b.WriteString(p.body[iterable.to:])
	}
	return b.String(), true
}
