package tokenizer

import "strings"

// Message is one chat message as the template sees it.
// Content is the message's text: the string content, or the text parts
// joined with "\n", or "" for null content. tool_calls, reasoning and
// reasoning_content of input messages are not rendered, so they have no
// field here.
type Message struct {
	Role    string
	Content string
}

const (
	tmplIMStart = "<|im_start|>"
	tmplIMEnd   = "<|im_end|>\n"
	toolsHeader = "<|im_start|>system\n# Tools\n"
	genPrompt   = "<|im_start|>assistant\n"
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
// addGenerationPrompt appends "<|im_start|>assistant\n".
func RenderChat(msgs []Message, toolsJSON []byte, addGenerationPrompt, continueFinalMessage bool) string {
	n := len(genPrompt)
	if len(toolsJSON) > 0 {
		n += len(toolsHeader) + len(toolsJSON) + len(tmplIMEnd)
	}
	for i := range msgs {
		n += len(tmplIMStart) + len(msgs[i].Role) + 1 + len(msgs[i].Content) + len(tmplIMEnd)
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
