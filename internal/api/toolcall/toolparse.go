// Package toolcall is what the surfaces share about tools and constrained
// output: tool definitions and tool_choice (ParseTools), the planned calls of
// a choice in each parser's format (PlanChoice, ChoiceCalls: deltas, final
// result, finish reason), tool calls of input messages, and structured
// outputs (ParseStructured, response_format). It knows no HTTP server.
package toolcall

import (
	"encoding/json"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/schemagen"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// toolChoiceKind is the request's tool_choice.
type toolChoiceKind uint8

const (
	toolChoiceNone     toolChoiceKind = iota // "none", or no tools
	toolChoiceAuto                           // "auto" (the default when tools are given)
	toolChoiceRequired                       // "required"
	toolChoiceNamed                          // {"type":"function","function":{"name":...}}
)

// toolDef is one function of the request's tools.
type toolDef struct {
	name   string
	params *schemagen.Schema // the parameters schema; {} when absent
}

// ToolSpec is what a chat request says about tool calls.
type ToolSpec struct {
	tools    []toolDef
	choice   toolChoiceKind
	named    int  // index into tools for toolChoiceNamed
	parallel bool // parallel_tool_calls (default true)
	conv     Conversation
}

// SetConversation records where the request's messages stand in an agent
// loop, which the "auto" decision reads.
func (s *ToolSpec) SetConversation(msgs []tokenizer.Message) { s.conv = ReadConversation(msgs) }

// emptyParams is the schema of a function without parameters: vLLM
// generates "{}" for those.
var emptyParams = mustCompile(`{"type":"object","properties":{},"additionalProperties":false}`)

func mustCompile(schema string) *schemagen.Schema {
	s, err := schemagen.Compile([]byte(schema))
	if err != nil {
		panic(err)
	}
	return s
}

// ParseTools reads tools, tool_choice and parallel_tool_calls with the
// checks of vLLM's ChatCompletionRequest (check_tool_usage and the named
// tool lookup), and the server's --enable-auto-tool-choice rule. nil means
// the output is not a tool call.
func ParseTools(sc SchemaContext, o wire.Object, autoToolChoice bool, parser string) (*ToolSpec, *wire.APIError) {
	spec := &ToolSpec{parallel: o.Bool("parallel_tool_calls", true)}
	toolsRaw, hasTools := o.Array("tools")
	choiceRaw, hasChoice := o.Raw("tool_choice")
	if e := o.Failed(); e != nil {
		return nil, e
	}
	var e *wire.APIError
	if spec.tools, e = parseToolDefs(sc, o, toolsRaw); e != nil {
		return nil, e
	}

	// tool_choice, as vLLM's check_tool_usage reads it.
	switch {
	case !hasChoice && len(spec.tools) > 0:
		spec.choice = toolChoiceAuto
	case !hasChoice:
		return nil, nil
	case string(choiceRaw) == `"none"`:
		return nil, nil
	case !hasTools:
		return nil, wire.ErrInvalid("tool_choice", "When using `tool_choice`, `tools` must be set.")
	case string(choiceRaw) == `"auto"`:
		spec.choice = toolChoiceAuto
	case string(choiceRaw) == `"required"`:
		if len(spec.tools) == 0 {
			return nil, wire.ErrInvalid("tool_choice", "When using `tool_choice`, `tools` must be set.")
		}
		spec.choice = toolChoiceRequired
	case choiceRaw[0] == '{':
		named, e := namedToolChoice(o, choiceRaw, spec.tools)
		if e != nil {
			return nil, e
		}
		spec.choice, spec.named = toolChoiceNamed, named
	default:
		return nil, wire.ErrInvalid("tool_choice", "Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.",
			strings.Trim(string(choiceRaw), `"`))
	}
	if spec.choice == toolChoiceAuto {
		if !autoToolChoice || parser == "" {
			return nil, wire.ErrInvalid("tool_choice", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
		}
		if len(spec.tools) == 0 {
			return nil, nil // "auto" over an empty list: nothing to call
		}
	}
	return spec, nil
}

// parseToolDefs reads the function definitions of tools, compiling their
// parameter schemas.
func parseToolDefs(sc SchemaContext, o wire.Object, toolsRaw []json.RawMessage) ([]toolDef, *wire.APIError) {
	var tools []toolDef
	for i, raw := range toolsRaw {
		path := "tools[" + wire.Itoa(i) + "]"
		tool, ok := o.Elem(raw, path, "object")
		if !ok {
			return nil, o.Failed()
		}
		if typ, ok := tool.String("type"); ok && typ != "function" {
			return nil, wire.ErrInvalid(path+".type", "Only tools of type 'function' are supported, got '%s'", typ)
		}
		fn, ok := tool.Object("function")
		if !ok {
			if e := o.Failed(); e != nil {
				return nil, e
			}
			return nil, wire.ErrFieldRequired(path + ".function")
		}
		name, ok := fn.String("name")
		if e := o.Failed(); e != nil {
			return nil, e
		}
		if !ok {
			return nil, wire.ErrFieldRequired(path + ".function.name")
		}
		def := toolDef{name: name, params: emptyParams}
		if params, ok := fn.Kind("parameters", "object"); ok && string(wire.CompactJSON(params)) != "{}" {
			compiled, e := sc.compile(params, path+".function.parameters")
			if e != nil {
				return nil, e
			}
			def.params = compiled
		}
		if e := o.Failed(); e != nil {
			return nil, e
		}
		tools = append(tools, def)
	}
	return tools, nil
}

// correctToolChoice ends vLLM's messages about a malformed named choice.
const correctToolChoice = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"

func namedToolChoice(o wire.Object, raw json.RawMessage, tools []toolDef) (int, *wire.APIError) {
	choice, ok := o.Elem(raw, "tool_choice", "object")
	if !ok {
		return 0, o.Failed()
	}
	fnRaw, ok := choice.Raw("function")
	if !ok || fnRaw[0] != '{' {
		return 0, wire.ErrInvalid("tool_choice", "Invalid value for `function`: `%s` in `tool_choice`! %s", string(fnRaw), correctToolChoice)
	}
	fn, _ := choice.Elem(fnRaw, "tool_choice.function", "object")
	if !fn.Has("name") {
		return 0, wire.ErrInvalid("tool_choice", "Expected field `name` in `function` in `tool_choice`! %s", correctToolChoice)
	}
	nameRaw, _ := fn.Raw("name")
	var name string
	if json.Unmarshal(nameRaw, &name) != nil || name == "" {
		return 0, wire.ErrInvalid("tool_choice", "Invalid `name` in `function`: `%s` in `tool_choice`! %s", string(nameRaw), correctToolChoice)
	}
	for i, tool := range tools {
		if tool.name == name {
			return i, nil
		}
	}
	return 0, wire.ErrInvalid("tool_choice", "The tool specified in `tool_choice` does not match any of the specified `tools`")
}
