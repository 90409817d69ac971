package schemagen

import "testing"

// benchSchema is a typical tool-call schema: a few typed properties, an
// enum, a nested array of objects with a $ref.
var benchSchema = []byte(`{"type":"object","properties":{
	"location":{"type":"string","description":"City and country"},
	"unit":{"type":"string","enum":["celsius","fahrenheit"]},
	"days":{"type":"integer","minimum":1,"maximum":14},
	"when":{"type":"string","format":"date-time"},
	"stops":{"type":"array","items":{"$ref":"#/$defs/stop"},"maxItems":4}},
	"required":["location","unit","days"],"additionalProperties":false,
	"$defs":{"stop":{"type":"object","properties":{"name":{"type":"string"},"lat":{"type":"number","minimum":-90,"maximum":90}},"required":["name","lat"]}}}`)

func BenchmarkGenerate(b *testing.B) {
	compiled, err := Compile(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		compiled.Generate(uint64(i))
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(benchSchema); err != nil {
			b.Fatal(err)
		}
	}
}
