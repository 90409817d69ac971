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

// MarshalMessages is json.Marshal(msgs) without encoding/json's passes
// over each Content: encoding/json compacts and re-validates a RawMessage
// a byte at a time, twice, which for a content holding megabytes of base64
// (an image the Anthropic or Responses surface translated) dominated the
// request. A Content here is valid JSON already — taken from a validated
// body or made by json.Marshal — so it is copied as it is (its whitespace
// and HTML characters as they are: the same JSON value).
func MarshalMessages(msgs []ChatMessageIn) json.RawMessage {
	if msgs == nil {
		return json.RawMessage("null") // as json.Marshal
	}
	n := 2
	for _, m := range msgs {
		n += len(m.Content) + 64
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendJSON(b, m.Role)
		if len(m.Content) > 0 {
			b = append(b, `,"content":`...)
			b = append(b, m.Content...)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":`...)
			b = appendJSON(b, m.ToolCalls)
		}
		if m.ToolCallID != nil {
			b = append(b, `,"tool_call_id":`...)
			b = appendJSON(b, *m.ToolCallID)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSON appends v as json.Marshal encodes it (v holds no RawMessage).
func appendJSON(b []byte, v any) []byte {
	j, _ := json.Marshal(v)
	return append(b, j...)
}
