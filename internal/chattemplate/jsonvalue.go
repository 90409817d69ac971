package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// decodeJSON turns raw JSON into a template value the way Python's json.loads
// does for transformers: objects keep their key order (templates iterate over
// tool parameter properties and print them), numbers without a fraction or
// exponent stay integers and the rest are floats, null is None.
func decodeJSON(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	val, err := decodeJSONValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jinja.Value{}, errors.New("unexpected data after the JSON value")
	}
	return val, nil
}

func decodeJSONValue(dec *json.Decoder) (jinja.Value, error) {
	token, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch token := token.(type) {
	case json.Delim:
		switch token {
		case '[':
			var items []jinja.Value
			for dec.More() {
				item, err := decodeJSONValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, item)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Value{}, err
			}
			return jinja.NewList(items), nil
		case '{':
			obj := jinja.NewDict()
			dict := obj.AsDict()
			for dec.More() {
				keyToken, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				key, ok := keyToken.(string)
				if !ok {
					return jinja.Value{}, fmt.Errorf("object key %v is not a string", keyToken)
				}
				item, err := decodeJSONValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				// A repeated key keeps its first position and the last
				// value, as a Python dict built by json.loads does.
				dict.Set(key, item)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Value{}, err
			}
			return obj, nil
		}
		return jinja.Value{}, fmt.Errorf("unexpected delimiter %q", token)
	case string:
		return jinja.NewString(token), nil
	case bool:
		return jinja.NewBool(token), nil
	case nil:
		return jinja.None(), nil
	case json.Number:
		return decodeNumber(string(token))
	}
	return jinja.Value{}, fmt.Errorf("unexpected JSON token %v", token)
}

// decodeNumber keeps Python's int/float split: "2" is an int, "2.0" and
// "2e0" are floats (printed "2.0" by both str() and json.dumps).
func decodeNumber(text string) (jinja.Value, error) {
	if !strings.ContainsAny(text, ".eE") {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return jinja.NewInt(n), nil
		}
		// Python ints are unbounded; beyond int64 the closest this engine
		// has is a float, which prints differently. Refuse rather than
		// render a different prompt.
		return jinja.Value{}, fmt.Errorf("integer %s does not fit in 64 bits", text)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return jinja.Value{}, fmt.Errorf("number %s: %w", text, err)
	}
	return jinja.NewFloat(f), nil
}
