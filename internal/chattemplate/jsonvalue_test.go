package chattemplate

import (
	"encoding/json"
	"testing"

	"github.com/ardanlabs/jinja"
)

// FuzzDecodeJSONAgreesWithEncodingJSON checks the dedicated parser against
// encoding/json: the same documents are accepted, and they decode to the
// same data (keys compared as a set here; their order is checked against
// Python by the template tests).
func FuzzDecodeJSONAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`[]`, `{}`, `null`, `true`, ` [1, -2, 3.5, 1e3, -0.0, 2E-2] `, `{"a": {"b": [null, false]}}`,
		`"plain"`, `"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00 \ud800 x"`, `"raw é 你好"`,
		`[1,]`, `{"a" 1}`, `{"a": 1,}`, `01`, `1.`, `.5`, `-`, `1e`, `"unterminated`, `"\x"`, `[1] 2`,
		`{"a": 1, "a": 2}`, "\"ctl \x01\"", `tru`, `nul`, `[[[[[]]]]]`, `"\u12"`, "\"bad utf8 \xff\"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want any
		wantErr := json.Unmarshal(data, &want)
		got, gotErr := decodeJSON(data)
		if (wantErr == nil) != (gotErr == nil) {
			if gotErr != nil && wantErr == nil && isBigInteger(want) {
				return // refused on purpose: Python ints are unbounded
			}
			t.Fatalf("%q: encoding/json error %v, decodeJSON error %v", data, wantErr, gotErr)
		}
		if wantErr != nil {
			return
		}
		if !sameData(got, want) {
			t.Fatalf("%q: decodeJSON %s, encoding/json %#v", data, got.String(), want)
		}
	})
}

// isBigInteger reports whether v holds an integer outside int64.
func isBigInteger(v any) bool {
	switch v := v.(type) {
	case float64:
		return v >= 9.2e18 || v <= -9.2e18
	case []any:
		for _, item := range v {
			if isBigInteger(item) {
				return true
			}
		}
	case map[string]any:
		for _, item := range v {
			if isBigInteger(item) {
				return true
			}
		}
	}
	return false
}

func sameData(got jinja.Value, want any) bool {
	switch want := want.(type) {
	case nil:
		return got.IsNone()
	case bool:
		return got.IsBool() && got.AsBool() == want
	case float64:
		switch {
		case got.IsInt():
			return float64(got.AsInt()) == want
		case got.IsFloat():
			return got.AsFloat() == want
		}
		return false
	case string:
		return got.IsString() && got.AsString() == want
	case []any:
		if !got.IsList() || got.AsList().Len() != len(want) {
			return false
		}
		for i, item := range want {
			if !sameData(got.AsList().Items[i], item) {
				return false
			}
		}
		return true
	case map[string]any:
		if !got.IsDict() || got.AsDict().Len() != len(want) {
			return false
		}
		for key, item := range want {
			val, ok := got.AsDict().Get(key)
			if !ok || !sameData(val, item) {
				return false
			}
		}
		return true
	}
	return false
}
