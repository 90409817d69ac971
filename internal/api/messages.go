package api

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/zeebo/xxh3"
)

// messagesSurface is POST /v1/messages, the Anthropic Messages API as vLLM
// serves it (vllm/entrypoints/anthropic): the request is translated into a
// chat completions request and runs through the chat path; the output is
// written as Anthropic content blocks or stream events. Errors use
// Anthropic's shape (anthropicErrors).
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
	chat := map[string]json.RawMessage{}
	for _, k := range []string{"model", "temperature", "top_p", "top_k", "stream", "kv_transfer_params", "chat_template_kwargs"} {
		if v, ok := o.raw(k); ok {
			chat[k] = v
		}
	}
	if name, _ := o.String("model"); name == "" && o.failed() == nil {
		return nil, errInvalid("model", "Model is required")
	}
	chat["max_tokens"] = json.RawMessage(maxTokens.Raw)
	if v, ok := o.Kind("stop_sequences", "array"); ok {
		chat["stop"] = v
	}
	msgs, e := anthropicMessages(o)
	if e != nil {
		return nil, e
	}
	chat["messages"] = msgs
	if e := anthropicTools(o, chat); e != nil {
		return nil, e
	}
	if o.Bool("stream", false) {
		// vLLM asks its chat stream for usage on every chunk: message_start
		// reports the prompt tokens, message_delta the totals.
		chat["stream_options"] = json.RawMessage(`{"include_usage":true,"continuous_usage_stats":true}`)
	}
	if e := o.failed(); e != nil {
		return nil, e
	}
	g, e := s.parseGenerate(object{m: chat, err: new(*apiError)}, r, true)
	if e != nil {
		return nil, e
	}
	g.messages = &messagesRequest{promptTokens: len(g.prompts[0].ids)}
	return g, nil
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

// anthropicStopReason maps a finish reason as vLLM's translation does.
func anthropicStopReason(reason engine.FinishReason) string {
	switch reason {
	case engine.FinishLength:
		return "max_tokens"
	case finishToolCalls:
		return "tool_use"
	}
	return "end_turn"
}

// anthropicSignature is the signature of a thinking block: vLLM sends a
// random UUID; the mock derives one from the request id so that a fixed
// request id gives a fixed transcript.
func anthropicSignature(baseID string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], xxh3.HashString(baseID))
	binary.BigEndian.PutUint64(b[8:], xxh3.HashString("signature:"+baseID))
	return hex.EncodeToString(b[:])
}

func (messagesSurface) respond(j *job, w http.ResponseWriter) {
	g := j.g
	ch := &j.ch[0]
	reasoning, content := ch.plan.Texts(ch.n)
	finish, _ := ch.reasons()
	var calls []toolCallJSON
	if ch.calls != nil {
		res := ch.calls.result(ch)
		calls, finish, content = res.toolCalls, res.finish, ""
		if res.content != nil {
			content = *res.content
		}
	}
	b := make([]byte, 0, 256+len(reasoning)+len(content))
	b = append(b, `{"id":"chatcmpl-`...)
	b = appendStringContent(b, g.baseID)
	b = append(b, `","type":"message","role":"assistant","content":[`...)
	n := 0
	if j.s.cfg.Reasoning != nil && reasoning != "" {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendString(b, reasoning)
		b = append(b, `,"signature":"`...)
		b = append(b, anthropicSignature(g.baseID)...)
		b = append(b, `"}`...)
		n++
	}
	if content != "" {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, content)
		b = append(b, '}')
		n++
	}
	for _, c := range calls {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, c.ID)
		b = append(b, `,"name":`...)
		b = appendString(b, c.Name)
		b = append(b, `,"input":`...)
		b = appendToolInput(b, c.Arguments)
		b = append(b, '}')
		n++
	}
	b = append(b, `],"model":`...)
	b = appendString(b, g.model)
	b = append(b, `,"stop_reason":"`...)
	b = append(b, anthropicStopReason(finish)...)
	b = append(b, `","usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.messages.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(j.completion), 10)
	b = append(b, "}}"...)
	writeJSON(w, http.StatusOK, b)
}

func (messagesSurface) encoder(j *job) eventEncoder { return &messagesEncoder{j: j} }

// messagesEncoder writes vLLM's Anthropic stream: message_start with the
// first token, one content block per run of thinking or text, deltas per
// token, then content_block_stop, message_delta and message_stop. Each
// event is "event: <type>\ndata: <json>\n\n"; the JSON omits unset fields
// as vLLM's pydantic dump (exclude_unset) does.
type messagesEncoder struct {
	j       *job
	started bool   // message_start sent
	block   string // type of the open content block ("" = none)
	index   int    // index of the next content block
	calls   int    // tool_use blocks started
}

// appendToolInput appends a call's arguments as the input object, compact
// as vLLM's JSON response writes the parsed arguments (truncated arguments
// that do not parse become {}).
func appendToolInput(b []byte, args string) []byte {
	if !json.Valid([]byte(args)) || !strings.HasPrefix(strings.TrimSpace(args), "{") {
		return append(b, "{}"...)
	}
	return append(b, compactJSON([]byte(args))...)
}

// openToolUse starts the tool_use block of call k.
func (m *messagesEncoder) openToolUse(b []byte, k int) []byte {
	b = m.closeBlock(b)
	m.block, m.calls = "tool_use", k+1
	call := m.j.ch[0].calls.calls[k]
	b = appendEventHeader(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","content_block":{"type":"tool_use","id":`...)
	b = appendString(b, call.id)
	b = append(b, `,"name":`...)
	b = appendString(b, call.name)
	b = append(b, `,"input":{}},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

// renderCall appends the events of position pos of a tool-call plan:
// input_json_delta per arguments token.
func (m *messagesEncoder) renderCall(b []byte, ch *choice, pos int) []byte {
	step := callStepAt(ch, pos, m.calls)
	if step.open {
		b = m.openToolUse(b, step.call)
	}
	if step.args == "" || m.block != "tool_use" {
		return b
	}
	b = appendEventHeader(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":`...)
	b = appendString(b, step.args)
	b = append(b, `},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

func (m *messagesEncoder) begin(b []byte) []byte { return b }

func appendEventHeader(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...)
}

func (m *messagesEncoder) messageStart(b []byte) []byte {
	m.started = true
	g := m.j.g
	b = appendEventHeader(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":"chatcmpl-`...)
	b = appendStringContent(b, g.baseID)
	b = append(b, `","content":[],"model":`...)
	b = appendString(b, g.model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.messages.promptTokens), 10)
	return append(b, `,"output_tokens":0}}}`+"\n\n"...)
}

// openBlock closes the open block if it is of another type and starts one
// of typ.
func (m *messagesEncoder) openBlock(b []byte, typ string) []byte {
	if m.block == typ {
		return b
	}
	b = m.closeBlock(b)
	m.block = typ
	b = appendEventHeader(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","content_block":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, typ...) // "text" or "thinking": the empty text field
	b = append(b, `":""},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

func (m *messagesEncoder) closeBlock(b []byte) []byte {
	if m.block == "" {
		return b
	}
	if m.block == "thinking" {
		b = appendEventHeader(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"`...)
		b = append(b, anthropicSignature(m.j.g.baseID)...)
		b = append(b, `"},"index":`...)
		b = strconv.AppendInt(b, int64(m.index), 10)
		b = append(b, "}\n\n"...)
	}
	b = appendEventHeader(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	b = append(b, "}\n\n"...)
	m.block = ""
	m.index++
	return b
}

func (m *messagesEncoder) render(st *streamer, items []engine.OutputItem) {
	m.j.forEachToken(items, func(ch *choice, pos int) { st.buf = m.token(st.buf, ch, pos) })
}

// token appends the events of one delivered token.
func (m *messagesEncoder) token(b []byte, ch *choice, pos int) []byte {
	if !m.started {
		b = m.messageStart(b)
	}
	if ch.calls != nil {
		return m.renderCall(b, ch, pos)
	}
	text, reasoning := ch.plan.Segment(pos)
	if text == "" {
		return b
	}
	typ := "text"
	if reasoning {
		typ = "thinking"
	}
	b = m.openBlock(b, typ)
	b = appendEventHeader(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `_delta","`...)
	b = append(b, typ...) // the field is named like the block: text, thinking
	b = append(b, `":`...)
	b = appendString(b, text)
	b = append(b, `},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

func (m *messagesEncoder) end(b []byte) []byte {
	if !m.started {
		b = m.messageStart(b)
	}
	b = m.closeBlock(b)
	ch := &m.j.ch[0]
	finish, _ := ch.reasons()
	if ch.calls != nil {
		finish = ch.calls.finish(ch)
	}
	b = appendEventHeader(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, anthropicStopReason(finish)...)
	b = append(b, `"},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(m.j.g.messages.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(m.j.completion), 10)
	b = append(b, "}}\n\n"...)
	b = appendEventHeader(b, "message_stop")
	return append(b, `{"type":"message_stop"}`+"\n\n"...)
}

func (m *messagesEncoder) fail(b []byte, e *apiError) []byte {
	b = appendEventHeader(b, "error")
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, anthropicErrorType(e.Status)...)
	b = append(b, `","message":`...)
	b = appendString(b, e.Message)
	return append(b, "}}\n\n"...)
}

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// anthropicErrorShape gives every error answer of next (validation,
// faults, limits, startup and drain gates) Anthropic's shape.
func anthropicErrorShape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&anthropicErrors{ResponseWriter: w}, r)
	})
}

// anthropicErrors rewrites the OpenAI-shaped error bodies of the shared
// generation path ({"error":{"message","type","param","code"}}) into
// Anthropic's {"type":"error","error":{"type","message"}}, as vLLM's
// Anthropic router translates its ErrorResponse. Every error body of that
// path is written by writeJSON: headers, WriteHeader, one Write.
type anthropicErrors struct {
	http.ResponseWriter
	status int // a held error status, 0 = passing through
}

func (a *anthropicErrors) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *anthropicErrors) WriteHeader(code int) {
	if code >= 400 && a.status == 0 && strings.HasPrefix(a.Header().Get("Content-Type"), "application/json") {
		a.status = code
		return
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *anthropicErrors) Write(p []byte) (int, error) {
	if a.status == 0 {
		return a.ResponseWriter.Write(p)
	}
	code := a.status
	a.status = 0
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	out := p
	if json.Unmarshal(p, &body) == nil && bytes.HasPrefix(p, []byte(`{"error":{`)) {
		b := append([]byte(`{"type":"error","error":{"type":"`), anthropicErrorType(code)...)
		b = append(b, `","message":`...)
		b = appendString(b, body.Error.Message)
		out = append(b, "}}"...)
		a.Header().Set("Content-Length", strconv.Itoa(len(out)))
	}
	a.ResponseWriter.WriteHeader(code)
	if _, err := a.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
