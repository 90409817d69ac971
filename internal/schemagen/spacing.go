package schemagen

// Spaced rewrites compact JSON (as Generate and AnyObject return it) with
// the separators of Python's json.dumps — ", " between items and ": "
// after keys — the form vLLM's tool parsers print arguments in and models
// commonly write. Text inside strings is left alone.
func Spaced(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/4)
	inString, escaped := false, false
	for _, c := range compact {
		out = append(out, c)
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',' || c == ':':
			out = append(out, ' ')
		}
	}
	return out
}
