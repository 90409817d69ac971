package toolcall

import (
	"encoding/json"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/schemagen"
)

// structuredKind is the constraint of a structured output.
type structuredKind uint8

const (
	structuredJSONSchema structuredKind = iota // an instance of a JSON Schema
	structuredJSONObject                       // any JSON object
	structuredRegex                            // a full match of a regular expression
	structuredChoice                           // one of a list of strings
)

// StructuredSpec is a request's output constraint: response_format,
// structured_outputs or the legacy guided_* fields.
type StructuredSpec struct {
	kind    structuredKind
	schema  *schemagen.Schema
	regex   *schemagen.Regex
	choices []string
}

// text returns the constrained output for a seed.
func (sp *StructuredSpec) text(seed uint64) string {
	switch sp.kind {
	case structuredJSONSchema:
		return string(schemagen.Spaced(sp.schema.Generate(seed)))
	case structuredJSONObject:
		return string(schemagen.Spaced(schemagen.AnyObject(seed)))
	case structuredRegex:
		return sp.regex.Generate(seed)
	}
	return sp.choices[seed%uint64(len(sp.choices))]
}

// ParseStructured reads the output constraint of a request. Sources, first
// found wins: structured_outputs (vLLM's current field), the legacy
// guided_json / guided_regex / guided_choice, then response_format. nil
// means free text.
func ParseStructured(sc SchemaContext, o wire.Object) (*StructuredSpec, *wire.APIError) {
	if so, ok := o.Object("structured_outputs"); ok {
		return structuredFrom(sc, so, "structured_outputs.", "json", "regex", "choice", "grammar", "json_object", "structural_tag")
	}
	if e := o.Failed(); e != nil {
		return nil, e
	}
	for _, key := range []string{"guided_json", "guided_regex", "guided_choice", "guided_grammar"} {
		if o.Has(key) {
			return structuredFrom(sc, o, "", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "", "")
		}
	}
	return parseResponseFormat(sc, o)
}

// structuredFrom reads one constraint from the keys of a structured
// outputs object (or the guided_* fields of the request: same meanings,
// other names). Keys given as "" do not exist in that form.
func structuredFrom(sc SchemaContext, o wire.Object, prefix, jsonKey, regexKey, choiceKey, grammarKey, objectKey, tagKey string) (*StructuredSpec, *wire.APIError) {
	var set []string
	for _, key := range []string{jsonKey, regexKey, choiceKey, grammarKey, tagKey} {
		if key != "" && o.Has(key) {
			set = append(set, key)
		}
	}
	if objectKey != "" && o.Bool(objectKey, false) {
		set = append(set, objectKey)
	}
	if e := o.Failed(); e != nil {
		return nil, e
	}
	switch {
	case len(set) > 1 && prefix == "":
		return nil, wire.ErrInvalid(set[1], "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').")
	case len(set) > 1:
		return nil, wire.ErrInvalid(prefix+set[1], "You can only use one kind of structured outputs constraint but multiple are specified: %s", strings.Join(set, ", "))
	case len(set) == 0:
		return nil, nil
	}
	key := set[0]
	param := prefix + key
	switch key {
	case jsonKey:
		raw, _ := o.Raw(key)
		if raw[0] == '"' { // the schema as a JSON string
			var text string
			_ = json.Unmarshal(raw, &text)
			raw = json.RawMessage(text)
		}
		return compileSchemaSpec(sc, raw, param)
	case regexKey:
		pattern, ok := o.String(key)
		if !ok {
			return nil, o.Failed()
		}
		re, err := schemagen.CompileRegex(pattern)
		if err != nil {
			return nil, wire.ErrInvalid(param, "%s", err.Error())
		}
		return &StructuredSpec{kind: structuredRegex, regex: re}, nil
	case choiceKey:
		items, ok := o.Array(key)
		if !ok {
			return nil, o.Failed()
		}
		if len(items) == 0 {
			return nil, wire.ErrInvalid(param, "%s must contain at least one choice", param)
		}
		spec := &StructuredSpec{kind: structuredChoice}
		for i, item := range items {
			choice, e := wire.ParseString(item, param+"["+wire.Itoa(i)+"]")
			if e != nil {
				return nil, e
			}
			spec.choices = append(spec.choices, choice)
		}
		return spec, nil
	case objectKey:
		return &StructuredSpec{kind: structuredJSONObject}, nil
	}
	return nil, wire.ErrInvalid(param, "%s is not supported by mocker-server (only JSON schema, JSON object, regex and choice constraints)", param)
}

func compileSchemaSpec(sc SchemaContext, raw json.RawMessage, param string) (*StructuredSpec, *wire.APIError) {
	schema, e := sc.compile(raw, param)
	if e != nil {
		return nil, e
	}
	return &StructuredSpec{kind: structuredJSONSchema, schema: schema}, nil
}

// responseFormatTypes are the response_format.type values vLLM accepts.
var responseFormatTypes = map[string]bool{
	"text": true, "json_object": true, "json_schema": true, "structural_tag": true,
}

// parseResponseFormat reads response_format like vLLM's request model: an
// object whose "type" is one of responseFormatTypes; json_schema carries
// the schema under json_schema.schema.
func parseResponseFormat(sc SchemaContext, o wire.Object) (*StructuredSpec, *wire.APIError) {
	format, ok := o.Object("response_format")
	if !ok {
		return nil, o.Failed()
	}
	typ, ok := format.String("type")
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if !ok {
		return nil, wire.ErrFieldRequired("response_format.type")
	}
	if !responseFormatTypes[typ] {
		return nil, wire.ErrInvalid("response_format.type",
			"response_format.type must be 'text', 'json_object', 'json_schema' or 'structural_tag', got '%s'", typ)
	}
	switch typ {
	case "json_object":
		return &StructuredSpec{kind: structuredJSONObject}, nil
	case "json_schema":
		js, ok := format.Object("json_schema")
		if !ok {
			if e := o.Failed(); e != nil {
				return nil, e
			}
			return nil, wire.ErrFieldRequired("response_format.json_schema")
		}
		raw, ok := js.Kind("schema", "object")
		if !ok {
			if e := o.Failed(); e != nil {
				return nil, e
			}
			return nil, wire.ErrFieldRequired("response_format.json_schema.schema")
		}
		return compileSchemaSpec(sc, raw, "response_format.json_schema.schema")
	case "structural_tag":
		return nil, wire.ErrInvalid("response_format.type", "response_format type 'structural_tag' is not supported by mocker-server")
	}
	return nil, nil
}

// sglangConstraintKeys are the constraint fields of SGLang's
// sampling_params, in the order SGLang's scheduler picks a grammar from
// them.
var sglangConstraintKeys = []string{"json_schema", "regex", "ebnf", "structural_tag"}

// ParseSGLangStructured reads the output constraint of SGLang's
// sampling_params (HTTP /generate, or the gRPC constraint oneof in the
// same names): json_schema (a schema as a JSON string, or the schema
// object) and regex are applied; ebnf and structural_tag are refused,
// as the mock has no grammar engine. nil means free text.
func ParseSGLangStructured(sc SchemaContext, sp wire.Object) (*StructuredSpec, *wire.APIError) {
	var set []string
	for _, key := range sglangConstraintKeys {
		if sp.Has(key) {
			set = append(set, key)
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	if len(set) > 1 && set[1] != "structural_tag" {
		// SGLang's SamplingParams.verify, in its words.
		return nil, wire.ErrInvalid(set[1], "Only one of regex, json_schema, or ebnf can be set.")
	}
	switch key := set[0]; key {
	case "json_schema":
		raw, _ := sp.Raw(key)
		if raw[0] == '"' { // SGLang's form: the schema as a JSON string
			var text string
			_ = json.Unmarshal(raw, &text)
			raw = json.RawMessage(text)
		}
		return compileSchemaSpec(sc, raw, key)
	case "regex":
		pattern, ok := sp.String(key)
		if !ok {
			return nil, sp.Failed()
		}
		re, err := schemagen.CompileRegex(pattern)
		if err != nil {
			return nil, wire.ErrInvalid(key, "regex: %s", err.Error())
		}
		return &StructuredSpec{kind: structuredRegex, regex: re}, nil
	default:
		return nil, wire.ErrInvalid(key, "%s is not supported by mocker-server (only json_schema and regex constraints)", key)
	}
}
