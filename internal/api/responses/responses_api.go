// Package responses is OpenAI's Responses API (POST /v1/responses, GET and
// cancel of stored responses): its body reader into the pipeline's typed
// input, the output items, the stream encoder, the response store and its
// logprobs form.
package responses

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// ResponsesSurface is POST /v1/responses, the OpenAI Responses API as vLLM
// serves it to models without the Harmony format
// (vllm/entrypoints/openai/responses): input items and instructions become
// chat messages rendered with the chat template, the output becomes
// reasoning, message and function_call items. Stored responses
// (previous_response_id, GET /v1/responses/{id}) live in a bounded
// in-memory store.
type ResponsesSurface struct {
	Store *responseStore
}

// responsesRequest holds what the response object echoes and what the
// store keeps.
type responsesRequest struct {
	id                 string // resp_<request id>
	instructions       *string
	previousResponseID *string
	store              bool
	temperature        string // Python repr of the sampling temperature
	topP               string
	parallelToolCalls  bool
	serviceTier        string
	truncation         string
	// Raw JSON echoed as sent ("" = null; tools and tool_choice have
	// defaults).
	metadata, reasoning, text, tools, toolChoice, user string
	// conversation is the chat form of the input (stored for a later
	// previous_response_id).
	conversation []input.ChatMessageIn
}

var responsesFields = wire.SetOf("background", "include", "input", "instructions", "max_output_tokens",
	"max_tool_calls", "metadata", "model", "logit_bias", "parallel_tool_calls", "previous_response_id",
	"prompt", "reasoning", "service_tier", "store", "stream", "temperature", "text", "tool_choice",
	"tools", "top_logprobs", "top_p", "top_k", "truncation", "user", "skip_special_tokens",
	"include_stop_str_in_output", "prompt_cache_key", "request_id", "mm_processor_kwargs", "priority",
	"cache_salt", "enable_response_messages", "previous_input_messages", "structured_outputs",
	"repetition_penalty", "seed", "stop", "ignore_eos", "vllm_xargs", "stream_options", "conversation",
	"safety_identifier", "chat_template", "chat_template_kwargs")

func (rs ResponsesSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	s.LogUnknownFields(o, r, responsesFields)
	req, logprobs, e := readResponsesRequest(o)
	if e != nil {
		return nil, e
	}
	// The chat forms of the tools, the text format and the conversation,
	// as vLLM translates them: the chat template renders them and the
	// tool and constraint checks read them (the input's body).
	chat := map[string]json.RawMessage{}
	// chat_template (refused unless --trust-request-chat-template) and its
	// kwargs reach the chat renderer as on /v1/chat/completions.
	for _, k := range []string{"structured_outputs", "parallel_tool_calls", "chat_template", "chat_template_kwargs"} {
		if v, ok := o.Raw(k); ok {
			chat[k] = v
		}
	}
	if e := responsesTools(o, req, chat); e != nil {
		return nil, e
	}
	if e := responsesTextFormat(o, chat); e != nil {
		return nil, e
	}
	var prev *StoredResponse
	if req.previousResponseID != nil {
		if prev = rs.Store.Get(*req.previousResponseID); prev == nil {
			return nil, errResponseNotFound(*req.previousResponseID)
		}
	}
	if req.conversation, e = responsesConversation(o, req.instructions, prev); e != nil {
		return nil, e
	}
	// The contents are valid JSON (the body's, json.Marshal's or a stored
	// response's): no second validation of their megabytes of image data.
	chat["messages"] = input.MarshalMessages(req.conversation)
	in, e := responsesInput(s, o, wire.Object{M: chat, Err: new(*wire.APIError)}, req, logprobs)
	if e != nil {
		return nil, e
	}
	g, e := s.BuildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	req.id = "resp_" + g.BaseID
	g.Ext = req
	return g, nil
}

// responsesInput reads a Responses body's generation fields straight into
// the typed input, under the Responses names the shared checks report
// (max_output_tokens, input); body holds the chat forms.
func responsesInput(s *pipeline.Server, o, body wire.Object, req *responsesRequest, logprobs bool) (*pipeline.GenInput, *wire.APIError) {
	in := &pipeline.GenInput{Chat: true, Body: body, AddGen: true, IncludeUsage: true,
		MaxTokensName: "max_output_tokens", MsgsParam: "input"}
	in.Model, in.HasModel = o.String("model")
	in.MaxTokens = o.Int("max_output_tokens")
	in.Sampling = pipeline.SamplingInput{Temperature: o.Float("temperature"), TopP: o.Float("top_p"),
		TopK: o.Int("top_k"), RepPen: o.Float("repetition_penalty")}
	in.Stream = o.Bool("stream", false)
	in.Seed = o.Int("seed")
	in.Stop, in.StopSet = input.ParseStop(o)
	in.IgnoreEOS = o.Bool("ignore_eos", false)
	in.Priority = o.Int("priority")
	in.CacheSalt, in.HasSalt = o.String("cache_salt")
	in.BodyID, _ = o.String("request_id")
	in.IncludeStr = o.Bool("include_stop_str_in_output", false)
	in.MMKwargs = pipeline.ReadMMKwargs(o)
	if logprobs {
		// vLLM samples logprobs only when the output text's are included;
		// top_logprobs (default 0) is then the number of alternatives.
		in.ChatLogprobs, in.TopLogprobs = true, o.Int("top_logprobs")
	}
	if req.truncation == "auto" {
		n := s.Opts().Model.MaxModelLen - 1
		in.Truncate = wire.Num{I: int64(n), F: float64(n), Raw: strconv.Itoa(n), Set: true}
	}
	if e := o.Failed(); e != nil {
		return nil, e
	}
	in.Msgs, in.Media, in.BadPart = input.ParseMessages(body)
	if a, ok := body.Kind("tools", "array"); ok {
		in.ToolsJSON = wire.CompactJSON(a)
	}
	return in, body.Failed()
}

// readResponsesRequest reads what the response object echoes, and whether
// the output text's logprobs are included.
func readResponsesRequest(o wire.Object) (req *responsesRequest, logprobs bool, e *wire.APIError) {
	req = &responsesRequest{store: o.Bool("store", true), parallelToolCalls: o.Bool("parallel_tool_calls", true),
		serviceTier: "auto", truncation: "disabled", tools: "[]", toolChoice: `"auto"`}
	if o.Bool("background", false) {
		return nil, false, wire.ErrInvalid("background", "background mode is not supported by mocker-server")
	}
	if o.Has("prompt") {
		return nil, false, wire.ErrInvalid("prompt", "prompt template is not supported")
	}
	if inc, ok := o.Array("include"); ok {
		for _, v := range inc {
			logprobs = logprobs || string(v) == `"message.output_text.logprobs"`
		}
	}
	if v, ok := o.String("instructions"); ok {
		req.instructions = &v
	}
	if v, ok := o.String("previous_response_id"); ok {
		req.previousResponseID = &v
	}
	if v, ok := o.String("service_tier"); ok {
		req.serviceTier = v
	}
	if v, ok := o.String("truncation"); ok {
		if v != "auto" && v != "disabled" {
			return nil, false, wire.ErrInvalid("truncation", "truncation must be 'auto' or 'disabled', got '%s'", v)
		}
		req.truncation = v
	}
	for key, dst := range map[string]*string{"metadata": &req.metadata, "reasoning": &req.reasoning,
		"text": &req.text, "user": &req.user} {
		if v, ok := o.Raw(key); ok {
			*dst = string(wire.CompactJSON(v))
		}
	}
	req.temperature, req.topP = "1.0", "1.0"
	if t := o.Float("temperature"); t.Set {
		req.temperature = pyrepr.Float(t.F)
	}
	if p := o.Float("top_p"); p.Set {
		req.topP = pyrepr.Float(p.F)
	}
	return req, logprobs, o.Failed()
}

// maxEchoedIDBytes bounds the id echoed in errResponseNotFound: ids the
// server makes are far shorter, and a 1 MB id must not come back in the
// answer.
const maxEchoedIDBytes = 128

// errResponseNotFound is vLLM's answer to an unknown response id; an id
// longer than maxEchoedIDBytes is echoed cut, marked with "…".
func errResponseNotFound(id string) *wire.APIError {
	if len(id) > maxEchoedIDBytes {
		cut := maxEchoedIDBytes
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		id = strings.ToValidUTF8(id[:cut], "") + "…"
	}
	return &wire.APIError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: "Response with id '" + id + "' not found.", Param: "response_id"}
}

// responsesTools translates function tools ({"type":"function","name",
// "parameters",…}) and tool_choice into their chat forms; other tool types
// (built-in tools, MCP) are refused.
func responsesTools(o wire.Object, req *responsesRequest, chat map[string]json.RawMessage) *wire.APIError {
	if raw, ok := o.Kind("tools", "array"); ok {
		req.tools = string(wire.CompactJSON(raw))
		var tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &tools) != nil {
			return wire.ErrFieldType("tools", "array of objects")
		}
		out := make([]toolcall.ChatTool, 0, len(tools))
		for i, t := range tools {
			path := "tools[" + wire.Itoa(i) + "]"
			if t.Type != "function" {
				return wire.ErrInvalid(path+".type", "tool type '%s' is not supported by mocker-server (only 'function')", t.Type)
			}
			if t.Name == "" {
				return wire.ErrFieldRequired(path + ".name")
			}
			out = append(out, toolcall.ChatTool{Type: "function", Function: toolcall.ChatToolFuncDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
		}
		if len(out) > 0 {
			b, _ := json.Marshal(out)
			chat["tools"] = b
		}
	}
	raw, ok := o.Raw("tool_choice")
	if !ok {
		return o.Failed()
	}
	req.toolChoice = string(wire.CompactJSON(raw))
	if raw[0] == '"' {
		chat["tool_choice"] = raw
		return nil
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil {
		return wire.ErrFieldType("tool_choice", "string or object")
	}
	if named.Type != "function" || named.Name == "" {
		return wire.ErrInvalid("tool_choice", "tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": ...}")
	}
	chat["tool_choice"] = toolcall.NamedChoiceJSON(named.Name)
	return nil
}

// responsesTextFormat translates text.format into response_format.
func responsesTextFormat(o wire.Object, chat map[string]json.RawMessage) *wire.APIError {
	text, ok := o.Object("text")
	if !ok {
		return o.Failed()
	}
	format, ok := text.Object("format")
	if !ok {
		return o.Failed()
	}
	typ, _ := format.String("type")
	if e := o.Failed(); e != nil {
		return e
	}
	switch typ {
	case "text":
	case "json_object":
		chat["response_format"] = json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		schema, ok := format.Raw("schema")
		if !ok {
			return wire.ErrFieldRequired("text.format.schema")
		}
		name, _ := format.String("name")
		b, _ := json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": name, "schema": schema}})
		chat["response_format"] = b
	default:
		return wire.ErrInvalid("text.format.type", "text.format.type must be 'text', 'json_object' or 'json_schema', got '%s'", typ)
	}
	return nil
}

// responsesConversation builds the chat messages of a request: the
// instructions as a system message, the previous response's conversation
// and output (its own instructions are not carried over), then the input.
func responsesConversation(o wire.Object, instructions *string, prev *StoredResponse) ([]input.ChatMessageIn, *wire.APIError) {
	var conv []input.ChatMessageIn
	if instructions != nil {
		c, _ := json.Marshal(*instructions)
		conv = append(conv, input.ChatMessageIn{Role: "system", Content: c})
	}
	if prev != nil {
		conv = append(conv, prev.conversation...)
		conv = append(conv, prev.output...)
	}
	raw, ok := o.Raw("input")
	if !ok {
		if e := o.Failed(); e != nil {
			return nil, e
		}
		return nil, wire.ErrFieldRequired("input")
	}
	if raw[0] == '"' {
		if _, e := wire.ParseString(raw, "input"); e != nil {
			return nil, e
		}
		return append(conv, input.ChatMessageIn{Role: "user", Content: raw}), nil
	}
	items, e := wire.ParseArray(raw, "input")
	if e != nil {
		return nil, wire.ErrFieldType("input", "string or array")
	}
	for i, it := range items {
		m, e := responsesInputItem(it, "input["+wire.Itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		if m != nil {
			conv = append(conv, *m)
		}
	}
	if len(conv) == 0 {
		return nil, wire.ErrInvalid("input", "input must not be empty")
	}
	return conv, nil
}

// responsesInputItem translates one input item: a message (typed or the
// short {role, content} form), a function_call, a function_call_output or
// a reasoning item (accepted, not rendered). Other types are a 400.
func responsesInputItem(raw json.RawMessage, path string) (*input.ChatMessageIn, *wire.APIError) {
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &it) != nil {
		return nil, wire.ErrFieldType(path, "object")
	}
	switch it.Type {
	case "", "message":
		switch it.Role {
		case "user", "assistant", "system", "developer":
		case "":
			return nil, wire.ErrFieldRequired(path + ".role")
		default:
			return nil, wire.ErrInvalid(path+".role", "role must be 'user', 'assistant', 'system' or 'developer', got '%s'", it.Role)
		}
		c, e := responsesContent(it.Content, path+".content")
		if e != nil {
			return nil, e
		}
		return &input.ChatMessageIn{Role: it.Role, Content: c}, nil
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return nil, wire.ErrFieldRequired(path + ".call_id, name")
		}
		return &input.ChatMessageIn{Role: "assistant", ToolCalls: []input.ChatToolCall{{ID: it.CallID, Type: "function",
			Function: input.ChatFunction{Name: it.Name, Arguments: it.Arguments}}}}, nil
	case "function_call_output":
		if it.CallID == "" {
			return nil, wire.ErrFieldRequired(path + ".call_id")
		}
		out := string(it.Output)
		if len(it.Output) > 0 && it.Output[0] == '"' {
			out, _ = wire.ParseString(it.Output, path+".output")
		}
		c, _ := json.Marshal(out)
		id := it.CallID
		return &input.ChatMessageIn{Role: "tool", ToolCallID: &id, Content: c}, nil
	case "reasoning":
		return nil, nil
	}
	return nil, wire.ErrInvalid(path+".type", "Unknown input item type '%s': supported are 'message', 'function_call', 'function_call_output' and 'reasoning'", it.Type)
}

// responsesContent is a message's content for the chat template: a
// string, or its text parts (input_text, output_text) joined by newlines;
// with an input_image part, the list of chat parts in order (the image as
// an image_url part, as vLLM's chat parser reads input_image).
func responsesContent(raw json.RawMessage, path string) (json.RawMessage, *wire.APIError) {
	if len(raw) == 0 || wire.IsNull(raw) {
		return nil, wire.ErrFieldRequired(path)
	}
	if raw[0] == '"' {
		text, e := wire.ParseString(raw, path)
		if e != nil {
			return nil, e
		}
		c, _ := json.Marshal(text)
		return c, nil
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
		FileID   string          `json:"file_id"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil, wire.ErrFieldType(path, "string or array")
	}
	texts := make([]string, 0, len(parts))
	type chatPart struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text,omitempty"`
		ImageURL json.RawMessage `json:"image_url,omitempty"`
	}
	var chat []chatPart
	images := 0
	for i, p := range parts {
		ppath := path + "[" + wire.Itoa(i) + "]"
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
			t := p.Text
			chat = append(chat, chatPart{Type: "text", Text: &t})
		case "input_image":
			if len(p.ImageURL) == 0 || wire.IsNull(p.ImageURL) {
				if p.FileID != "" {
					return nil, wire.ErrInvalid(ppath+".file_id", "input_image by file_id is not supported: send image_url")
				}
				return nil, wire.ErrFieldRequired(ppath + ".image_url")
			}
			chat = append(chat, chatPart{Type: "image_url", ImageURL: p.ImageURL})
			images++
		case "input_file":
			return nil, wire.ErrInvalid(ppath+".type", "input_file content parts are not supported (vLLM's Responses API reads input_text and input_image).")
		default:
			return nil, wire.ErrInvalid(ppath+".type", "Unsupported content part type '%s': supported are input_text, output_text and input_image.", p.Type)
		}
	}
	if images > 0 {
		c, _ := json.Marshal(chat)
		return c, nil
	}
	c, _ := json.Marshal(strings.Join(texts, "\n"))
	return c, nil
}

// responsesReq is the Responses request a generation request carries.
func responsesReq(g *pipeline.GenRequest) *responsesRequest { return g.Ext.(*responsesRequest) }
