package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Python's "*", "/", "//", "%" and "**" for the operands a chat template
// can have (see parseArithmetic); Jinja2 evaluates them with Python's own
// operators.

var errZeroDivision = errors.New("ZeroDivisionError: division by zero")

func isNumeric(val jinja.Value) bool { return isIntLike(val) || val.IsFloat() }

// arithmetic is op(a, b) with the operator as the first argument.
func arithmetic(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 3 || !args[0].IsString() {
		return jinja.Value{}, fmt.Errorf("arithmetic takes an operator and 2 operands")
	}
	op, a, b := args[0].AsString(), args[1], args[2]
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Value{}, fmt.Errorf("UndefinedError: an undefined value is an operand of '%s'", op)
	}
	if op == "%" && a.IsString() {
		text, err := percentFormat(a.AsString(), b)
		return jinja.NewString(text), err
	}
	if op == "*" {
		if val, ok, err := repeat(a, b); ok {
			return val, err
		}
		if val, ok, err := repeat(b, a); ok {
			return val, err
		}
	}
	if !isNumeric(a) || !isNumeric(b) {
		if op == "*" && (a.IsString() || a.IsList() || b.IsString() || b.IsList()) {
			return jinja.Value{}, typeErrorf("can't multiply sequence by non-int of type '%s'", pyTypeName(b))
		}
		return jinja.Value{}, typeErrorf("unsupported operand type(s) for %s: '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
	ints := isIntLike(a) && isIntLike(b)
	switch op {
	case "*":
		if ints {
			return jinja.NewInt(asInt(a) * asInt(b)), nil
		}
		return jinja.NewFloat(asFloat(a) * asFloat(b)), nil
	case "/":
		if asFloat(b) == 0 {
			return jinja.Value{}, errZeroDivision
		}
		return jinja.NewFloat(asFloat(a) / asFloat(b)), nil
	case "//":
		if asFloat(b) == 0 {
			return jinja.Value{}, errZeroDivision
		}
		if ints {
			x, y := asInt(a), asInt(b)
			q := x / y
			if (x%y != 0) && ((x < 0) != (y < 0)) {
				q--
			}
			return jinja.NewInt(q), nil
		}
		return jinja.NewFloat(math.Floor(asFloat(a) / asFloat(b))), nil
	case "%":
		if asFloat(b) == 0 {
			return jinja.Value{}, errZeroDivision
		}
		if ints {
			x, y := asInt(a), asInt(b)
			return jinja.NewInt(((x % y) + y) % y), nil
		}
		x, y := asFloat(a), asFloat(b)
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return jinja.NewFloat(r), nil
	case "**":
		return power(a, b, ints)
	}
	return jinja.Value{}, fmt.Errorf("unknown operator %q", op)
}

// maxRepeatBytes bounds sequence repetition: a template must not be able
// to make the server allocate without limit (Python would raise
// MemoryError at some size too).
const maxRepeatBytes = 64 << 20

// repeat is sequence * int: a string or list repeated (nothing for n <= 0).
func repeat(seq, count jinja.Value) (jinja.Value, bool, error) {
	if !isIntLike(count) || !seq.IsString() && !seq.IsList() {
		return jinja.Value{}, false, nil
	}
	n := max(0, asInt(count))
	var unit int64
	if seq.IsString() {
		unit = int64(max(1, len(seq.AsString())))
	} else {
		unit = int64(max(1, seq.AsList().Len())) * 16
	}
	if n > maxRepeatBytes/unit {
		return jinja.Value{}, true, fmt.Errorf("MemoryError: repeating a %s %d times", pyTypeName(seq), n)
	}
	if seq.IsString() {
		return jinja.NewString(strings.Repeat(seq.AsString(), int(n))), true, nil
	}
	items := make([]jinja.Value, 0, int(n)*seq.AsList().Len())
	for range n {
		items = append(items, seq.AsList().Items...)
	}
	return jinja.NewList(items), true, nil
}

// power is a ** b: an int for a non-negative int exponent, else a float.
func power(a, b jinja.Value, ints bool) (jinja.Value, error) {
	if ints && asInt(b) >= 0 {
		// Exponentiation by squaring, refusing what overflows 64 bits.
		result, base, e := int64(1), asInt(a), asInt(b)
		for e > 0 {
			if e&1 == 1 {
				next := result * base
				if base != 0 && next/base != result {
					return jinja.Value{}, fmt.Errorf("OverflowError: %d ** %d does not fit in 64 bits", asInt(a), asInt(b))
				}
				result = next
			}
			e >>= 1
			if e > 0 {
				square := base * base
				if base != 0 && square/base != base {
					return jinja.Value{}, fmt.Errorf("OverflowError: %d ** %d does not fit in 64 bits", asInt(a), asInt(b))
				}
				base = square
			}
		}
		return jinja.NewInt(result), nil
	}
	x, y := asFloat(a), asFloat(b)
	if x == 0 && y < 0 {
		return jinja.Value{}, fmt.Errorf("ZeroDivisionError: 0.0 cannot be raised to a negative power")
	}
	if x < 0 && y != math.Trunc(y) {
		return jinja.Value{}, fmt.Errorf("ValueError: a negative number to a fractional power is complex")
	}
	return jinja.NewFloat(math.Pow(x, y)), nil
}

// percentFormat is Python's format % args for the conversions a template
// could use: %s %r %d %i %f %F %e %E %x %X %o %c %%, with flags, width and
// precision. A list stands for a tuple of arguments (the engine has no
// tuples); %(name)s mappings are not supported.
func percentFormat(format string, args jinja.Value) (string, error) {
	values := []jinja.Value{args}
	if args.IsList() {
		values = args.AsList().Items
	}
	var b strings.Builder
	next := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		i++
		start := i
		for i < len(format) && strings.IndexByte("-+ 0#", format[i]) >= 0 {
			i++
		}
		flags := format[start:i]
		widthStart := i
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			i++
		}
		width, _ := strconv.Atoi(format[widthStart:i])
		precision := -1
		if i < len(format) && format[i] == '.' {
			i++
			precStart := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			precision, _ = strconv.Atoi(format[precStart:i])
		}
		if i >= len(format) {
			return "", fmt.Errorf("ValueError: incomplete format")
		}
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if verb == '(' {
			return "", fmt.Errorf("ValueError: %%(name) formats are not supported")
		}
		if next >= len(values) {
			return "", typeErrorf("not enough arguments for format string")
		}
		text, err := formatOne(verb, flags, precision, values[next])
		if err != nil {
			return "", err
		}
		next++
		if pad := width - len([]rune(text)); pad > 0 {
			switch {
			case strings.Contains(flags, "-"):
				text += strings.Repeat(" ", pad)
			case strings.Contains(flags, "0") && strings.IndexByte("dixXofFeE", verb) >= 0:
				sign := ""
				if text != "" && (text[0] == '-' || text[0] == '+' || text[0] == ' ') {
					sign, text = text[:1], text[1:]
				}
				text = sign + strings.Repeat("0", pad) + text
			default:
				text = strings.Repeat(" ", pad) + text
			}
		}
		b.WriteString(text)
	}
	if next < len(values) {
		return "", typeErrorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func formatOne(verb byte, flags string, precision int, val jinja.Value) (string, error) {
	sign := func(text string, negative bool) string {
		switch {
		case negative:
			return text
		case strings.Contains(flags, "+"):
			return "+" + text
		case strings.Contains(flags, " "):
			return " " + text
		}
		return text
	}
	switch verb {
	case 's', 'r':
		text := pyStr(val)
		if verb == 'r' {
			var b strings.Builder
			writeRepr(&b, val)
			text = b.String()
		}
		if precision >= 0 && precision < len([]rune(text)) {
			text = string([]rune(text)[:precision])
		}
		return text, nil
	case 'd', 'i', 'x', 'X', 'o', 'c':
		if !isNumeric(val) {
			return "", typeErrorf("%%%c format: a real number is required, not %s", verb, pyTypeName(val))
		}
		n := asInt(val)
		if val.IsFloat() {
			if verb != 'd' && verb != 'i' {
				return "", typeErrorf("%%%c format: an integer is required, not float", verb)
			}
			n = int64(math.Trunc(val.AsFloat()))
		}
		switch verb {
		case 'x':
			return sign(strconv.FormatInt(n, 16), n < 0), nil
		case 'X':
			return sign(strings.ToUpper(strconv.FormatInt(n, 16)), n < 0), nil
		case 'o':
			return sign(strconv.FormatInt(n, 8), n < 0), nil
		case 'c':
			return string(rune(n)), nil
		}
		return sign(strconv.FormatInt(n, 10), n < 0), nil
	case 'f', 'F', 'e', 'E':
		if !isNumeric(val) {
			return "", typeErrorf("must be real number, not %s", pyTypeName(val))
		}
		if precision < 0 {
			precision = 6
		}
		f := asFloat(val)
		text := strconv.FormatFloat(f, verb|0x20, precision, 64)
		if verb == 'E' {
			text = strings.ToUpper(text)
		}
		return sign(text, math.Signbit(f)), nil
	}
	return "", fmt.Errorf("ValueError: unsupported format character '%c'", verb)
}

// stringMethod is Python's str.strip, lstrip and rstrip: without an
// argument they strip all whitespace.
func stringMethod(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[1].IsString() {
		return jinja.Value{}, fmt.Errorf("string method: bad call")
	}
	object, name := args[0], args[1].AsString()
	if !object.IsString() {
		return jinja.Value{}, fmt.Errorf("UndefinedError: '%s object' has no attribute '%s'", pyTypeName(object), name)
	}
	if len(args) > 3 {
		return jinja.Value{}, typeErrorf("%s expected at most 1 argument, got %d", name, len(args)-2)
	}
	text := object.AsString()
	trim := map[string]func(string, func(rune) bool) string{
		"strip": strings.TrimFunc, "lstrip": strings.TrimLeftFunc, "rstrip": strings.TrimRightFunc,
	}[name]
	cutset := isPythonSpace
	if len(args) == 3 && !args[2].IsNone() {
		if !args[2].IsString() {
			return jinja.Value{}, typeErrorf("%s arg must be None or str", name)
		}
		chars := args[2].AsString()
		cutset = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	if trim == nil {
		return jinja.Value{}, fmt.Errorf("string method %q is not handled here", name)
	}
	return jinja.NewString(trim(text, cutset)), nil
}
