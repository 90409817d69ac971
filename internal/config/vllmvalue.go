package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// bareFlag is the NoOptDefVal of flags that take no value (or an optional
// one): pflag passes it to Set for "--x", so "--x=VALUE" is told apart.
const bareFlag = "\x00bare"

// vllmUse records how the command line set one accepted-no-effect or
// not-yet vLLM flag.
type vllmUse struct {
	flag    *vllmFlag
	spelled string   // the form last used: "--enforce-eager" or "--no-enforce-eager"
	values  []string // the value (last one wins) or, for lists, every value
	order   int      // position of the first use among all vLLM flags
	isSet   bool
	negated bool // --no-x was the last form used
}

// vllmValue is the pflag.Value of a vLLM flag. A BooleanOptionalAction flag
// has two: --x and --no-x share one vllmUse.
type vllmValue struct {
	use      *vllmUse
	negative bool
	counter  *int // shared by the flags of one FlagSet: order of first use
}

func (v *vllmValue) Set(text string) error {
	f := v.use.flag
	switch f.kind {
	case vllmStoreTrue, vllmBoolOptional:
		if text != bareFlag {
			return errors.New("takes no value")
		}
	case vllmOptionalValue:
		if text == bareFlag {
			text = ""
		}
	default:
		if err := checkVLLMValue(f, f.kind, text); err != nil {
			return err
		}
	}
	u := v.use
	if !u.isSet {
		*v.counter++
		u.order = *v.counter
		u.isSet = true
	}
	u.negated = v.negative
	u.spelled = "--" + f.name
	if v.negative {
		u.spelled = "--no-" + f.name
	}
	switch {
	case f.kind == vllmList || f.kind == vllmAppend:
		u.values = append(u.values, text)
	case f.kind.takesValue() && text != "":
		u.values = []string{text}
	default:
		u.values = nil
	}
	return nil
}

func (v *vllmValue) String() string { return strings.Join(v.use.values, " ") }

// Type names the value in pflag's error messages.
func (v *vllmValue) Type() string {
	switch v.use.flag.kind {
	case vllmStoreTrue, vllmBoolOptional:
		return "bool"
	case vllmInt, vllmHumanInt, vllmIntChoice:
		return "int"
	case vllmFloat:
		return "float"
	case vllmJSON, vllmJSONObject, vllmJSONOrString:
		return "json"
	case vllmList, vllmAppend:
		return "strings"
	}
	return "string"
}

// describe renders the use for the startup line: "--tensor-parallel-size 2",
// "--trust-remote-code", "--cudagraph-capture-sizes 1 2 4".
func (u *vllmUse) describe() string {
	parts := []string{u.spelled}
	for _, v := range u.values {
		if u.flag.secret {
			parts = append(parts, "<redacted>")
			continue
		}
		parts = append(parts, shellQuote(v))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes an argument the way a POSIX shell command line would
// need it ('{"a": 1}'), and leaves plain words alone.
func shellQuote(arg string) string {
	if arg != "" && !strings.ContainsAny(arg, " \t\n\"'\\$`*?[]{}()<>|&;#~!") {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// enabled reports whether the use turns its capability on: a negated
// boolean ("--no-enable-lora") or a "None" value asks for nothing.
func (u *vllmUse) enabled() bool {
	if u.negated {
		return false
	}
	if u.flag.nullable && len(u.values) == 1 && isNoneText(u.values[0]) {
		return false
	}
	return true
}

func isNoneText(s string) bool { return s == "" || s == "None" }

// pyDigits is a run of digits with single underscores between them.
const pyDigits = `[0-9](_?[0-9])*`

var (
	// Python's int(): optional sign, digits, single underscores between digits.
	pythonIntRE = regexp.MustCompile(`^[+-]?[0-9]+(_[0-9]+)*$`)
	// Python's float() for finite numbers, with the same underscore rule.
	pythonFloatRE = regexp.MustCompile(`^[+-]?(` + pyDigits + `\.(` + pyDigits + `)?|\.` + pyDigits + `|` + pyDigits + `)([eE][+-]?` + pyDigits + `)?$`)
	// vLLM's human_readable_int suffix form.
	vllmHumanIntRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([kKmMgGtT])$`)
	// vLLM's union_dict_and_str: text that looks like a JSON object.
	jsonObjectLikeRE = regexp.MustCompile(`(?s)^\s*\{.*\}\s*$`)
)

// checkVLLMValue checks text as vLLM's argparse converts a value of kind,
// with the same notion of valid: int() for ints, float() for floats,
// json.loads for JSON, membership for choices.
func checkVLLMValue(f *vllmFlag, kind vllmKind, text string) error {
	if f.nullable && isNoneText(text) {
		return nil
	}
	switch kind {
	case vllmInt:
		if _, err := parsePythonInt(text); err != nil {
			return err
		}
	case vllmHumanInt:
		if m := vllmHumanIntRE.FindStringSubmatch(strings.TrimSpace(text)); m != nil &&
			strings.Contains(m[1], ".") && strings.ContainsAny(m[2], "KMGT") {
			return fmt.Errorf("decimals are not allowed with binary suffixes like %s (did you mean %s%s?)",
				m[2], m[1], strings.ToLower(m[2]))
		}
		if _, ok := parseVLLMHumanInt(text); !ok {
			return fmt.Errorf("invalid integer %q (plain, or with a k/K, m/M, g/G, t/T suffix)", text)
		}
	case vllmFloat:
		if _, err := parsePythonFloat(text); err != nil {
			return err
		}
	case vllmChoice:
		if !slices.Contains(f.choices, text) {
			return fmt.Errorf("invalid choice %q (choose from %s)", text, strings.Join(f.choices, ", "))
		}
	case vllmIntChoice:
		n, err := parsePythonInt(text)
		if err != nil {
			return err
		}
		if !slices.Contains(f.choices, strconv.FormatInt(n, 10)) {
			return fmt.Errorf("invalid choice %d (choose from %s)", n, strings.Join(f.choices, ", "))
		}
	case vllmJSON:
		if _, err := parsePythonJSON(text); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
	case vllmJSONObject:
		v, err := parsePythonJSON(text)
		if err != nil {
			return fmt.Errorf("expected a JSON object: %w", err)
		}
		if _, ok := v.(map[string]any); !ok {
			return fmt.Errorf("expected a JSON object, got %s", strings.TrimSpace(text))
		}
	case vllmJSONOrString:
		if jsonObjectLikeRE.MatchString(text) {
			if _, err := parsePythonJSON(text); err != nil {
				return fmt.Errorf("invalid JSON: %w", err)
			}
		}
	case vllmList:
		elem := f.elem
		if elem == vllmList || elem == vllmStoreTrue {
			elem = vllmString
		}
		return checkVLLMValue(f, elem, text)
	}
	return nil
}

// parsePythonInt parses text as Python's int() does for base 10.
func parsePythonInt(text string) (int64, error) {
	t := strings.TrimSpace(text)
	if !pythonIntRE.MatchString(t) {
		return 0, fmt.Errorf("invalid int value %q", text)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(t, "_", ""), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("int value %q out of range", text)
	}
	return n, nil
}

// parsePythonFloat parses text as Python's float() does: decimal and
// exponent forms, inf/infinity/nan in any case, surrounding spaces.
func parsePythonFloat(text string) (float64, error) {
	t := strings.TrimSpace(text)
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	if !pythonFloatRE.MatchString(t) {
		return 0, fmt.Errorf("invalid float value %q", text)
	}
	x, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("invalid float value %q", text)
	}
	return x, nil
}

// parsePythonJSON decodes text as Python's json.loads does, which also
// takes the literals NaN, Infinity and -Infinity outside strings.
func parsePythonJSON(text string) (any, error) {
	var v any
	err := json.Unmarshal([]byte(text), &v)
	if err == nil {
		return v, nil
	}
	if lenient := replacePythonJSONLiterals(text); lenient != text {
		if json.Unmarshal([]byte(lenient), &v) == nil {
			return v, nil
		}
	}
	return nil, err
}

// replacePythonJSONLiterals replaces NaN, Infinity and -Infinity outside
// string literals by 0.
func replacePythonJSONLiterals(text string) string {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inString {
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			b.WriteByte(c)
			continue
		}
		for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
			if strings.HasPrefix(text[i:], lit) {
				b.WriteByte('0')
				i += len(lit) - 1
				c = 0
				break
			}
		}
		if c != 0 {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parseVLLMHumanInt converts text as vLLM's human_readable_int: k, m, g, t
// multiply by powers of 1000 (a decimal mantissa is truncated after
// multiplying), K, M, G, T by powers of 1024 (whole mantissas only).
func parseVLLMHumanInt(text string) (int64, bool) {
	t := strings.TrimSpace(text)
	m := vllmHumanIntRE.FindStringSubmatch(t)
	if m == nil {
		n, err := parsePythonInt(t)
		return n, err == nil
	}
	decimal := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
	binary := map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
	if mult, ok := decimal[m[2]]; ok {
		x, err := strconv.ParseFloat(m[1], 64)
		return int64(x * mult), err == nil
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n * binary[m[2]], err == nil
}
