package toolcall

import (
	"bytes"
	"encoding/json"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// ParseToolCalls reads an input message's tool_calls (an assistant turn
// that called tools): each needs function.name; function.arguments is the
// JSON text of the arguments (an object is accepted too).
func ParseToolCalls(o, m wire.Object, path string) []tokenizer.ToolCall {
	elems, ok := m.Array("tool_calls")
	if !ok {
		return nil
	}
	calls := make([]tokenizer.ToolCall, 0, len(elems))
	for j, raw := range elems {
		cpath := path + ".tool_calls[" + wire.Itoa(j) + "]"
		call, ok := o.Elem(raw, cpath, "object")
		if !ok {
			return nil
		}
		fn, ok := call.Object("function")
		if !ok {
			if o.Failed() == nil {
				o.Fail(wire.ErrFieldRequired(cpath + ".function"))
			}
			return nil
		}
		name, ok := fn.String("name")
		if !ok {
			if o.Failed() == nil {
				o.Fail(wire.ErrFieldRequired(cpath + ".function.name"))
			}
			return nil
		}
		args := "{}"
		if rawArgs, ok := fn.Raw("arguments"); ok {
			switch rawArgs[0] {
			case '"':
				if text, _ := fn.String("arguments"); text != "" {
					args = text
				}
			case '{':
				args = string(wire.CompactJSON(rawArgs))
			default:
				o.Fail(wire.ErrFieldType(cpath+".function.arguments", "string"))
				return nil
			}
		}
		calls = append(calls, tokenizer.ToolCall{Name: name, Arguments: args})
	}
	return calls
}

// ArgumentsAsObjects rewrites the messages JSON for a real chat template
// the way vLLM does before rendering: the arguments of an assistant
// message's tool_calls become JSON objects ({} when empty), because
// templates print them with tojson. Everything else keeps its bytes and
// key order.
func ArgumentsAsObjects(messages json.RawMessage) (json.RawMessage, *wire.APIError) {
	if !bytes.Contains(messages, []byte(`"tool_calls"`)) {
		return messages, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(messages, &list); err != nil {
		return messages, nil // the type checks have reported this already
	}
	changed := false
	for i, raw := range list {
		var msg map[string]json.RawMessage
		if json.Unmarshal(raw, &msg) != nil {
			continue
		}
		callsRaw, ok := msg["tool_calls"]
		if !ok {
			continue
		}
		var calls []json.RawMessage
		if json.Unmarshal(callsRaw, &calls) != nil {
			continue
		}
		newCalls := callsRaw
		for j, callRaw := range calls {
			var call map[string]json.RawMessage
			if json.Unmarshal(callRaw, &call) != nil {
				continue
			}
			var fn map[string]json.RawMessage
			if json.Unmarshal(call["function"], &fn) != nil {
				continue
			}
			args, ok := fn["arguments"]
			if ok && (len(args) == 0 || args[0] != '"') {
				continue // already an object
			}
			replacement := []byte("{}")
			var text string
			if ok {
				_ = json.Unmarshal(args, &text)
			}
			if text != "" {
				if !json.Valid([]byte(text)) {
					return nil, wire.ErrInvalid("messages", "messages[%d].tool_calls[%d].function.arguments is not valid JSON", i, j)
				}
				replacement = wire.CompactJSON([]byte(text))
			}
			newFn := replaceArguments(call["function"], args, ok, replacement)
			newCall := bytes.Replace(callRaw, call["function"], newFn, 1)
			newCalls = bytes.Replace(newCalls, callRaw, newCall, 1)
		}
		list[i] = bytes.Replace(raw, callsRaw, newCalls, 1)
		changed = true
	}
	if !changed {
		return messages, nil
	}
	out := []byte{'['}
	for i, raw := range list {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
	}
	return append(out, ']'), nil
}

// replaceArguments puts replacement where the function object's arguments
// value is, or adds "arguments" when it is missing.
func replaceArguments(fn, args json.RawMessage, present bool, replacement []byte) []byte {
	if present {
		// The value follows its key; replacing the first occurrence of
		// `"arguments"` + value keeps any identical text elsewhere.
		at := bytes.Index(fn, []byte(`"arguments"`))
		if at >= 0 {
			if k := bytes.Index(fn[at:], args); k >= 0 {
				start := at + k
				return append(append(append([]byte{}, fn[:start]...), replacement...), fn[start+len(args):]...)
			}
		}
		return fn
	}
	closing := bytes.LastIndexByte(fn, '}')
	sep := []byte(`,"arguments":`)
	if len(bytes.TrimSpace(fn[1:closing])) == 0 {
		sep = []byte(`"arguments":`)
	}
	return append(append(append(append([]byte{}, fn[:closing]...), sep...), replacement...), fn[closing:]...)
}
