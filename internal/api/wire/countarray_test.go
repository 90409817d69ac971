package wire

import (
	"encoding/json"
	"testing"
)

// CountArray agrees with encoding/json's element count on every valid
// array, nested or with separators inside strings.
func FuzzCountArrayAgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{`[]`, `[ ]`, `[1]`, `["a,b","c\"]"]`, `[[1,2],[3]]`, `[{"a":[1,2]},{}]`,
		" [\n1 ,\t2 ]", `["\\",","]`, `[[],[]]`, `{"a":1}`, `"x"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil || !json.Valid(raw) {
			return
		}
		trimmed := raw
		for len(trimmed) > 0 && (trimmed[0] == ' ' || trimmed[0] == '\t' || trimmed[0] == '\n' || trimmed[0] == '\r') {
			trimmed = trimmed[1:]
		}
		if a == nil && string(trimmed) == "null" {
			return
		}
		if got := CountArray(trimmed); got != len(a) {
			t.Fatalf("CountArray(%s) = %d, encoding/json finds %d", raw, got, len(a))
		}
	})
}
