package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The splitter agrees with encoding/json on valid JSON, including strings
// with escaped quotes and backslashes, nesting, whitespace and duplicate
// keys (the last wins), and gives up on a key with escapes.
func TestSplitAgreesWithEncodingJSON(t *testing.T) {
	big := strings.Repeat("A", 5000)
	for _, doc := range []string{
		`{}`, ` { } `, `[]`, `[ ]`,
		`{"a":1,"b":"x\"y\\","c":[1,{"d":"]}"}],"e":null,"f":true,"a":2}`,
		`{"url":"data:image/png;base64,` + big + `","n":-1.5e3}`,
		"[\n\t{\"type\":\"text\",\"text\":\"hi\\\\\"},\n {\"type\":\"image_url\",\"image_url\":{\"url\":\"" + big + "\"}} ]",
		`["a\\\"]",[[],{}],{"x":{"y":[1,2,3]}}, 7 ,false]`,
	} {
		if doc[strings.IndexAny(doc, "{[")] == '{' {
			var want map[string]json.RawMessage
			if err := json.Unmarshal([]byte(doc), &want); err != nil {
				t.Fatal(err)
			}
			got, ok := splitObject([]byte(doc), nil)
			if !ok || !reflect.DeepEqual(normRaw(got), normRaw(want)) {
				t.Errorf("object %.80q: %v %v, want %v", doc, ok, got, want)
			}
			continue
		}
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := splitArray([]byte(doc), nil)
		if !ok || len(got) != len(want) {
			t.Fatalf("array %.80q: %v %d elements, want %d", doc, ok, len(got), len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Errorf("array %.80q [%d] = %s, want %s", doc, i, got[i], want[i])
			}
		}
	}
	if _, ok := splitObject([]byte(`{"a\"b":1}`), nil); ok {
		t.Error("a key with an escape was split")
	}
	for _, bad := range []string{`{"a":1`, `{"a" 1}`, `[1,2`, `{"a":"x}`} {
		if _, ok := splitObject([]byte(bad), nil); ok {
			t.Errorf("%q split", bad)
		}
	}
}

func normRaw(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}
