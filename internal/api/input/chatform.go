package input

import "encoding/json"

// ChatToolCall and ChatMessageIn are the chat completions message forms the
// Anthropic blocks and the Responses input items translate to (field order as vLLM's translation builds
// them, since templates may iterate over them).
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

type ChatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type ChatMessageIn struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID *string         `json:"tool_call_id,omitempty"`
}
