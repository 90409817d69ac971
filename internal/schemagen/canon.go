package schemagen

import (
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// decimal is a JSON number as digits × 10^exp with no leading or trailing
// zero digit (zero: no digits, exp 0), read in time linear in its text
// without building the value: two numbers are equal exactly when their
// decimals are, which makes enum lookups and uniqueItems a hash lookup
// instead of a big.Rat parse per comparison (whose cost grows with the
// exponent: "1e100000" takes a millisecond).
type decimal struct {
	neg    bool
	digits string
	exp    *big.Int
}

// decimalOf reads a JSON number; ok is false for text that is not one.
func decimalOf(number json.Number) (d decimal, ok bool) {
	s := string(number)
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expText = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return d, false
	}
	d.exp = new(big.Int)
	if expText != "" {
		if strings.HasPrefix(expText, "+") {
			expText = expText[1:]
		}
		if _, ok := d.exp.SetString(expText, 10); !ok {
			return d, false
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	if trimmed == "" {
		return decimal{exp: new(big.Int)}, true // zero, whatever its sign
	}
	d.digits = trimmed
	// value = digits × 10^(exp − len(frac) + trailing zeros dropped)
	d.exp.Add(d.exp, big.NewInt(int64(len(digits)-len(trimmed)-len(frac))))
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isInt reports whether the number has no fractional part.
func (d decimal) isInt() bool { return d.digits == "" || d.exp.Sign() >= 0 }

// appendKey appends the canonical form of the number.
func (d decimal) appendKey(dst []byte) []byte {
	if d.neg {
		dst = append(dst, '-')
	}
	dst = append(dst, d.digits...)
	dst = append(dst, 'e')
	return d.exp.Append(dst, 10)
}

// canonKey appends a canonical encoding of a decoded JSON value: equal JSON
// values (numbers by value, objects whatever their key order) get equal
// keys. It charges b one step per value and per 64 bytes of text.
func canonKey(dst []byte, v any, b *budget) []byte {
	switch value := v.(type) {
	case nil:
		return append(dst, 'n')
	case bool:
		if value {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case string:
		b.spend(1 + len(value)/64)
		dst = append(dst, 's')
		return appendLenPrefixed(dst, value)
	case json.Number:
		b.spend(1 + len(value)/64)
		d, ok := decimalOf(value)
		if !ok {
			return appendLenPrefixed(append(dst, '?'), string(value))
		}
		return d.appendKey(append(dst, '#'))
	case []any:
		b.spend(1)
		dst = append(dst, '[')
		for _, item := range value {
			dst = canonKey(dst, item, b)
		}
		return append(dst, ']')
	case object:
		b.spend(1 + len(value))
		// Keys sorted, so that member order does not matter.
		keys := make([]string, 0, len(value))
		byKey := make(map[string][]byte, len(value))
		for _, m := range value {
			if _, dup := byKey[m.Key]; !dup {
				keys = append(keys, m.Key)
			}
			byKey[m.Key] = canonKey(nil, m.Value, b)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for _, k := range keys {
			dst = appendLenPrefixed(dst, k)
			dst = append(dst, byKey[k]...)
		}
		return append(dst, '}')
	}
	return append(dst, '!')
}

// appendLenPrefixed appends s with its length first, so that no two
// different sequences of strings share an encoding.
func appendLenPrefixed(dst []byte, s string) []byte {
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, ':')
	return append(dst, s...)
}
