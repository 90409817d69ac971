package api

import (
	"encoding/json"
	"net/http"
	"strings"
)

// messagesSurface is POST /v1/messages, the Anthropic Messages API as vLLM
// serves it (vllm/entrypoints/anthropic): the request is translated into a
// chat completions request and runs through the chat path; the output is
// written as Anthropic content blocks or stream events. Errors use
// Anthropic's shape (writeAnthropicError).
type messagesSurface struct{}

// messagesRequest holds what the Anthropic rendering needs.
type messagesRequest struct {
	promptTokens int
}

var messagesFields = setOf("model", "messages", "max_tokens", "metadata", "output_config",
	"stop_sequences", "stream", "system", "temperature", "tool_choice", "tools", "top_k", "top_p",
	"kv_transfer_params", "chat_template_kwargs", "thinking", "service_tier", "container",
	"mcp_servers", "context_management")

// chatToolCall and chatMessageIn are the chat completions message forms the
// Anthropic blocks translate to (field order as vLLM's translation builds
// them, since templates may iterate over them).
type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatMessageIn struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID *string         `json:"tool_call_id,omitempty"`
}

func (messagesSurface) parse(s *Server, o object, r *http.Request) (*genRequest, *apiError) {
	s.logUnknownFields(o, r, messagesFields)
	if !o.has("model") {
		return nil, errFieldRequired("model")
	}
	if !o.has("max_tokens") {
		return nil, errFieldRequired("max_tokens")
	}
	maxTokens := o.Int("max_tokens")
	if e := o.failed(); e != nil {
		return nil, e
	}
	if maxTokens.I <= 0 {
		return nil, errInvalid("max_tokens", "max_tokens must be positive, got %s", maxTokens)
	}
	if name, _ := o.String("model"); name == "" && o.failed() == nil {
		return nil, errInvalid("model", "Model is required")
	}
	in, e := messagesInput(o, maxTokens)
	if e != nil {
		return nil, e
	}
	g, e := s.buildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	g.messages = &messagesRequest{promptTokens: len(g.prompts[0].ids)}
	return g, nil
}

// messagesInput reads a Messages body into the typed generation input.
// The conversation and the tools are translated into their chat forms, as
// vLLM translates them: the chat template renders those, and the tool
// checks read them (the input's body); the scalar fields go straight in.
func messagesInput(o object, maxTokens num) (*genInput, *apiError) {
	chat := map[string]json.RawMessage{}
	if v, ok := o.raw("chat_template_kwargs"); ok {
		chat["chat_template_kwargs"] = v
	}
	msgs, e := anthropicMessages(o)
	if e != nil {
		return nil, e
	}
	chat["messages"] = msgs
	if e := anthropicTools(o, chat); e != nil {
		return nil, e
	}
	in := &genInput{chat: true, body: object{m: chat, err: new(*apiError)}, addGen: true, includeUsage: true}
	in.model, in.hasModel = o.String("model")
	in.maxTokens = maxTokens
	in.sampling = samplingInput{temperature: o.Float("temperature"), topP: o.Float("top_p"), topK: o.Int("top_k")}
	if _, ok := o.Kind("stop_sequences", "array"); ok {
		in.stop, in.stopSet = parseStopAt(o, "stop_sequences")
	}
	// vLLM asks its chat stream for usage on every chunk: message_start
	// reports the prompt tokens, message_delta the totals.
	in.stream = o.Bool("stream", false)
	in.hasStreamOpts, in.continuous = in.stream, in.stream
	in.pd = parsePD(o)
	if e := o.failed(); e != nil {
		return nil, e
	}
	in.msgs, in.badPart = parseMessages(in.body)
	if a, ok := in.body.Kind("tools", "array"); ok {
		in.toolsJSON = compactJSON(a)
	}
	return in, in.body.failed()
}

// anthropicMessages translates system and messages into chat messages as
// vLLM does: one system message from the system field and any system-role
// messages, text blocks joined, tool_use blocks as tool_calls, a user's
// tool_result blocks as tool messages.
func anthropicMessages(o object) (json.RawMessage, *apiError) {
	var out []chatMessageIn
	var system strings.Builder
	if raw, ok := o.raw("system"); ok {
		if e := appendSystemText(&system, raw, "system"); e != nil {
			return nil, e
		}
	}
	elems, ok := o.Array("messages")
	if !ok {
		if e := o.failed(); e != nil {
			return nil, e
		}
		return nil, errFieldRequired("messages")
	}
	if len(elems) == 0 {
		return nil, errInvalid("messages", "messages must contain at least one message")
	}
	for i, raw := range elems {
		path := "messages[" + itoa(i) + "]"
		m, ok := o.elem(raw, path, "object")
		if !ok {
			return nil, o.failed()
		}
		role, _ := m.String("role")
		if e := o.failed(); e != nil {
			return nil, e
		}
		switch role {
		case "user", "assistant":
		case "system":
			c, _ := m.raw("content")
			if e := appendSystemText(&system, c, path+".content"); e != nil {
				return nil, e
			}
			continue
		case "":
			return nil, errFieldRequired(path + ".role")
		default:
			return nil, errInvalid(path+".role", "Input should be 'user', 'assistant' or 'system', got '%s'", role)
		}
		content, ok := m.raw("content")
		if !ok {
			return nil, errFieldRequired(path + ".content")
		}
		if content[0] == '"' {
			out = append(out, chatMessageIn{Role: role, Content: content})
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
		out = append([]chatMessageIn{{Role: "system", Content: sys}}, out...)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errInvalid("messages", "%v", err)
	}
	return b, nil
}

// appendSystemText adds a system prompt given as a string or text blocks.
func appendSystemText(b *strings.Builder, raw json.RawMessage, path string) *apiError {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		s, e := parseString(raw, path)
		b.WriteString(s)
		return e
	}
	blocks, e := parseArray(raw, path)
	if e != nil {
		return errFieldType(path, "string or array")
	}
	for i, bl := range blocks {
		var blk struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(bl, &blk) != nil {
			return errFieldType(path+"["+itoa(i)+"]", "object")
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
}

// translateBlocks turns one message's content blocks into a chat message
// and the tool messages its tool_result blocks become (they precede it).
func translateBlocks(role string, content json.RawMessage, path string) (chatMessageIn, []chatMessageIn, *apiError) {
	msg := chatMessageIn{Role: role}
	elems, e := parseArray(content, path)
	if e != nil {
		return msg, nil, errFieldType(path, "string or array")
	}
	var texts []string
	var toolMsgs []chatMessageIn
	for i, raw := range elems {
		bpath := path + "[" + itoa(i) + "]"
		var blk anthropicBlock
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &blk) != nil {
			return msg, nil, errFieldType(bpath, "object")
		}
		switch blk.Type {
		case "text":
			if blk.Text != "" {
				texts = append(texts, blk.Text)
			}
		case "thinking", "redacted_thinking":
			// Earlier reasoning echoed back: accepted, not rendered.
		case "tool_use":
			args := []byte("{}")
			if len(blk.Input) > 0 && !isNull(blk.Input) {
				if blk.Input[0] != '{' {
					return msg, nil, errFieldType(bpath+".input", "object")
				}
				args = compactJSON(blk.Input)
			}
			msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: blk.ID, Type: "function",
				Function: chatFunction{Name: blk.Name, Arguments: string(args)}})
		case "tool_result":
			text, e := toolResultText(blk.Content, bpath+".content")
			if e != nil {
				return msg, nil, e
			}
			if role == "user" {
				id := blk.ToolUseID
				c, _ := json.Marshal(text)
				toolMsgs = append(toolMsgs, chatMessageIn{Role: "tool", ToolCallID: &id, Content: c})
			} else {
				texts = append(texts, "Tool result: "+text)
			}
		case "image", "document":
			return msg, nil, errInvalid(bpath+".type", "Only text content parts are supported by mocker-server.")
		case "":
			return msg, nil, errFieldRequired(bpath + ".type")
		default:
			return msg, nil, errInvalid(bpath+".type", "Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'", blk.Type)
		}
	}
	if len(texts) > 0 {
		msg.Content, _ = json.Marshal(strings.Join(texts, "\n"))
	}
	return msg, toolMsgs, nil
}

// toolResultText is a tool_result's content: a string, or its text blocks
// joined by newlines.
func toolResultText(raw json.RawMessage, path string) (string, *apiError) {
	if len(raw) == 0 || isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		return parseString(raw, path)
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", errFieldType(path, "string or array")
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
// tools and no tool_choice the choice is auto.
func anthropicTools(o object, chat map[string]json.RawMessage) *apiError {
	if raw, ok := o.Kind("tools", "array"); ok {
		var tools []struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(raw, &tools) != nil {
			return errFieldType("tools", "array of objects")
		}
		out := make([]chatTool, len(tools))
		for i, t := range tools {
			path := "tools[" + itoa(i) + "]"
			if t.Name == "" {
				return errFieldRequired(path + ".name")
			}
			if len(t.InputSchema) == 0 || t.InputSchema[0] != '{' {
				return errFieldType(path+".input_schema", "object")
			}
			out[i] = chatTool{Type: "function", Function: chatToolFuncDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}}
		}
		b, _ := json.Marshal(out)
		chat["tools"] = b
		chat["tool_choice"] = json.RawMessage(`"auto"`)
	}
	tc, ok := o.Object("tool_choice")
	if !ok {
		return o.failed()
	}
	typ, _ := tc.String("type")
	name, hasName := tc.String("name")
	if e := o.failed(); e != nil {
		return e
	}
	switch typ {
	case "auto", "none":
		chat["tool_choice"], _ = json.Marshal(typ)
	case "any":
		chat["tool_choice"] = json.RawMessage(`"required"`)
	case "tool":
		if !hasName || name == "" {
			return errInvalid("tool_choice.name", "tool_choice.name is required when type is 'tool'")
		}
		chat["tool_choice"] = namedChoiceJSON(name)
	default:
		return errInvalid("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none', got '%s'", typ)
	}
	return nil
}
