package schemagen

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
)

// referenceValidator compiles schema with santhosh-tekuri/jsonschema, an
// independent implementation, with format assertions on.
func referenceValidator(t testing.TB, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("reference cannot read schema %s: %v", schema, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("reference rejects schema %s: %v", schema, err)
	}
	return compiled
}

// referenceValid validates instance with the reference validator.
func referenceValid(compiled *jsonschema.Schema, instance []byte) error {
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return fmt.Errorf("instance is not JSON: %w", err)
	}
	return compiled.Validate(value)
}

// TestGeneratedInstancesValidateAgainstReference is the property test:
// 1,000 seeded random schemas, three instances each, every one valid for
// an independent validator, and the same bytes for the same seed.
func TestGeneratedInstancesValidateAgainstReference(t *testing.T) {
	schemas := 1000
	if testing.Short() {
		schemas = 200
	}
	for i := range schemas {
		raw := schemagentest.Random(uint64(i))
		compiled, err := Compile(raw)
		if err != nil {
			t.Fatalf("schema %d %s: %v", i, raw, err)
		}
		reference := referenceValidator(t, raw)
		for seed := range uint64(3) {
			out := compiled.Generate(seed)
			if err := referenceValid(reference, out); err != nil {
				t.Fatalf("schema %d %s\nseed %d instance %s\nreference: %v", i, raw, seed, out, err)
			}
			if again := compiled.Generate(seed); !bytes.Equal(out, again) {
				t.Fatalf("schema %d seed %d not deterministic: %s vs %s", i, seed, out, again)
			}
		}
	}
}
