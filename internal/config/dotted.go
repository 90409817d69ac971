package config

import (
	"bytes"
	"encoding/json"
	"strings"
)

// dottedArgs merges vLLM's one-key-at-a-time form of JSON flags into one
// JSON object per flag, as vLLM's FlexibleArgumentParser does:
//
//	--compilation-config.mode 3 --compilation-config.pass_config.fuse true
//	  = --compilation-config '{"mode": 3, "pass_config": {"fuse": true}}'
//
// A value is JSON when it parses as JSON, else a human-readable integer
// (80g), else text. A key ending in "+" appends the comma-separated values
// to a list.
type dottedArgs struct {
	order   []string // flag names ("--compilation-config") in first-use order
	objects map[string]map[string]any
}

func newDottedArgs() *dottedArgs {
	return &dottedArgs{objects: map[string]map[string]any{}}
}

// take consumes args[*i] (and its value) when it is a dotted flag, and
// advances *i past what it consumed.
func (d *dottedArgs) take(args []string, i *int) bool {
	arg := args[*i]
	if !strings.HasPrefix(arg, "--") {
		return false
	}
	name, value, hasValue := strings.Cut(arg, "=")
	if !strings.Contains(name, ".") {
		return false
	}
	if !hasValue {
		if *i+1 >= len(args) {
			return false // pflag reports the flag without a value
		}
		*i++
		value = args[*i]
	}
	var parsed any
	if path, isAppend := strings.CutSuffix(name, "+"); isAppend {
		name = path
		var items []any
		for _, item := range strings.Split(value, ",") {
			items = append(items, item)
		}
		parsed = items
	} else {
		parsed = dottedValue(value)
	}
	keys := strings.Split(name, ".")
	flag := "--" + canonicalFlagName(strings.TrimPrefix(keys[0], "--"))
	obj, ok := d.objects[flag]
	if !ok {
		obj = map[string]any{}
		d.objects[flag] = obj
		d.order = append(d.order, flag)
	}
	for _, k := range keys[1 : len(keys)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	last := keys[len(keys)-1]
	if list, ok := parsed.([]any); ok {
		if prev, ok := obj[last].([]any); ok {
			parsed = append(prev, list...)
		}
	}
	obj[last] = parsed
	return true
}

// flags returns one --flag=<JSON object> argument per merged flag.
func (d *dottedArgs) flags() []string {
	var out []string
	for _, flag := range d.order {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(d.objects[flag]) // maps of JSON values always encode
		out = append(out, flag+"="+strings.TrimSuffix(b.String(), "\n"))
	}
	return out
}

// dottedValue converts one dotted value as vLLM does: JSON, else a
// human-readable integer, else the text itself.
func dottedValue(text string) any {
	if _, err := parsePythonJSON(text); err == nil {
		dec := json.NewDecoder(strings.NewReader(replacePythonJSONLiterals(text)))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			return v
		}
	}
	if n, ok := parseVLLMHumanInt(text); ok {
		return n
	}
	return text
}
