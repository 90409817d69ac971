package schemagen

import (
	"encoding/json"
	"math/big"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// matches reports whether value satisfies n. The generator uses it to pick
// enum values, to keep oneOf exclusive and to check its own output before
// returning it; tests check the output with an independent validator. A
// reference not yet resolved (during compilation) counts as satisfied.
func (n *node) matches(value any, b *budget) bool {
	return n.matchDepth(value, 0, b)
}

const maxMatchDepth = 256

func (n *node) matchDepth(value any, depth int, b *budget) bool {
	if depth > maxMatchDepth || !b.spend(1) {
		return false
	}
	if n.alwaysFalse {
		return false
	}
	kind := jsonType(value)
	if n.types != 0 {
		bit := typeBit(kind)
		if n.types&bit == 0 && !(kind == "integer" && n.types&typeNumber != 0) {
			return false
		}
	}
	if n.hasEnum {
		if _, found := n.enumKeys[string(canonKey(nil, value, b))]; !found {
			return false
		}
	}
	switch v := value.(type) {
	case string:
		if !n.matchString(v) {
			return false
		}
	case json.Number:
		if !n.matchNumber(v, b) {
			return false
		}
	case []any:
		if !n.matchArray(v, depth, b) {
			return false
		}
	case object:
		if !n.matchObject(v, depth, b) {
			return false
		}
	}
	for _, sub := range n.allOf {
		if !sub.matchDepth(value, depth+1, b) {
			return false
		}
	}
	if n.refNode != nil && !n.refNode.matchDepth(value, depth+1, b) {
		return false
	}
	if len(n.anyOf) > 0 {
		found := false
		for _, sub := range n.anyOf {
			if sub.matchDepth(value, depth+1, b) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(n.oneOf) > 0 {
		count := 0
		for _, sub := range n.oneOf {
			if sub.matchDepth(value, depth+1, b) {
				count++
			}
		}
		if count != 1 {
			return false
		}
	}
	return true
}

func typeBit(kind string) typeSet {
	for _, tn := range typeNames {
		if tn.name == kind {
			return tn.bit
		}
	}
	return 0
}

func (n *node) matchString(s string) bool {
	length := utf8.RuneCountInString(s)
	if length < n.minLength || (n.maxLength >= 0 && length > n.maxLength) {
		return false
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return false
	}
	return formatValid(n.format, s)
}

func (n *node) matchNumber(number json.Number, b *budget) bool {
	if n.minimum == nil && n.maximum == nil && n.multipleOf == nil {
		return true
	}
	// An exact rational costs time with the exponent's size: charge it.
	if d, ok := decimalOf(number); ok && d.exp.IsInt64() {
		if e := d.exp.Int64(); !b.spend(1 + int(min(max(e, -e), 1<<40)/4)) {
			return false
		}
	} else if !ok || !b.spend(1<<40) {
		return false
	}
	value, ok := ratOf(number)
	if !ok {
		return false
	}
	if n.minimum != nil {
		cmp := value.Cmp(n.minimum)
		if cmp < 0 || (cmp == 0 && n.exclusiveMinimum) {
			return false
		}
	}
	if n.maximum != nil {
		cmp := value.Cmp(n.maximum)
		if cmp > 0 || (cmp == 0 && n.exclusiveMaximum) {
			return false
		}
	}
	if n.multipleOf != nil {
		quotient := new(big.Rat).Quo(value, n.multipleOf)
		if !quotient.IsInt() {
			return false
		}
	}
	return true
}

func (n *node) matchArray(items []any, depth int, b *budget) bool {
	if len(items) < n.minItems || (n.maxItems >= 0 && len(items) > n.maxItems) {
		return false
	}
	for i, item := range items {
		var schema *node
		if i < len(n.prefixItems) {
			schema = n.prefixItems[i]
		} else {
			schema = n.items
		}
		if schema != nil && !schema.matchDepth(item, depth+1, b) {
			return false
		}
	}
	if n.uniqueItems {
		seen := make(map[string]struct{}, len(items))
		for _, item := range items {
			key := string(canonKey(nil, item, b))
			if _, dup := seen[key]; dup {
				return false
			}
			seen[key] = struct{}{}
		}
	}
	return true
}

func (n *node) matchObject(obj object, depth int, b *budget) bool {
	if len(obj) < n.minProperties || (n.maxProperties >= 0 && len(obj) > n.maxProperties) {
		return false
	}
	for _, name := range n.required {
		if _, ok := obj.get(name); !ok {
			return false
		}
	}
	for _, m := range obj {
		schema := n.propertySchema(m.Key)
		if schema != nil && !schema.matchDepth(m.Value, depth+1, b) {
			return false
		}
	}
	return true
}

// propertySchema is the schema n applies to property name: its entry in
// properties, else additionalProperties (nil = unconstrained).
func (n *node) propertySchema(name string) *node {
	for _, p := range n.properties {
		if p.name == name {
			return p.schema
		}
	}
	return n.additional
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

var hostnamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// formatValid checks the formats the generator produces; other formats are
// annotations and always pass.
func formatValid(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05Z07:00", s)
		return err == nil
	case "uuid":
		return uuidPattern.MatchString(s)
	case "email":
		at := strings.LastIndexByte(s, '@')
		return at > 0 && at < len(s)-1 && !strings.ContainsAny(s, " \t\n")
	case "hostname":
		return len(s) <= 253 && hostnamePattern.MatchString(s)
	case "ipv4":
		ip := net.ParseIP(s)
		return ip != nil && ip.To4() != nil && !strings.Contains(s, ":")
	case "ipv6":
		ip := net.ParseIP(s)
		return ip != nil && strings.Contains(s, ":")
	case "uri", "url", "iri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	}
	return true
}
