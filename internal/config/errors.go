package config

import "strings"

// Error reports configuration problems, one line per problem. Callers map
// it to exit status 2, the status of a usage error.
type Error struct {
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "\n") }

// problem is one configuration problem. keys names the JSON paths involved,
// so that validation problems caused by a value that already failed to parse
// can be suppressed.
type problem struct {
	msg  string
	keys []string
}
