package schemagen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Schema is a compiled JSON Schema ready to generate instances. It is
// immutable and safe for concurrent use.
type Schema struct {
	root *node
	// fallback is an instance found at compile time; Generate returns it
	// when every seeded attempt fails, so that output always validates.
	fallback []byte
	limits   Limits // resolved; bound each Generate and Validate
}

// Tuning of the generator's search.
const (
	// shallowDepth is the nesting depth up to which optional properties
	// and longer arrays are likely; beyond it the generator prefers small
	// instances so that recursive schemas terminate quickly.
	shallowDepth = 3
	// minimalDepth switches to minimal instances: no optional properties,
	// arrays at minItems.
	minimalDepth = 8
	// maxDepth bounds recursion; deeper attempts fail and the caller
	// backtracks (another anyOf branch, an omitted optional property).
	maxDepth = 48
	// workBudget bounds the work of one attempt — node visits, plus one
	// unit per 16 bytes of generated strings — so that an unsatisfiable
	// recursive schema fails fast instead of backtracking exponentially,
	// and a schema asking for huge instances (minItems × minLength) is
	// refused instead of exhausting memory.
	workBudget = 200_000
	// satisfiableSeeds is how many seeds Compile tries to find its
	// fallback instance before calling the schema unsatisfiable; a
	// request with such a schema costs at most this many budgets.
	satisfiableSeeds = 8
	// attempts is how many derived seeds Generate tries before returning
	// the compile-time fallback.
	attempts = 16
)

var errUnsatisfiable = errors.New("no instance satisfies the schema")

// Generate returns a compact JSON instance of the schema, the same bytes
// for the same seed. Object keys follow the schema's property order. Its
// work is bounded by the schema's MaxSteps; past it (or when every seeded
// attempt fails) it returns the instance Compile found.
func (s *Schema) Generate(seed uint64) []byte {
	out, err := s.GenerateContext(context.Background(), seed)
	if err != nil {
		return slices.Clone(s.fallback)
	}
	return out
}

// GenerateContext is Generate that stops when ctx is done (the request is
// gone) or its work reaches the schema's MaxSteps: the error then wraps
// ctx's error or ErrBudget. The instance for a seed does not depend on ctx.
func (s *Schema) GenerateContext(ctx context.Context, seed uint64) ([]byte, error) {
	b := newBudget(ctx, s.limits.MaxSteps)
	for attempt := range uint64(attempts) {
		if out, err := s.generate(seed, attempt, b); err == nil {
			return out, nil
		}
		if b.err != nil {
			return nil, b.err
		}
	}
	return slices.Clone(s.fallback), nil
}

func (s *Schema) generate(seed, attempt uint64, b *budget) ([]byte, error) {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 0x5eed5c4e3a^attempt)), b: b}
	value, err := g.value([]*node{s.root}, nil, 0)
	if err != nil {
		return nil, err
	}
	if !s.root.matches(value, b) {
		if b.err != nil {
			return nil, b.err
		}
		return nil, fmt.Errorf("internal: generated instance does not match: %s", appendJSON(nil, value))
	}
	return appendJSON(nil, value), nil
}

// checkSatisfiable finds the fallback instance or reports the schema as
// unsatisfiable; b is the compilation's budget.
func (s *Schema) checkSatisfiable(b *budget) error {
	for seed := range uint64(satisfiableSeeds) {
		if out, err := s.generate(seed, 0, b); err == nil {
			s.fallback = out
			return nil
		}
		if b.err != nil {
			return b.err
		}
	}
	return fmt.Errorf("%w: %v (or its instances are larger or harder to find than the generator's work limit allows)", ErrInvalidSchema, errUnsatisfiable)
}

// Validate reports whether the JSON document data is an instance of the
// schema, as far as the supported keywords go (formats: the ones Generate
// produces). Tests and callers use it to check output they assembled. A
// document whose check needs more than MaxSteps is reported as no instance.
func (s *Schema) Validate(data []byte) bool {
	ok, _ := s.ValidateContext(context.Background(), data)
	return ok
}

// ValidateContext is Validate that stops when ctx is done or the check
// reaches the schema's MaxSteps; the error then wraps ctx's error or
// ErrBudget, and ok is false.
func (s *Schema) ValidateContext(ctx context.Context, data []byte) (ok bool, err error) {
	value, err := decodeOrdered(data)
	if err != nil {
		return false, nil
	}
	b := newBudget(ctx, s.limits.MaxSteps)
	ok = s.root.matches(value, b)
	if b.err != nil {
		return false, b.err
	}
	return ok, nil
}

type generator struct {
	rng  *rand.Rand
	work int     // this attempt's work, against workBudget
	b    *budget // the whole call's, against Limits.MaxSteps
}

// value generates an instance of the conjunction of nodes. decided lists
// the nodes whose anyOf/oneOf branch has already been chosen on this path.
func (g *generator) value(nodes []*node, decided []*node, depth int) (any, error) {
	g.work++
	if g.work > workBudget || depth > maxDepth || !g.b.spend(1+len(nodes)+len(decided)) {
		return nil, errUnsatisfiable
	}
	conj, err := expand(nodes)
	if err != nil {
		return nil, err
	}
	g.b.spend(len(conj))
	// Choose a branch of the first undecided anyOf/oneOf, then continue
	// with the branch added to the conjunction: its constraints combine
	// with the siblings of the anyOf.
	for _, n := range conj {
		if (len(n.anyOf) == 0 && len(n.oneOf) == 0) || slices.Contains(decided, n) {
			continue
		}
		branches := n.anyOf
		if len(branches) == 0 {
			branches = n.oneOf
		}
		order := g.rng.Perm(len(branches))
		if depth >= minimalDepth {
			order = identityOrder(len(branches))
		}
		for _, i := range order {
			value, err := g.value(append(slices.Clone(conj), branches[i]), append(slices.Clone(decided), n), depth)
			if err != nil {
				continue
			}
			if n.matches(value, g.b) { // for oneOf: no other branch matches
				return value, nil
			}
		}
		return nil, errUnsatisfiable
	}
	return g.leaf(conj, depth)
}

func identityOrder(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}

// expand flattens allOf and $ref into one list of nodes that all apply.
func expand(nodes []*node) ([]*node, error) {
	var out []*node
	var visit func(n *node) error
	visit = func(n *node) error {
		if slices.Contains(out, n) {
			return nil
		}
		if n.alwaysFalse {
			return errUnsatisfiable
		}
		out = append(out, n)
		for _, sub := range n.allOf {
			if err := visit(sub); err != nil {
				return err
			}
		}
		if n.refNode != nil {
			return visit(n.refNode)
		}
		return nil
	}
	for _, n := range nodes {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// leaf generates from a conjunction without pending anyOf/oneOf choices.
func (g *generator) leaf(conj []*node, depth int) (any, error) {
	// enum: pick among the values every node accepts
	for _, n := range conj {
		if !n.hasEnum {
			continue
		}
		var candidates []any
		for _, value := range n.enum {
			if allMatch(conj, value, g.b) {
				candidates = append(candidates, value)
			}
		}
		if len(candidates) == 0 {
			return nil, errUnsatisfiable
		}
		return candidates[g.rng.IntN(len(candidates))], nil
	}
	types := allowedTypes(conj)
	if types == 0 {
		return nil, errUnsatisfiable
	}
	for _, kind := range g.typeOrder(conj, types, depth) {
		value, err := g.ofType(kind, conj, depth)
		if err == nil && allMatch(conj, value, g.b) {
			return value, nil
		}
	}
	return nil, errUnsatisfiable
}

func allMatch(conj []*node, value any, b *budget) bool {
	for _, n := range conj {
		if !n.matches(value, b) {
			return false
		}
	}
	return true
}

// allowedTypes intersects the type keywords; "number" admits integers.
func allowedTypes(conj []*node) typeSet {
	types := allTypes
	for _, n := range conj {
		if n.types == 0 {
			continue
		}
		set := n.types
		if set&typeNumber != 0 {
			set |= typeInteger
		}
		types &= set
	}
	return types
}

// typeOrder lists the types to try: a schema that constrains no type but
// uses object (array, string, number) keywords gets that type first, then
// the rest in random order; deep in a recursion null and scalars come first.
func (g *generator) typeOrder(conj []*node, types typeSet, depth int) []typeSet {
	var kinds []typeSet
	for _, tn := range typeNames {
		if types&tn.bit != 0 {
			kinds = append(kinds, tn.bit)
		}
	}
	if depth >= minimalDepth {
		return kinds // null, boolean, integer, ... : smallest first
	}
	g.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	if types == allTypes {
		hint := keywordType(conj)
		if i := slices.Index(kinds, hint); i > 0 {
			kinds[0], kinds[i] = kinds[i], kinds[0]
		}
	}
	return kinds
}

func keywordType(conj []*node) typeSet {
	for _, n := range conj {
		switch {
		case len(n.properties) > 0 || len(n.required) > 0 || n.additional != nil:
			return typeObject
		case n.items != nil || len(n.prefixItems) > 0 || n.minItems > 0:
			return typeArray
		case n.pattern != nil || n.format != "" || n.minLength > 0 || n.maxLength >= 0:
			return typeString
		case n.minimum != nil || n.maximum != nil || n.multipleOf != nil:
			return typeNumber
		}
	}
	return typeString
}

func (g *generator) ofType(kind typeSet, conj []*node, depth int) (any, error) {
	switch kind {
	case typeNull:
		return nil, nil
	case typeBoolean:
		return g.rng.IntN(2) == 1, nil
	case typeInteger:
		return g.number(conj, true)
	case typeNumber:
		return g.number(conj, false)
	case typeString:
		return g.str(conj)
	case typeArray:
		return g.array(conj, depth)
	case typeObject:
		return g.object(conj, depth)
	}
	return nil, errUnsatisfiable
}
