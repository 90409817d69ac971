package schemagentest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Reference compiles schema with santhosh-tekuri/jsonschema, a validator
// independent of schemagen, with format assertions on; the test fails if
// the reference refuses the schema.
func Reference(t testing.TB, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
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

// Check validates the JSON text instance with a Reference schema.
func Check(schema *jsonschema.Schema, instance string) error {
	value, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		return fmt.Errorf("instance is not JSON: %w: %q", err, instance)
	}
	return schema.Validate(value)
}
