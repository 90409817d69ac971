package schemagen

import (
	"fmt"
	"slices"
)

// object generates an object for a conjunction: every property any node
// names, in first-seen order; required ones always, optional ones at random
// (rarer with depth); extra keys only when minProperties asks for them.
func (g *generator) object(conj []*node, depth int) (any, error) {
	var names, required []string
	minProps, maxProps := 0, -1
	for _, n := range conj {
		for _, p := range n.properties {
			if !slices.Contains(names, p.name) {
				names = append(names, p.name)
			}
		}
		for _, name := range n.required {
			if !slices.Contains(required, name) {
				required = append(required, name)
			}
		}
		minProps = max(minProps, n.minProperties)
		if n.maxProperties >= 0 && (maxProps < 0 || n.maxProperties < maxProps) {
			maxProps = n.maxProperties
		}
	}
	// required names no properties keyword lists come after the listed ones
	for _, name := range required {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if (maxProps >= 0 && len(required) > maxProps) || minProps > workBudget-g.work {
		return nil, errUnsatisfiable
	}
	include := make([]bool, len(names))
	count := 0
	for i, name := range names {
		if slices.Contains(required, name) {
			include[i] = true
			count++
		}
	}
	optionalChance := 60
	switch {
	case depth >= minimalDepth:
		optionalChance = 0
	case depth >= shallowDepth:
		optionalChance = 25
	}
	for i := range names {
		if include[i] || (maxProps >= 0 && count >= maxProps) {
			continue
		}
		if count < minProps || g.rng.IntN(100) < optionalChance {
			include[i] = true
			count++
		}
	}

	var out object
	for i, name := range names {
		if !include[i] {
			continue
		}
		schemas, allowed := propertyConstraints(conj, name)
		isRequired := slices.Contains(required, name)
		if !allowed {
			if isRequired {
				return nil, errUnsatisfiable
			}
			continue
		}
		value, err := g.value(schemas, nil, depth+1)
		if err != nil {
			if isRequired {
				return nil, err
			}
			continue // an optional property that cannot be satisfied is left out
		}
		out = append(out, member{Key: name, Value: value})
	}
	// minProperties beyond the named properties: invent keys the
	// additionalProperties schemas accept.
	for extra := 1; len(out) < minProps && extra < minProps+16; extra++ {
		name := fmt.Sprintf("extra_%d", extra)
		if _, taken := out.get(name); taken || slices.Contains(names, name) {
			continue
		}
		schemas, allowed := propertyConstraints(conj, name)
		if !allowed {
			return nil, errUnsatisfiable
		}
		value, err := g.value(schemas, nil, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, member{Key: name, Value: value})
	}
	if len(out) < minProps {
		return nil, errUnsatisfiable
	}
	if out == nil {
		out = object{}
	}
	return out, nil
}

// propertyConstraints collects the schemas the conjunction applies to one
// property; allowed is false when some node forbids it
// (additionalProperties: false).
func propertyConstraints(conj []*node, name string) (schemas []*node, allowed bool) {
	for _, n := range conj {
		schema := n.propertySchema(name)
		if schema == nil {
			continue
		}
		if schema.alwaysFalse {
			return nil, false
		}
		schemas = append(schemas, schema)
	}
	return schemas, true
}

// array generates an array whose length lies in the combined
// [minItems, maxItems], short by preference, longer near the top.
func (g *generator) array(conj []*node, depth int) (any, error) {
	minItems, maxItems := 0, -1
	unique := false
	prefixLen := 0
	for _, n := range conj {
		minItems = max(minItems, n.minItems)
		if n.maxItems >= 0 && (maxItems < 0 || n.maxItems < maxItems) {
			maxItems = n.maxItems
		}
		unique = unique || n.uniqueItems
		prefixLen = max(prefixLen, len(n.prefixItems))
		// items: false closes the array after its prefix
		if n.items != nil && n.items.alwaysFalse {
			if maxItems < 0 || len(n.prefixItems) < maxItems {
				maxItems = len(n.prefixItems)
			}
		}
	}
	if maxItems >= 0 && minItems > maxItems {
		return nil, errUnsatisfiable
	}
	if minItems > workBudget-g.work { // each item costs at least one unit
		return nil, errUnsatisfiable
	}
	spread := 3
	switch {
	case depth >= minimalDepth:
		spread = 0
	case depth >= shallowDepth:
		spread = 1
	}
	upper := minItems + spread
	if maxItems >= 0 {
		upper = min(upper, maxItems)
	}
	length := minItems + g.rng.IntN(upper-minItems+1)
	out := make([]any, 0, length)
	for i := 0; i < length; i++ {
		schemas := itemConstraints(conj, i)
		var item any
		var err error
		for try := 0; try < 24; try++ {
			item, err = g.value(schemas, nil, depth+1)
			if err != nil || !unique || !g.b.spend(len(out)) || !slices.ContainsFunc(out, func(have any) bool { return jsonEqual(have, item) }) {
				break
			}
			err = errUnsatisfiable // a duplicate; try again
		}
		if err != nil {
			if len(out) >= minItems {
				break // stop early rather than fail: the array is long enough
			}
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

func itemConstraints(conj []*node, index int) []*node {
	var schemas []*node
	for _, n := range conj {
		switch {
		case index < len(n.prefixItems):
			schemas = append(schemas, n.prefixItems[index])
		case n.items != nil:
			schemas = append(schemas, n.items)
		}
	}
	return schemas
}
