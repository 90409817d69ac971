package chattemplate

import "strings"

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
