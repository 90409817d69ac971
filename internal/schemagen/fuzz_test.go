package schemagen

import (
	"encoding/json"
	"testing"
)

// FuzzCompileGenerate: any input either fails Compile with
// ErrInvalidSchema or compiles to a schema whose instances are JSON the
// schema accepts — never a panic or a hang.
func FuzzCompileGenerate(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$"}},"required":["a"]}`,
		`{"$defs":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"$ref":"#/$defs/n"}`,
		`{"oneOf":[{"type":"integer","multipleOf":3},{"type":"integer","multipleOf":5}]}`,
		`{"type":"array","items":{"enum":[1,2]},"uniqueItems":true,"minItems":2}`,
		`{"allOf":[{"minimum":1.5},{"exclusiveMaximum":1.75}],"type":"number"}`,
		`true`, `false`, `{}`, `[]`, `{"$ref":"#"}`,
	} {
		f.Add([]byte(seed), uint64(1))
	}
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		compiled, err := Compile(schema)
		if err != nil {
			return
		}
		out := compiled.Generate(seed)
		if !json.Valid(out) || !compiled.Validate(out) {
			t.Fatalf("schema %s: instance %s is not valid", schema, out)
		}
	})
}
