// Package schemagentest builds seeded random JSON Schemas from the keywords
// schemagen supports, for property tests of the generator and of the
// servers that use it.
package schemagentest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Random returns the JSON text of a random schema, the same one for the same
// seed: objects (required and optional properties, additionalProperties
// false or a schema, min/maxProperties), arrays (items, prefixItems,
// min/maxItems, uniqueItems), strings (formats, patterns, lengths),
// integers and numbers (bounds, exclusive bounds, multipleOf), enums and
// consts, anyOf, overlapping oneOf, allOf, anyOf with sibling keywords,
// $ref into $defs, and recursive definitions.
func Random(seed uint64) []byte {
	rs := &randomSchema{rng: rand.New(rand.NewPCG(seed, 42))}
	raw, err := json.Marshal(rs.document())
	if err != nil {
		panic(err)
	}
	return raw
}

// randomSchema builds random schemas from the supported keywords.
type randomSchema struct {
	rng  *rand.Rand
	defs map[string]any
	next int
}

func (r *randomSchema) document() map[string]any {
	r.defs = map[string]any{}
	root := r.schema(0)
	if len(r.defs) > 0 {
		if m, ok := root.(map[string]any); ok {
			m["$defs"] = r.defs
			return m
		}
		return map[string]any{"allOf": []any{root}, "$defs": r.defs}
	}
	if m, ok := root.(map[string]any); ok {
		return m
	}
	return map[string]any{"allOf": []any{root}}
}

func (r *randomSchema) schema(depth int) any {
	kinds := 12
	if depth >= 3 {
		kinds = 6 // scalars only: keep documents small
	}
	switch r.rng.IntN(kinds) {
	case 0:
		return r.str()
	case 1:
		return r.integer()
	case 2:
		return r.number()
	case 3:
		return map[string]any{"type": "boolean"}
	case 4:
		return r.enum()
	case 5:
		return map[string]any{"type": []string{"string", "null"}, "maxLength": 8}
	case 6, 7:
		return r.object(depth)
	case 8:
		return r.array(depth)
	case 9:
		return r.combinator(depth)
	case 10:
		return r.ref(depth)
	default:
		return r.recursive()
	}
}

func (r *randomSchema) str() map[string]any {
	s := map[string]any{"type": "string"}
	switch r.rng.IntN(5) {
	case 0:
		formats := []string{"date-time", "date", "time", "uuid", "email", "uri", "hostname", "ipv4", "ipv6"}
		s["format"] = formats[r.rng.IntN(len(formats))]
	case 1:
		patterns := []string{`^[a-z]{3,6}$`, `^\d{3}-\d{4}$`, `^(red|green|blue)$`, `[A-Z][a-z]+`, `^SKU-[0-9A-F]{4,8}$`}
		s["pattern"] = patterns[r.rng.IntN(len(patterns))]
	case 2:
		minLen := r.rng.IntN(10)
		s["minLength"] = minLen
		s["maxLength"] = minLen + r.rng.IntN(30)
	case 3:
		s["minLength"] = 40 + r.rng.IntN(60)
	}
	return s
}

func (r *randomSchema) integer() map[string]any {
	s := map[string]any{"type": "integer"}
	if r.rng.IntN(2) == 0 {
		lo := r.rng.IntN(200) - 100
		s["minimum"] = lo
		s["maximum"] = lo + r.rng.IntN(50)
	} else if r.rng.IntN(2) == 0 {
		s["exclusiveMinimum"] = -3
	}
	if r.rng.IntN(3) == 0 {
		s["multipleOf"] = 1 + r.rng.IntN(7)
		s["maximum"] = 1000
	}
	return s
}

func (r *randomSchema) number() map[string]any {
	s := map[string]any{"type": "number"}
	switch r.rng.IntN(4) {
	case 0:
		s["minimum"] = 0.5
		s["exclusiveMaximum"] = 0.75
	case 1:
		s["multipleOf"] = 0.25
		s["minimum"] = -2
		s["maximum"] = 2
	case 2:
		s["exclusiveMinimum"] = 1e3
	}
	return s
}

func (r *randomSchema) enum() map[string]any {
	pool := []any{"north", "south", 3, 2.5, true, nil, "é-ü", []any{1, 2}, map[string]any{"k": "v"}}
	r.rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	if r.rng.IntN(4) == 0 {
		return map[string]any{"const": pool[0]}
	}
	return map[string]any{"enum": pool[:1+r.rng.IntN(4)]}
}

func (r *randomSchema) object(depth int) map[string]any {
	props := map[string]any{}
	var required []string
	for i := range 1 + r.rng.IntN(5) {
		name := fmt.Sprintf("p%d_%d", depth, i)
		props[name] = r.schema(depth + 1)
		if r.rng.IntN(2) == 0 {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if required != nil {
		s["required"] = required
	}
	switch r.rng.IntN(4) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = map[string]any{"type": "integer"}
		s["minProperties"] = len(props) + 1
	case 2:
		s["maxProperties"] = len(required) + 1
	}
	return s
}

func (r *randomSchema) array(depth int) map[string]any {
	s := map[string]any{"type": "array", "items": r.schema(depth + 1)}
	minItems := r.rng.IntN(3)
	s["minItems"] = minItems
	if r.rng.IntN(2) == 0 {
		s["maxItems"] = minItems + r.rng.IntN(4)
	}
	if r.rng.IntN(3) == 0 {
		s["prefixItems"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
	}
	if r.rng.IntN(4) == 0 {
		s["uniqueItems"] = true
		s["items"] = map[string]any{"type": "integer", "minimum": 0, "maximum": 1000}
	}
	return s
}

func (r *randomSchema) combinator(depth int) any {
	switch r.rng.IntN(4) {
	case 0:
		return map[string]any{"anyOf": []any{r.schema(depth + 1), r.schema(depth + 1)}}
	case 1:
		// oneOf whose branches overlap: the generator must pick a value
		// only one branch accepts
		return map[string]any{"oneOf": []any{
			map[string]any{"type": "integer", "minimum": 0, "maximum": 10},
			map[string]any{"type": "integer", "minimum": 5, "maximum": 20},
		}}
	case 2:
		return map[string]any{"allOf": []any{
			map[string]any{"type": "object", "properties": map[string]any{"a": r.schema(depth + 1)}, "required": []string{"a"}},
			map[string]any{"properties": map[string]any{"b": map[string]any{"type": "string"}}, "required": []string{"b"}},
		}}
	default:
		// anyOf with sibling keywords
		return map[string]any{
			"type":       "object",
			"properties": map[string]any{"x": map[string]any{"type": "integer"}, "y": map[string]any{"type": "string"}},
			"anyOf":      []any{map[string]any{"required": []string{"x"}}, map[string]any{"required": []string{"y"}}},
		}
	}
}

func (r *randomSchema) ref(depth int) any {
	r.next++
	name := fmt.Sprintf("def%d", r.next)
	r.defs[name] = r.schema(depth + 1)
	return map[string]any{"$ref": "#/$defs/" + name}
}

// recursive adds a linked list / tree definition that refers to itself.
func (r *randomSchema) recursive() any {
	r.next++
	name := fmt.Sprintf("node%d", r.next)
	r.defs[name] = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"value":    map[string]any{"type": "integer"},
			"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/" + name}},
			"next":     map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/" + name}, map[string]any{"type": "null"}}},
		},
		"required": []string{"value", "next"},
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}
