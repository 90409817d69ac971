package schemagen

import (
	"bytes"
	"testing"

	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
)

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
		reference := schemagentest.Reference(t, raw)
		for seed := range uint64(3) {
			out := compiled.Generate(seed)
			if err := schemagentest.Check(reference, string(out)); err != nil {
				t.Fatalf("schema %d %s\nseed %d instance %s\nreference: %v", i, raw, seed, out, err)
			}
			if again := compiled.Generate(seed); !bytes.Equal(out, again) {
				t.Fatalf("schema %d seed %d not deterministic: %s vs %s", i, seed, out, again)
			}
		}
	}
}
