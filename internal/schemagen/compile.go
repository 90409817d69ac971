package schemagen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidSchema is wrapped by every error Compile returns, so callers can
// answer with a 400 using errors.Is.
var ErrInvalidSchema = errors.New("invalid JSON schema")

// typeSet is a set of JSON Schema type names as bits.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeInteger // also satisfied by "number"
	typeNumber
	typeString
	typeArray
	typeObject

	allTypes = typeNull | typeBoolean | typeInteger | typeNumber | typeString | typeArray | typeObject
)

var typeNames = []struct {
	name string
	bit  typeSet
}{
	{"null", typeNull}, {"boolean", typeBoolean}, {"integer", typeInteger},
	{"number", typeNumber}, {"string", typeString}, {"array", typeArray}, {"object", typeObject},
}

// node is one compiled (sub)schema. Keywords that are absent keep their zero
// value; "has" fields tell a present zero from an absent one.
type node struct {
	path string // JSON pointer of the schema, for error messages

	alwaysFalse bool    // the schema `false` (or `{"not": {}}`)
	types       typeSet // 0 = any type

	enum     []any               // nil = no enum; const is an enum of one
	enumKeys map[string]struct{} // canonKey of each enum value
	hasEnum  bool
	allOf    []*node
	anyOf    []*node
	oneOf    []*node
	ref      string
	refNode  *node // resolved after compilation

	// object
	properties    []property
	required      []string
	additional    *node // nil = anything allowed; alwaysFalse = none
	minProperties int
	maxProperties int // -1 = unbounded

	// array
	prefixItems []*node
	items       *node // nil = anything
	minItems    int
	maxItems    int // -1 = unbounded
	uniqueItems bool

	// string
	minLength int
	maxLength int // -1 = unbounded
	pattern   *regexp.Regexp
	format    string

	// number
	minimum          *big.Rat
	maximum          *big.Rat
	exclusiveMinimum bool
	exclusiveMaximum bool
	multipleOf       *big.Rat
}

type property struct {
	name   string
	schema *node
}

// annotation keywords carry no constraint; they are accepted and ignored.
var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true, "$vocabulary": true,
	"$dynamicAnchor": true, "title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "contentEncoding": true,
	"contentMediaType": true, "contentSchema": true, "nullable": true, "discriminator": true,
	"strict": true, "name": true, "x-order": true, "propertyOrdering": true,
}

// unsupportedKeywords constrain instances in ways the generator cannot
// promise to satisfy; Compile refuses them instead of producing output that
// might not validate.
var unsupportedKeywords = map[string]bool{
	"not": true, "if": true, "then": true, "else": true, "contains": true, "minContains": true,
	"maxContains": true, "patternProperties": true, "propertyNames": true,
	"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
	"unevaluatedProperties": true, "unevaluatedItems": true, "$dynamicRef": true,
	"$recursiveRef": true, "additionalItems": true,
}

type compiler struct {
	root any
	// byPointer caches compiled nodes by JSON pointer so that $ref cycles
	// resolve to the same node.
	byPointer map[string]*node
	pending   []*node
	limits    Limits
	b         *budget
	enums     int // enum and const values so far, against MaxEnum
}

// Compile parses and checks a JSON Schema (draft 2020-12 keywords, plus
// draft-07 `definitions` and array-form `items`) under DefaultLimits. The
// error wraps ErrInvalidSchema and names the offending location.
func Compile(schema []byte) (*Schema, error) {
	return CompileContext(context.Background(), schema, Limits{})
}

// CompileContext is Compile under lim (zero fields: DefaultLimits) that
// stops when ctx is done. A schema over a limit gets a *BudgetError (it
// matches ErrBudget and ErrInvalidSchema) as soon as the limit is seen: the
// size before parsing, the enum count while compiling, the steps while
// searching for the fallback instance. The compiled Schema keeps lim's
// MaxSteps for its Generate and Validate.
func CompileContext(ctx context.Context, schema []byte, lim Limits) (*Schema, error) {
	lim = lim.resolved()
	if lim.MaxSchemaBytes >= 0 && len(schema) > lim.MaxSchemaBytes {
		return nil, &BudgetError{Limit: LimitSchemaBytes, Max: lim.MaxSchemaBytes, Got: len(schema)}
	}
	root, err := decodeOrdered(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrInvalidSchema, err)
	}
	return compileValue(ctx, root, lim)
}

func compileValue(ctx context.Context, root any, lim Limits) (*Schema, error) {
	c := &compiler{root: root, byPointer: map[string]*node{}, limits: lim, b: newBudget(ctx, lim.MaxSteps)}
	top, err := c.compile(root, "#")
	if err != nil {
		return nil, err
	}
	for len(c.pending) > 0 {
		n := c.pending[0]
		c.pending = c.pending[1:]
		target, err := c.resolve(n.ref, n.path)
		if err != nil {
			return nil, err
		}
		n.refNode = target
	}
	s := &Schema{root: top, limits: lim}
	if err := s.checkSatisfiable(c.b); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *compiler) errorf(path, format string, args ...any) error {
	return fmt.Errorf("%w: at %s: %s", ErrInvalidSchema, path, fmt.Sprintf(format, args...))
}

func (c *compiler) compile(v any, path string) (*node, error) {
	if n, ok := c.byPointer[path]; ok {
		return n, nil
	}
	n := &node{path: path, maxProperties: -1, maxItems: -1, maxLength: -1}
	c.byPointer[path] = n
	switch schema := v.(type) {
	case bool:
		n.alwaysFalse = !schema
		return n, nil
	case object:
		if err := c.fill(n, schema, path); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, c.errorf(path, "a schema must be an object or a boolean, not %s", jsonType(v))
}

func (c *compiler) fill(n *node, schema object, path string) error {
	if raw, ok := schema.get("type"); ok {
		if err := c.fillTypes(n, raw, path); err != nil {
			return err
		}
	}
	for _, m := range schema {
		key, raw := m.Key, m.Value
		at := path + "/" + escapePointer(key)
		switch {
		case key == "type":
			// handled above: enum filtering below needs the types
		case annotationKeywords[key]:
		case unsupportedKeywords[key]:
			return c.errorf(path, "keyword %q is not supported", key)
		case key == "enum":
			values, ok := raw.([]any)
			if !ok {
				return c.errorf(at, "enum must be an array")
			}
			if len(values) == 0 {
				return c.errorf(at, "enum must not be empty")
			}
			if err := c.addEnum(n, values); err != nil {
				return c.enumError(at, err)
			}
		case key == "const":
			if err := c.addEnum(n, []any{raw}); err != nil {
				return c.enumError(at, err)
			}
		case key == "allOf" || key == "anyOf" || key == "oneOf":
			list, err := c.compileList(raw, at)
			if err != nil {
				return err
			}
			switch key {
			case "allOf":
				n.allOf = list
			case "anyOf":
				n.anyOf = list
			default:
				n.oneOf = list
			}
		case key == "$ref":
			ref, ok := raw.(string)
			if !ok {
				return c.errorf(at, "$ref must be a string")
			}
			n.ref = ref
			c.pending = append(c.pending, n)
		case key == "$defs" || key == "definitions":
			defs, ok := raw.(object)
			if !ok {
				return c.errorf(at, "%s must be an object", key)
			}
			// Compile eagerly so that errors in unused definitions are
			// reported too, as a validator would.
			for _, d := range defs {
				if _, err := c.compile(d.Value, at+"/"+escapePointer(d.Key)); err != nil {
					return err
				}
			}
		case key == "properties":
			props, ok := raw.(object)
			if !ok {
				return c.errorf(at, "properties must be an object")
			}
			for _, p := range props {
				child, err := c.compile(p.Value, at+"/"+escapePointer(p.Key))
				if err != nil {
					return err
				}
				n.properties = append(n.properties, property{name: p.Key, schema: child})
			}
		case key == "required":
			list, ok := raw.([]any)
			if !ok {
				return c.errorf(at, "required must be an array of strings")
			}
			for _, item := range list {
				name, ok := item.(string)
				if !ok {
					return c.errorf(at, "required must be an array of strings")
				}
				if !slices.Contains(n.required, name) {
					n.required = append(n.required, name)
				}
			}
		case key == "additionalProperties":
			child, err := c.compile(raw, at)
			if err != nil {
				return err
			}
			n.additional = child
		case key == "items":
			if list, ok := raw.([]any); ok { // draft-07 tuple form
				items, err := c.compileList(list, at)
				if err != nil {
					return err
				}
				n.prefixItems = items
				continue
			}
			child, err := c.compile(raw, at)
			if err != nil {
				return err
			}
			n.items = child
		case key == "prefixItems":
			items, err := c.compileList(raw, at)
			if err != nil {
				return err
			}
			n.prefixItems = items
		case n.countField(key) != nil:
			count, err := nonNegativeInt(raw)
			if err != nil {
				return c.errorf(at, "%s %v", key, err)
			}
			*n.countField(key) = count
		case key == "uniqueItems":
			flag, ok := raw.(bool)
			if !ok {
				return c.errorf(at, "uniqueItems must be a boolean")
			}
			n.uniqueItems = flag
		case key == "pattern":
			text, ok := raw.(string)
			if !ok {
				return c.errorf(at, "pattern must be a string")
			}
			re, err := compilePattern(text)
			if err != nil {
				return c.errorf(at, "%v", err)
			}
			n.pattern = re
		case key == "format":
			text, ok := raw.(string)
			if !ok {
				return c.errorf(at, "format must be a string")
			}
			n.format = text
		case key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
			key == "exclusiveMaximum" || key == "multipleOf":
			if err := c.fillNumberKeyword(n, key, raw, at); err != nil {
				return err
			}
		default:
			// Unknown keywords are annotations in JSON Schema; ignoring
			// them is what a validator does too.
		}
	}
	return c.checkBounds(n, path)
}

// countField returns the node's field of a count keyword (minItems,
// maxLength, ...), nil for other keywords.
func (n *node) countField(key string) *int {
	switch key {
	case "minItems":
		return &n.minItems
	case "maxItems":
		return &n.maxItems
	case "minLength":
		return &n.minLength
	case "maxLength":
		return &n.maxLength
	case "minProperties":
		return &n.minProperties
	case "maxProperties":
		return &n.maxProperties
	}
	return nil
}

func (c *compiler) fillTypes(n *node, raw any, path string) error {
	var names []any
	switch t := raw.(type) {
	case string:
		names = []any{t}
	case []any:
		if len(t) == 0 {
			return c.errorf(path+"/type", "type must not be an empty array")
		}
		names = t
	default:
		return c.errorf(path+"/type", "type must be a string or an array of strings")
	}
	for _, item := range names {
		name, _ := item.(string)
		found := false
		for _, tn := range typeNames {
			if tn.name == name {
				n.types |= tn.bit
				found = true
			}
		}
		if !found {
			return c.errorf(path+"/type", "unknown type %v", item)
		}
	}
	return nil
}

func (c *compiler) fillNumberKeyword(n *node, key string, raw any, at string) error {
	// draft-04 boolean exclusiveMinimum/exclusiveMaximum
	if flag, ok := raw.(bool); ok && (key == "exclusiveMinimum" || key == "exclusiveMaximum") {
		if key == "exclusiveMinimum" {
			n.exclusiveMinimum = flag
		} else {
			n.exclusiveMaximum = flag
		}
		return nil
	}
	number, ok := raw.(json.Number)
	if !ok {
		return c.errorf(at, "%s must be a number", key)
	}
	value, ok := ratOf(number)
	if !ok {
		return c.errorf(at, "%s is not a usable number", key)
	}
	switch key {
	case "minimum":
		if n.minimum == nil || value.Cmp(n.minimum) > 0 {
			n.minimum = value
		}
	case "maximum":
		if n.maximum == nil || value.Cmp(n.maximum) < 0 {
			n.maximum = value
		}
	case "exclusiveMinimum":
		if n.minimum == nil || value.Cmp(n.minimum) >= 0 {
			n.minimum, n.exclusiveMinimum = value, true
		}
	case "exclusiveMaximum":
		if n.maximum == nil || value.Cmp(n.maximum) <= 0 {
			n.maximum, n.exclusiveMaximum = value, true
		}
	case "multipleOf":
		if value.Sign() <= 0 {
			return c.errorf(at, "multipleOf must be greater than 0")
		}
		n.multipleOf = value
	}
	return nil
}

// checkBounds drops the enum values the sibling keywords reject, so that
// generation can pick any survivor. Empty ranges (minimum above maximum,
// minItems above maxItems, no enum value left) are not errors: such a
// subschema is valid JSON Schema that no instance satisfies, which matters
// only if the whole schema is unsatisfiable (Compile reports that).
func (c *compiler) checkBounds(n *node, path string) error {
	if n.hasEnum {
		kept := n.enum[:0:0]
		for _, value := range n.enum {
			if n.matches(value, c.b) {
				kept = append(kept, value)
			}
		}
		n.setEnum(kept, c.b)
	}
	return c.b.err
}

func (c *compiler) addEnum(n *node, values []any) error {
	c.enums += len(values)
	if c.limits.MaxEnum >= 0 && c.enums > c.limits.MaxEnum {
		return &BudgetError{Limit: LimitEnum, Max: c.limits.MaxEnum, Got: c.enums}
	}
	keys := make(map[string]struct{}, len(values))
	for _, v := range values {
		keys[string(canonKey(nil, v, c.b))] = struct{}{}
	}
	if c.b.err != nil {
		return c.b.err
	}
	if !n.hasEnum {
		n.enum, n.enumKeys, n.hasEnum = slices.Clone(values), keys, true
		return nil
	}
	// enum and const together: keep the intersection
	kept := n.enum[:0:0]
	for _, have := range n.enum {
		if _, ok := keys[string(canonKey(nil, have, c.b))]; ok {
			kept = append(kept, have)
		}
	}
	if len(kept) == 0 {
		return errors.New("enum and const have no value in common")
	}
	n.setEnum(kept, c.b)
	return nil
}

// enumError places an enum error at its location; a budget's error stays
// what it is, so that callers see which limit stopped the work.
func (c *compiler) enumError(at string, err error) error {
	if c.b.err != nil || errors.Is(err, ErrBudget) {
		return err
	}
	return c.errorf(at, "%v", err)
}

// setEnum replaces n's enum values and their keys.
func (n *node) setEnum(values []any, b *budget) {
	n.enum = values
	n.enumKeys = make(map[string]struct{}, len(values))
	for _, v := range values {
		n.enumKeys[string(canonKey(nil, v, b))] = struct{}{}
	}
}

func (c *compiler) compileList(raw any, at string) ([]*node, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, c.errorf(at, "must be a non-empty array of schemas")
	}
	nodes := make([]*node, 0, len(list))
	for i, item := range list {
		child, err := c.compile(item, fmt.Sprintf("%s/%d", at, i))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, child)
	}
	return nodes, nil
}

// resolve finds the node a local $ref ("#", "#/$defs/x", any JSON pointer
// into the document) points at.
func (c *compiler) resolve(ref, from string) (*node, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, c.errorf(from, "$ref %q: only references inside the schema (#...) are supported", ref)
	}
	pointer := strings.TrimPrefix(ref, "#")
	value := c.root
	path := "#"
	if pointer != "" {
		if !strings.HasPrefix(pointer, "/") {
			return nil, c.errorf(from, "$ref %q: anchors are not supported", ref)
		}
		for _, raw := range strings.Split(pointer[1:], "/") {
			token := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
			path += "/" + escapePointer(token)
			switch container := value.(type) {
			case object:
				next, ok := container.get(token)
				if !ok {
					return nil, c.errorf(from, "$ref %q does not resolve", ref)
				}
				value = next
			case []any:
				index := -1
				fmt.Sscan(token, &index)
				if index < 0 || index >= len(container) {
					return nil, c.errorf(from, "$ref %q does not resolve", ref)
				}
				value = container[index]
			default:
				return nil, c.errorf(from, "$ref %q does not resolve", ref)
			}
		}
	}
	return c.compile(value, path)
}

func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

func nonNegativeInt(raw any) (int, error) {
	number, ok := raw.(json.Number)
	if !ok {
		return 0, errors.New("must be a non-negative integer")
	}
	r, ok := ratOf(number)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<20 {
		return 0, errors.New("must be a non-negative integer (at most 1048576)")
	}
	return int(r.Num().Int64()), nil
}

// ratOf parses a JSON number exactly.
func ratOf(number json.Number) (*big.Rat, bool) {
	r, ok := new(big.Rat).SetString(string(number))
	return r, ok
}
