// Package schemagen turns a JSON Schema into valid instances: the
// arguments of a mock tool call, the content of a structured output.
//
// Compile checks a schema and returns a *Schema or an error wrapping
// ErrInvalidSchema (callers answer 400). Generate(seed) returns compact
// JSON (no spaces, keys in the schema's property order, non-ASCII kept as
// UTF-8) that validates against the schema, the same bytes for the same
// seed. AnyObject(seed) is the "some JSON object" of json_object mode.
// CompileRegex/Generate produce strings that fully match a regular
// expression (guided_regex).
//
// Supported keywords: type (one or a list), enum, const, properties,
// required, additionalProperties (false, true or a schema), minProperties,
// maxProperties, items (a schema, or draft-07's tuple array), prefixItems,
// minItems, maxItems, uniqueItems, minLength, maxLength, pattern (RE2
// syntax), format (date-time, date, time, uuid, email, hostname, uri,
// uri-reference, ipv4, ipv6, duration, json-pointer, regex; other formats
// are annotations), minimum, maximum, exclusiveMinimum, exclusiveMaximum
// (numbers, or draft-04 booleans), multipleOf, allOf, anyOf, oneOf, and
// $ref to any JSON pointer inside the document ($defs, definitions,
// recursion included). Annotations (title, description, default, ...) and
// unknown keywords are ignored, as validators do. Keywords whose
// constraints the generator cannot promise to meet — not, if/then/else,
// contains, patternProperties, propertyNames, dependentSchemas,
// dependentRequired, unevaluated*, $dynamicRef, remote $refs — are
// refused by Compile rather than risk an invalid instance.
//
// How it works: generation walks a conjunction of schema nodes (allOf and
// $ref expand into it; an anyOf/oneOf picks a seeded branch that joins it,
// so a branch combines with its siblings), and builds the value for the
// first type every node allows. Numbers are exact rationals on the grid of
// multipleOf (hundredths for plain decimals). Optional properties and array
// lengths shrink with depth so recursive schemas terminate; a work budget
// bounds backtracking. Every instance is checked against the schema by the
// package's own validator before it is returned; oneOf branches are made
// exclusive that way. Compile also finds one instance up front: a schema
// with none is reported as unsatisfiable, and Generate falls back to that
// instance if every seeded attempt fails.
package schemagen
