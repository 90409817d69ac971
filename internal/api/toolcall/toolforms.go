package toolcall

import (
	"encoding/json"
	"strings"
)

// ResponsesCallID is a Responses function call's call_id: vLLM writes
// call_<uuid>; the mock reuses the digits of the planned chat id.
func ResponsesCallID(c PlannedCall) string {
	return "call_" + strings.TrimPrefix(c.ID, "chatcmpl-tool-")
}

// ChatTool is a function tool in its chat completions form, what the
// Responses and Anthropic tools translate to.
type ChatTool struct {
	Type     string          `json:"type"`
	Function ChatToolFuncDef `json:"function"`
}

type ChatToolFuncDef struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// NamedChoiceJSON is the chat form of a tool_choice naming one function.
func NamedChoiceJSON(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
	return b
}
