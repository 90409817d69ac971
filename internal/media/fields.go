package media

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// FieldsFromJSON decodes a JSON object (a request's mm_processor_kwargs)
// into Fields in the text's key order — the order Python's json keeps and
// vLLM's hash follows. Nested objects become []Field, arrays []any and
// numbers json.Number, so an integer and a float hash as Python's int and
// float do. A value that is not an object is ErrCorrupt.
func FieldsFromJSON(b []byte) ([]Field, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeOrdered(d)
	if err != nil {
		return nil, fmt.Errorf("%w: kwargs: %v", ErrCorrupt, err)
	}
	fs, ok := v.([]Field)
	if !ok {
		return nil, fmt.Errorf("%w: kwargs are not a JSON object", ErrCorrupt)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: kwargs: trailing data", ErrCorrupt)
	}
	return fs, nil
}

func decodeOrdered(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		fs := []Field{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(d)
			if err != nil {
				return nil, err
			}
			// Python's dict keeps the last of duplicate keys, in the
			// position of the first.
			dup := false
			for i := range fs {
				if fs[i].Key == k.(string) {
					fs[i].Value, dup = v, true
				}
			}
			if !dup {
				fs = append(fs, Field{Key: k.(string), Value: v})
			}
		}
		_, err := d.Token()
		return fs, err
	case json.Delim('['):
		vs := []any{}
		for d.More() {
			v, err := decodeOrdered(d)
			if err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		_, err := d.Token()
		return vs, err
	}
	return tok, nil
}
