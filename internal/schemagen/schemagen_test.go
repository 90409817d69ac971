package schemagen

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
)

func TestCompileRefusesInvalidOrUnsupportedSchemas(t *testing.T) {
	tests := []struct {
		name, schema, wantInError string
	}{
		{"not JSON", `{"type":`, "not valid JSON"},
		{"schema is a number", `42`, "must be an object or a boolean"},
		{"unknown type", `{"type":"strnig"}`, "unknown type"},
		{"type of wrong kind", `{"type":7}`, "type must be a string or an array"},
		{"properties not an object", `{"properties":[]}`, "properties must be an object"},
		{"required not strings", `{"required":[1]}`, "required must be an array of strings"},
		{"negative minItems", `{"minItems":-1}`, "minItems must be a non-negative integer"},
		{"dangling ref", `{"$ref":"#/$defs/missing"}`, "does not resolve"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "only references inside the schema"},
		{"lookahead pattern", `{"type":"string","pattern":"^(?=a)"}`, "not supported"},
		{"unsupported keyword", `{"not":{"type":"string"}}`, `keyword "not" is not supported`},
		{"empty enum", `{"enum":[]}`, "enum must not be empty"},
		{"unsatisfiable", `{"type":"integer","minimum":5,"maximum":4}`, "no instance satisfies"},
		{"false schema", `false`, "no instance satisfies"},
		{"required but forbidden", `{"type":"object","required":["a"],"additionalProperties":false}`, "no instance satisfies"},
		{"multipleOf zero", `{"multipleOf":0}`, "multipleOf must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) succeeded", tt.schema)
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not wrap ErrInvalidSchema", err)
			}
			if !strings.Contains(err.Error(), tt.wantInError) {
				t.Errorf("error %q does not mention %q", err, tt.wantInError)
			}
		})
	}
}

// A schema as zod's zodResponseFormat or pydantic writes it: $ref into
// definitions, nullable anyOf, enums, nested arrays, strict objects.
func TestGenerateKeepsPropertyOrderAndValidates(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"name":{"type":"string"},"when":{"type":"string","format":"date-time"},
		"attendees":{"type":"array","items":{"$ref":"#/definitions/person"},"minItems":1,"maxItems":3},
		"room":{"anyOf":[{"type":"string","enum":["A","B"]},{"type":"null"}]}},
		"required":["name","when","attendees","room"],"additionalProperties":false,
		"definitions":{"person":{"type":"object","properties":{"email":{"type":"string","format":"email"},
		"age":{"type":"integer","minimum":18,"maximum":99}},"required":["email","age"],"additionalProperties":false}},
		"$schema":"http://json-schema.org/draft-07/schema#"}`)
	compiled, err := Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	reference := schemagentest.Reference(t, schema)
	keyOrder := regexp.MustCompile(`^\{"name":.*,"when":.*,"attendees":\[\{"email":.*,"age":\d+.*\],"room":`)
	for seed := range uint64(50) {
		out := compiled.Generate(seed)
		if err := schemagentest.Check(reference, string(out)); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, out, err)
		}
		if !keyOrder.Match(out) {
			t.Fatalf("seed %d: keys out of schema order: %s", seed, out)
		}
		if !compiled.Validate(out) {
			t.Fatalf("own validator rejects %s", out)
		}
	}
}

func TestGenerateDiffersAcrossSeeds(t *testing.T) {
	compiled, err := Compile([]byte(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}`))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		seen[string(compiled.Generate(seed))] = true
	}
	if len(seen) < 15 {
		t.Fatalf("only %d distinct instances in 20 seeds", len(seen))
	}
}

func TestAnyObjectIsAJSONObject(t *testing.T) {
	for seed := range uint64(200) {
		out := AnyObject(seed)
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil || len(obj) == 0 {
			t.Fatalf("seed %d: %s is not a non-empty object: %v", seed, out, err)
		}
		if string(AnyObject(seed)) != string(out) {
			t.Fatalf("seed %d: not deterministic", seed)
		}
	}
}

func TestRegexGenerateFullyMatches(t *testing.T) {
	patterns := []string{`\d{3}-\d{4}`, `(yes|no|maybe)`, `[A-Z][a-z]{2,5} [0-9]+`, `[^"\\]{4}`, `a*b+c?`, `\w+@\w+\.com`}
	for _, pattern := range patterns {
		re, err := CompileRegex(pattern)
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		full := regexp.MustCompile(`^(?:` + pattern + `)$`)
		for seed := range uint64(50) {
			if s := re.Generate(seed); !full.MatchString(s) {
				t.Fatalf("%s seed %d: %q does not match", pattern, seed, s)
			}
		}
	}
	for _, bad := range []string{`(?=x)`, `(a)\1`, `[`} {
		if _, err := CompileRegex(bad); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("CompileRegex(%q) = %v, want ErrInvalidSchema", bad, err)
		}
	}
}

func TestSpacedMatchesPythonSeparators(t *testing.T) {
	in := []byte(`{"a":[1,2,{"b":"x, y: \"z\""}],"c":{}}`)
	want := `{"a": [1, 2, {"b": "x, y: \"z\""}], "c": {}}`
	if got := string(Spaced(in)); got != want {
		t.Fatalf("Spaced = %s, want %s", got, want)
	}
	var a, b any
	if json.Unmarshal(in, &a) != nil || json.Unmarshal(Spaced(in), &b) != nil {
		t.Fatal("not JSON")
	}
}

// Schemas whose instances would be huge, or whose search explodes, are
// refused quickly instead of exhausting memory or time.
func TestCompileBoundsWork(t *testing.T) {
	for _, schema := range []string{
		`{"type":"array","minItems":1000000,"items":{"type":"string","minLength":1000000}}`,
		`{"type":"array","minItems":1000000,"items":{"type":"object","required":["a"],"properties":{"a":{"type":"array","minItems":1000000}}}}`,
		`{"$defs":{"t":{"type":"object","required":["l","r"],"properties":{"l":{"$ref":"#/$defs/t"},"r":{"$ref":"#/$defs/t"}}}},"$ref":"#/$defs/t"}`,
	} {
		start := time.Now()
		_, err := Compile([]byte(schema))
		if !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%s: %v, want unsatisfiable", schema, err)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("%s: took %v", schema, elapsed)
		}
	}
}
