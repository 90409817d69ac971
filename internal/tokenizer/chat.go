package tokenizer

import "strings"

// Message is one chat message as the template sees it.
// Content is the message's text: the string content, or the text parts
// joined with "\n", or "" for null content. ToolCalls are an assistant
// message's tool_calls. reasoning and reasoning_content of input messages
// are not rendered, so they have no field here.
type Message struct {
	Role      string
	Content   string
	ToolCalls []ToolCall
}

// ToolCall is one entry of an assistant message's tool_calls: the
// function's name and its arguments JSON text as sent.
type ToolCall struct {
	Name      string
	Arguments string
}

const (
	tmplIMStart = "<|im_start|>"
	tmplIMEnd   = "<|im_end|>\n"
	toolsHeader = "<|im_start|>system\n# Tools\n"
	genPrompt   = "<|im_start|>assistant\n"

	toolCallOpen  = "<tool_call>\n{\"name\": \""
	toolCallMid   = "\", \"arguments\": "
	toolCallClose = "}\n</tool_call>"
)

// RenderChat renders msgs with the built-in ChatML template.
//
// toolsJSON is the request's tools JSON as received, already compacted
// (whitespace removed, key order kept); nil or empty means no tools. When
// present it is rendered first as a system turn "# Tools\n" + toolsJSON.
// Each message renders as <|im_start|>role\ntext<|im_end|>\n. With
// continueFinalMessage the last message is rendered without its
// "<|im_end|>\n" and no generation prompt is added (addGenerationPrompt is
// then ignored; the HTTP layer rejects both being true); otherwise
// addGenerationPrompt appends "<|im_start|>assistant\n". An assistant
// message's tool calls follow its text the way Hermes/Qwen templates
// write them: "\n<tool_call>\n{\"name\": NAME, \"arguments\": ARGS}\n</tool_call>"
// each (no leading newline when the text is empty).
func RenderChat(msgs []Message, toolsJSON []byte, addGenerationPrompt, continueFinalMessage bool) string {
	n := len(genPrompt)
	if len(toolsJSON) > 0 {
		n += len(toolsHeader) + len(toolsJSON) + len(tmplIMEnd)
	}
	for i := range msgs {
		n += len(tmplIMStart) + len(msgs[i].Role) + 1 + len(msgs[i].Content) + len(tmplIMEnd)
		for _, c := range msgs[i].ToolCalls {
			n += len(toolCallOpen) + len(c.Name) + len(toolCallMid) + len(c.Arguments) + len(toolCallClose) + 1
		}
	}
	var b strings.Builder
	b.Grow(n)
	if len(toolsJSON) > 0 {
		b.WriteString(toolsHeader)
		b.Write(toolsJSON)
		b.WriteString(tmplIMEnd)
	}
	for i := range msgs {
		b.WriteString(tmplIMStart)
		b.WriteString(msgs[i].Role)
		b.WriteByte('\n')
		b.WriteString(msgs[i].Content)
		for j, c := range msgs[i].ToolCalls {
			if j > 0 || msgs[i].Content != "" {
				b.WriteByte('\n')
			}
			b.WriteString(toolCallOpen)
			b.WriteString(c.Name)
			b.WriteString(toolCallMid)
			b.WriteString(c.Arguments)
			b.WriteString(toolCallClose)
		}
		if continueFinalMessage && i == len(msgs)-1 {
			break
		}
		b.WriteString(tmplIMEnd)
	}
	if addGenerationPrompt && !continueFinalMessage {
		b.WriteString(genPrompt)
	}
	return b.String()
}
