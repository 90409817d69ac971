package schemagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// member is one key of a JSON object. Objects are kept as ordered member
// lists rather than Go maps so that a schema's property order survives
// compilation and generated objects list their keys in that order, the way a
// model writes them.
type member struct {
	Key   string
	Value any
}

// object is a JSON object in source order.
type object []member

// get returns the value of key and whether it is present.
func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// decodeOrdered parses one JSON document into nil, bool, json.Number, string,
// []any or object. Trailing data is an error.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	value, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return value, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := object{}
			for dec.More() {
				keyTok, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := keyTok.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %T, not a string", keyTok)
				}
				value, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{Key: key, Value: value})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				value, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, value)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %q", t)
	default:
		return t, nil
	}
}

// appendJSON appends the compact JSON encoding of v. Strings keep non-ASCII
// characters as UTF-8 (like Python's json.dumps(ensure_ascii=False)) and do
// not HTML-escape.
func appendJSON(dst []byte, v any) []byte {
	switch value := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, value)
	case json.Number:
		return append(dst, value...)
	case string:
		return jsonenc.AppendString(dst, value)
	case []any:
		dst = append(dst, '[')
		for i, item := range value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, item)
		}
		return append(dst, ']')
	case object:
		dst = append(dst, '{')
		for i, m := range value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonenc.AppendString(dst, m.Key)
			dst = append(dst, ':')
			dst = appendJSON(dst, m.Value)
		}
		return append(dst, '}')
	}
	panic(fmt.Sprintf("schemagen: cannot encode %T", v))
}

// jsonEqual reports whether two decoded values are equal as JSON values
// (numbers compared by value, objects regardless of key order).
func jsonEqual(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok {
			return false
		}
		ad, aok := decimalOf(av)
		bd, bok := decimalOf(bv)
		return aok && bok && ad.neg == bd.neg && ad.digits == bd.digits && ad.exp.Cmp(bd.exp) == 0
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	case object:
		bv, ok := b.(object)
		if !ok || len(av) != len(bv) {
			return false
		}
		for _, m := range av {
			other, found := bv.get(m.Key)
			if !found || !jsonEqual(m.Value, other) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonType returns the JSON Schema type name of a decoded value; integers
// (numbers with a zero fractional part) report "integer".
func jsonType(v any) string {
	switch value := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if d, ok := decimalOf(value); ok && d.isInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case object:
		return "object"
	}
	return ""
}
