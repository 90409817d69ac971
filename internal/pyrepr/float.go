// Package pyrepr formats values the way Python prints them, for output that
// must match byte for byte what a Python program (vLLM, transformers)
// writes.
package pyrepr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Float formats f like Python's repr() and str() of a float (also what
// json.dumps writes for finite values): the shortest digits that round-trip,
// fixed notation with at least one fractional digit ("2.0") when the decimal
// exponent is in (-4, 16], scientific otherwise ("1e-05", "1.5e+20", two
// exponent digits at least); "nan", "inf", "-inf".
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "-1.2345e+06"
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	decpt := x + 1
	if decpt > -4 && decpt <= 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsRune(s, '.') {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if x < 0 {
		sign, x = "-", -x
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, x)
}
