package chattemplate

// shortEscape decodes the one-letter backslash escapes that JSON strings
// and Python string literals share (\b \f \n \r \t).
func shortEscape(c byte) (byte, bool) {
	switch c {
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}
