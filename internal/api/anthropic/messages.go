// Package anthropic is Anthropic's Messages API (POST /v1/messages and
// /v1/messages/count_tokens): its body reader into the pipeline's typed
// input, its response body and stream encoder, and its error shape.
package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// MessagesSurface is POST /v1/messages, the Anthropic Messages API as vLLM
// serves it (vllm/entrypoints/anthropic): the request is translated into a
// chat completions request and runs through the chat path; the output is
// written as Anthropic content blocks or stream events. Errors use
// Anthropic's shape (WriteAnthropicError).
type MessagesSurface struct{}

// messagesRequest holds what the Anthropic rendering needs.
type messagesRequest struct {
	promptTokens int
}

var messagesFields = wire.SetOf("model", "messages", "max_tokens", "metadata", "output_config",
	"stop_sequences", "stream", "system", "temperature", "tool_choice", "tools", "top_k", "top_p",
	"kv_transfer_params", "chat_template", "chat_template_kwargs", "thinking", "service_tier", "container",
	"mcp_servers", "context_management", "thread")

func (MessagesSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	s.LogUnknownFields(o, r, messagesFields)
	if raw, ok := o.Raw("thread"); ok && !wire.IsNull(raw) {
		return nil, errThreadUnsupported()
	}
	if !o.Has("model") {
		return nil, wire.ErrFieldRequired("model")
	}
	if !o.Has("max_tokens") {
		return nil, wire.ErrFieldRequired("max_tokens")
	}
	maxTokens := o.Int("max_tokens")
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if maxTokens.I <= 0 {
		return nil, wire.ErrInvalid("max_tokens", "max_tokens must be positive, got %s", maxTokens)
	}
	if name, _ := o.String("model"); name == "" && o.Failed() == nil {
		return nil, wire.ErrInvalid("model", "Model is required")
	}
	in, e := messagesInput(o, maxTokens)
	if e != nil {
		return nil, e
	}
	g, e := s.BuildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	g.Ext = &messagesRequest{promptTokens: len(g.Prompts[0].IDs)}
	return g, nil
}

// messagesInput reads a Messages body into the typed generation input.
// The conversation and the tools are translated into their chat forms, as
// vLLM translates them: the chat template renders those, and the tool
// checks read them (the input's body); the scalar fields go straight in.
func messagesInput(o wire.Object, maxTokens wire.Num) (*pipeline.GenInput, *wire.APIError) {
	chat := map[string]json.RawMessage{}
	// chat_template goes to the chat renderer with the rest: it is refused
	// there unless --trust-request-chat-template, never silently ignored.
	for _, k := range []string{"chat_template", "chat_template_kwargs"} {
		if v, ok := o.Raw(k); ok {
			chat[k] = v
		}
	}
	msgs, e := anthropicMessages(o)
	if e != nil {
		return nil, e
	}
	chat["messages"] = msgs
	if e := anthropicTools(o, chat); e != nil {
		return nil, e
	}
	in := &pipeline.GenInput{Chat: true, Body: wire.Object{M: chat, Err: new(*wire.APIError)}, AddGen: true, IncludeUsage: true}
	in.Model, in.HasModel = o.String("model")
	in.MaxTokens = maxTokens
	in.Sampling = pipeline.SamplingInput{Temperature: o.Float("temperature"), TopP: o.Float("top_p"), TopK: o.Int("top_k")}
	if _, ok := o.Kind("stop_sequences", "array"); ok {
		in.Stop, in.StopSet = input.ParseStopAt(o, "stop_sequences")
	}
	// vLLM asks its chat stream for usage on every chunk: message_start
	// reports the prompt tokens, message_delta the totals.
	in.Stream = o.Bool("stream", false)
	in.HasStreamOpts, in.Continuous = in.Stream, in.Stream
	in.PD = disagg.ParsePD(o)
	if e := o.Failed(); e != nil {
		return nil, e
	}
	in.Msgs, in.Media, in.BadPart = input.ParseMessages(in.Body)
	if a, ok := in.Body.Kind("tools", "array"); ok {
		in.ToolsJSON = wire.CompactJSON(a)
	}
	return in, in.Body.Failed()
}

// anthropicMessages translates system and messages into chat messages as
// vLLM does: one system message from the system field and any system-role
// messages, text blocks joined, tool_use blocks as tool_calls, a user's
// tool_result blocks as tool messages.
func anthropicMessages(o wire.Object) (json.RawMessage, *wire.APIError) {
	var out []input.ChatMessageIn
	var system strings.Builder
	if raw, ok := o.Raw("system"); ok {
		if e := appendSystemText(&system, raw, "system"); e != nil {
			return nil, e
		}
	}
	elems, ok := o.Array("messages")
	if !ok {
		if e := o.Failed(); e != nil {
			return nil, e
		}
		return nil, wire.ErrFieldRequired("messages")
	}
	if len(elems) == 0 {
		return nil, wire.ErrInvalid("messages", "messages must contain at least one message")
	}
	for i, raw := range elems {
		path := "messages[" + wire.Itoa(i) + "]"
		m, ok := o.Elem(raw, path, "object")
		if !ok {
			return nil, o.Failed()
		}
		role, _ := m.String("role")
		if e := o.Failed(); e != nil {
			return nil, e
		}
		switch role {
		case "user", "assistant":
		case "system":
			c, _ := m.Raw("content")
			if e := appendSystemText(&system, c, path+".content"); e != nil {
				return nil, e
			}
			continue
		case "":
			return nil, wire.ErrFieldRequired(path + ".role")
		default:
			return nil, wire.ErrInvalid(path+".role", "Input should be 'user', 'assistant' or 'system', got '%s'", role)
		}
		content, ok := m.Raw("content")
		if !ok {
			return nil, wire.ErrFieldRequired(path + ".content")
		}
		if content[0] == '"' {
			out = append(out, input.ChatMessageIn{Role: role, Content: content})
			continue
		}
		msg, tools, e := translateBlocks(role, content, path+".content")
		if e != nil {
			return nil, e
		}
		out = append(out, tools...)
		if msg.Content != nil || msg.ToolCalls != nil || role != "user" {
			out = append(out, msg)
		}
	}
	if system.Len() > 0 {
		sys, _ := json.Marshal(system.String())
		out = append([]input.ChatMessageIn{{Role: "system", Content: sys}}, out...)
	}
	// The contents are valid JSON (the body's, or json.Marshal's): no
	// second validation of their megabytes of image data.
	return input.MarshalMessages(out), nil
}

// appendSystemText adds a system prompt given as a string or text blocks.
func appendSystemText(b *strings.Builder, raw json.RawMessage, path string) *wire.APIError {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		s, e := wire.ParseString(raw, path)
		b.WriteString(s)
		return e
	}
	blocks, e := wire.ParseArray(raw, path)
	if e != nil {
		return wire.ErrFieldType(path, "string or array")
	}
	for i, bl := range blocks {
		var blk struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(bl, &blk) != nil {
			return wire.ErrFieldType(path+"["+wire.Itoa(i)+"]", "object")
		}
		if blk.Type == "text" {
			b.WriteString(blk.Text)
		}
	}
	return nil
}

// anthropicBlock is one content block of a request message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Thinking  *string         `json:"thinking"`
	Source    *imageSource    `json:"source"`
}

// imageSource is an image block's source: base64 data with its media
// type, or a URL.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// chatPart is a chat content part of the translation (text or image_url).
type chatPart struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

// translateBlocks turns one message's content blocks into a chat message
// and the tool messages its tool_result blocks become (they precede it).
func translateBlocks(role string, content json.RawMessage, path string) (input.ChatMessageIn, []input.ChatMessageIn, *wire.APIError) {
	msg := input.ChatMessageIn{Role: role}
	elems, e := wire.ParseArray(content, path)
	if e != nil {
		return msg, nil, wire.ErrFieldType(path, "string or array")
	}
	var texts []string
	var parts []chatPart // text and images in order, when there is an image
	var toolMsgs []input.ChatMessageIn
	for i, raw := range elems {
		bpath := path + "[" + wire.Itoa(i) + "]"
		var blk anthropicBlock
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &blk) != nil {
			return msg, nil, wire.ErrFieldType(bpath, "object")
		}
		switch blk.Type {
		case "text":
			if blk.Text != "" {
				texts = append(texts, blk.Text)
				t := blk.Text
				parts = append(parts, chatPart{Type: "text", Text: &t})
			}
		case "thinking", "redacted_thinking":
			// Earlier reasoning echoed back: accepted, not rendered.
		case "tool_use":
			args := []byte("{}")
			if len(blk.Input) > 0 && !wire.IsNull(blk.Input) {
				if blk.Input[0] != '{' {
					return msg, nil, wire.ErrFieldType(bpath+".input", "object")
				}
				args = wire.CompactJSON(blk.Input)
			}
			msg.ToolCalls = append(msg.ToolCalls, input.ChatToolCall{ID: blk.ID, Type: "function",
				Function: input.ChatFunction{Name: blk.Name, Arguments: string(args)}})
		case "tool_result":
			text, e := toolResultText(blk.Content, bpath+".content")
			if e != nil {
				return msg, nil, e
			}
			if role == "user" {
				id := blk.ToolUseID
				c, _ := json.Marshal(text)
				toolMsgs = append(toolMsgs, input.ChatMessageIn{Role: "tool", ToolCallID: &id, Content: c})
			} else {
				texts = append(texts, "Tool result: "+text)
			}
		case "image":
			// vLLM's translation: an image_url part with the base64 data
			// as a data URL, or the source's URL.
			src := blk.Source
			switch {
			case src == nil:
				return msg, nil, wire.ErrFieldRequired(bpath + ".source")
			case src.Type == "base64":
				if src.MediaType == "" || src.Data == "" {
					return msg, nil, wire.ErrFieldRequired(bpath + ".source.data")
				}
				parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: "data:" + src.MediaType + ";base64," + src.Data}})
			case src.Type == "url" && src.URL != "":
				parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: src.URL}})
			default:
				return msg, nil, wire.ErrInvalid(bpath+".source.type", "Image source type must be 'base64' or 'url', got '%s'", src.Type)
			}
		case "document":
			return msg, nil, wire.ErrInvalid(bpath+".type", "document blocks are not supported by mocker-server.")
		case "":
			return msg, nil, wire.ErrFieldRequired(bpath + ".type")
		default:
			return msg, nil, wire.ErrInvalid(bpath+".type", "Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'", blk.Type)
		}
	}
	switch {
	case len(parts) > len(texts):
		msg.Content, _ = json.Marshal(parts)
	case len(texts) > 0:
		msg.Content, _ = json.Marshal(strings.Join(texts, "\n"))
	}
	return msg, toolMsgs, nil
}

// toolResultText is a tool_result's content: a string, or its text blocks
// joined by newlines.
func toolResultText(raw json.RawMessage, path string) (string, *wire.APIError) {
	if len(raw) == 0 || wire.IsNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		return wire.ParseString(raw, path)
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", wire.ErrFieldType(path, "string or array")
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// anthropicTools translates tools (input_schema → function parameters) and
// tool_choice (any → required, tool → a named function) as vLLM does; with
// tools and no tool_choice the choice is auto. tool_choice's
// disable_parallel_tool_use becomes parallel_tool_calls false.
func anthropicTools(o wire.Object, chat map[string]json.RawMessage) *wire.APIError {
	if raw, ok := o.Kind("tools", "array"); ok {
		var tools []struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(raw, &tools) != nil {
			return wire.ErrFieldType("tools", "array of objects")
		}
		out := make([]toolcall.ChatTool, len(tools))
		for i, t := range tools {
			path := "tools[" + wire.Itoa(i) + "]"
			if t.Name == "" {
				return wire.ErrFieldRequired(path + ".name")
			}
			if len(t.InputSchema) == 0 || t.InputSchema[0] != '{' {
				return wire.ErrFieldType(path+".input_schema", "object")
			}
			out[i] = toolcall.ChatTool{Type: "function", Function: toolcall.ChatToolFuncDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}}
		}
		b, _ := json.Marshal(out)
		chat["tools"] = b
		chat["tool_choice"] = json.RawMessage(`"auto"`)
	}
	tc, ok := o.Object("tool_choice")
	if !ok {
		return o.Failed()
	}
	typ, _ := tc.String("type")
	name, hasName := tc.String("name")
	// Anthropic's disable_parallel_tool_use is the chat request's
	// parallel_tool_calls false: at most one call per answer.
	if tc.Bool("disable_parallel_tool_use", false) {
		chat["parallel_tool_calls"] = json.RawMessage("false")
	}
	if e := o.Failed(); e != nil {
		return e
	}
	switch typ {
	case "auto", "none":
		chat["tool_choice"], _ = json.Marshal(typ)
	case "any":
		chat["tool_choice"] = json.RawMessage(`"required"`)
	case "tool":
		if !hasName || name == "" {
			return wire.ErrInvalid("tool_choice.name", "tool_choice.name is required when type is 'tool'")
		}
		chat["tool_choice"] = toolcall.NamedChoiceJSON(name)
	default:
		return wire.ErrInvalid("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none', got '%s'", typ)
	}
	return nil
}

// messagesReq is the Messages request a generation request carries.
func messagesReq(g *pipeline.GenRequest) *messagesRequest { return g.Ext.(*messagesRequest) }
