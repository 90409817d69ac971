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
