package api

import (
	"encoding/json"
	"strings"

	"github.com/mocker-server/mocker-server/internal/schemagen"
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

// toolSpec is what a chat request says about tool calls.
type toolSpec struct {
	tools    []toolDef
	choice   toolChoiceKind
	named    int  // index into tools for toolChoiceNamed
	parallel bool // parallel_tool_calls (default true)
}

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

// parseTools reads tools, tool_choice and parallel_tool_calls with the
// checks of vLLM's ChatCompletionRequest (check_tool_usage and the named
// tool lookup), and the server's --enable-auto-tool-choice rule. nil means
// the output is not a tool call.
func (s *Server) parseTools(o object) (*toolSpec, *apiError) {
	spec := &toolSpec{parallel: o.Bool("parallel_tool_calls", true)}
	toolsRaw, hasTools := o.Array("tools")
	choiceRaw, hasChoice := o.raw("tool_choice")
	if e := o.failed(); e != nil {
		return nil, e
	}
	var e *apiError
	if spec.tools, e = parseToolDefs(o, toolsRaw); e != nil {
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
		return nil, errInvalid("tool_choice", "When using `tool_choice`, `tools` must be set.")
	case string(choiceRaw) == `"auto"`:
		spec.choice = toolChoiceAuto
	case string(choiceRaw) == `"required"`:
		if len(spec.tools) == 0 {
			return nil, errInvalid("tool_choice", "When using `tool_choice`, `tools` must be set.")
		}
		spec.choice = toolChoiceRequired
	case choiceRaw[0] == '{':
		named, e := namedToolChoice(o, choiceRaw, spec.tools)
		if e != nil {
			return nil, e
		}
		spec.choice, spec.named = toolChoiceNamed, named
	default:
		return nil, errInvalid("tool_choice", "Invalid value for `tool_choice`: %s! Only named tools, \"none\", \"auto\" or \"required\" are supported.",
			strings.Trim(string(choiceRaw), `"`))
	}
	if spec.choice == toolChoiceAuto {
		if !s.opts.Tools.AutoToolChoice || s.opts.Tools.Parser == "" {
			return nil, errInvalid("tool_choice", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
		}
		if len(spec.tools) == 0 {
			return nil, nil // "auto" over an empty list: nothing to call
		}
	}
	return spec, nil
}

// parseToolDefs reads the function definitions of tools, compiling their
// parameter schemas.
func parseToolDefs(o object, toolsRaw []json.RawMessage) ([]toolDef, *apiError) {
	var tools []toolDef
	for i, raw := range toolsRaw {
		path := "tools[" + itoa(i) + "]"
		tool, ok := o.elem(raw, path, "object")
		if !ok {
			return nil, o.failed()
		}
		if typ, ok := tool.String("type"); ok && typ != "function" {
			return nil, errInvalid(path+".type", "Only tools of type 'function' are supported, got '%s'", typ)
		}
		fn, ok := tool.Object("function")
		if !ok {
			if e := o.failed(); e != nil {
				return nil, e
			}
			return nil, errFieldRequired(path + ".function")
		}
		name, ok := fn.String("name")
		if e := o.failed(); e != nil {
			return nil, e
		}
		if !ok {
			return nil, errFieldRequired(path + ".function.name")
		}
		def := toolDef{name: name, params: emptyParams}
		if params, ok := fn.Kind("parameters", "object"); ok && string(compactJSON(params)) != "{}" {
			compiled, err := schemagen.Compile(params)
			if err != nil {
				return nil, errInvalid(path+".function.parameters", "%s", err.Error())
			}
			def.params = compiled
		}
		if e := o.failed(); e != nil {
			return nil, e
		}
		tools = append(tools, def)
	}
	return tools, nil
}

// correctToolChoice ends vLLM's messages about a malformed named choice.
const correctToolChoice = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`"

func namedToolChoice(o object, raw json.RawMessage, tools []toolDef) (int, *apiError) {
	choice, ok := o.elem(raw, "tool_choice", "object")
	if !ok {
		return 0, o.failed()
	}
	fnRaw, ok := choice.raw("function")
	if !ok || fnRaw[0] != '{' {
		return 0, errInvalid("tool_choice", "Invalid value for `function`: `%s` in `tool_choice`! %s", string(fnRaw), correctToolChoice)
	}
	fn, _ := choice.elem(fnRaw, "tool_choice.function", "object")
	if !fn.has("name") {
		return 0, errInvalid("tool_choice", "Expected field `name` in `function` in `tool_choice`! %s", correctToolChoice)
	}
	nameRaw, _ := fn.raw("name")
	var name string
	if json.Unmarshal(nameRaw, &name) != nil || name == "" {
		return 0, errInvalid("tool_choice", "Invalid `name` in `function`: `%s` in `tool_choice`! %s", string(nameRaw), correctToolChoice)
	}
	for i, tool := range tools {
		if tool.name == name {
			return i, nil
		}
	}
	return 0, errInvalid("tool_choice", "The tool specified in `tool_choice` does not match any of the specified `tools`")
}
