package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// responsesSurface is POST /v1/responses, the OpenAI Responses API as vLLM
// serves it to models without the Harmony format
// (vllm/entrypoints/openai/responses): input items and instructions become
// chat messages rendered with the chat template, the output becomes
// reasoning, message and function_call items. Stored responses
// (previous_response_id, GET /v1/responses/{id}) live in a bounded
// in-memory store.
type responsesSurface struct {
	store *responseStore
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
	conversation []chatMessageIn
}

var responsesFields = setOf("background", "include", "input", "instructions", "max_output_tokens",
	"max_tool_calls", "metadata", "model", "logit_bias", "parallel_tool_calls", "previous_response_id",
	"prompt", "reasoning", "service_tier", "store", "stream", "temperature", "text", "tool_choice",
	"tools", "top_logprobs", "top_p", "top_k", "truncation", "user", "skip_special_tokens",
	"include_stop_str_in_output", "prompt_cache_key", "request_id", "mm_processor_kwargs", "priority",
	"cache_salt", "enable_response_messages", "previous_input_messages", "structured_outputs",
	"repetition_penalty", "seed", "stop", "ignore_eos", "vllm_xargs", "stream_options", "conversation",
	"safety_identifier")

func (rs responsesSurface) parse(s *Server, o object, r *http.Request) (*genRequest, *apiError) {
	s.logUnknownFields(o, r, responsesFields)
	req, logprobs, e := readResponsesRequest(o)
	if e != nil {
		return nil, e
	}
	// The chat forms of the tools, the text format and the conversation,
	// as vLLM translates them: the chat template renders them and the
	// tool and constraint checks read them (the input's body).
	chat := map[string]json.RawMessage{}
	for _, k := range []string{"structured_outputs", "parallel_tool_calls"} {
		if v, ok := o.raw(k); ok {
			chat[k] = v
		}
	}
	if e := responsesTools(o, req, chat); e != nil {
		return nil, e
	}
	if e := responsesTextFormat(o, chat); e != nil {
		return nil, e
	}
	var prev *storedResponse
	if req.previousResponseID != nil {
		if prev = rs.store.get(*req.previousResponseID); prev == nil {
			return nil, errResponseNotFound(*req.previousResponseID)
		}
	}
	if req.conversation, e = responsesConversation(o, req.instructions, prev); e != nil {
		return nil, e
	}
	msgs, err := json.Marshal(req.conversation)
	if err != nil {
		return nil, errInvalid("input", "%v", err)
	}
	chat["messages"] = msgs
	in, e := s.responsesInput(o, object{m: chat, err: new(*apiError)}, req, logprobs)
	if e != nil {
		return nil, e
	}
	g, e := s.buildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	req.id = "resp_" + g.baseID
	g.responses = req
	return g, nil
}

// responsesInput reads a Responses body's generation fields straight into
// the typed input, under the Responses names the shared checks report
// (max_output_tokens, input); body holds the chat forms.
func (s *Server) responsesInput(o, body object, req *responsesRequest, logprobs bool) (*genInput, *apiError) {
	in := &genInput{chat: true, body: body, addGen: true, includeUsage: true,
		maxTokensName: "max_output_tokens", msgsParam: "input"}
	in.model, in.hasModel = o.String("model")
	in.maxTokens = o.Int("max_output_tokens")
	in.sampling = samplingInput{temperature: o.Float("temperature"), topP: o.Float("top_p"),
		topK: o.Int("top_k"), repPen: o.Float("repetition_penalty")}
	in.stream = o.Bool("stream", false)
	in.seed = o.Int("seed")
	in.stop, in.stopSet = parseStop(o)
	in.ignoreEOS = o.Bool("ignore_eos", false)
	in.priority = o.Int("priority")
	in.cacheSalt, in.hasSalt = o.String("cache_salt")
	in.bodyID, _ = o.String("request_id")
	in.includeStr = o.Bool("include_stop_str_in_output", false)
	if logprobs {
		// vLLM samples logprobs only when the output text's are included;
		// top_logprobs (default 0) is then the number of alternatives.
		in.chatLogprobs, in.topLogprobs = true, o.Int("top_logprobs")
	}
	if req.truncation == "auto" {
		n := s.opts.Model.MaxModelLen - 1
		in.truncate = num{I: int64(n), F: float64(n), Raw: strconv.Itoa(n), Set: true}
	}
	if e := o.failed(); e != nil {
		return nil, e
	}
	in.msgs, in.badPart = parseMessages(body)
	if a, ok := body.Kind("tools", "array"); ok {
		in.toolsJSON = compactJSON(a)
	}
	return in, body.failed()
}

// readResponsesRequest reads what the response object echoes, and whether
// the output text's logprobs are included.
func readResponsesRequest(o object) (req *responsesRequest, logprobs bool, e *apiError) {
	req = &responsesRequest{store: o.Bool("store", true), parallelToolCalls: o.Bool("parallel_tool_calls", true),
		serviceTier: "auto", truncation: "disabled", tools: "[]", toolChoice: `"auto"`}
	if o.Bool("background", false) {
		return nil, false, errInvalid("background", "background mode is not supported by mocker-server")
	}
	if o.has("prompt") {
		return nil, false, errInvalid("prompt", "prompt template is not supported")
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
			return nil, false, errInvalid("truncation", "truncation must be 'auto' or 'disabled', got '%s'", v)
		}
		req.truncation = v
	}
	for key, dst := range map[string]*string{"metadata": &req.metadata, "reasoning": &req.reasoning,
		"text": &req.text, "user": &req.user} {
		if v, ok := o.raw(key); ok {
			*dst = string(compactJSON(v))
		}
	}
	req.temperature, req.topP = "1.0", "1.0"
	if t := o.Float("temperature"); t.Set {
		req.temperature = pyrepr.Float(t.F)
	}
	if p := o.Float("top_p"); p.Set {
		req.topP = pyrepr.Float(p.F)
	}
	return req, logprobs, o.failed()
}

// errResponseNotFound is vLLM's answer to an unknown response id.
func errResponseNotFound(id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: "Response with id '" + id + "' not found.", Param: "response_id"}
}

// responsesTools translates function tools ({"type":"function","name",
// "parameters",…}) and tool_choice into their chat forms; other tool types
// (built-in tools, MCP) are refused.
func responsesTools(o object, req *responsesRequest, chat map[string]json.RawMessage) *apiError {
	if raw, ok := o.Kind("tools", "array"); ok {
		req.tools = string(compactJSON(raw))
		var tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(raw, &tools) != nil {
			return errFieldType("tools", "array of objects")
		}
		out := make([]chatTool, 0, len(tools))
		for i, t := range tools {
			path := "tools[" + itoa(i) + "]"
			if t.Type != "function" {
				return errInvalid(path+".type", "tool type '%s' is not supported by mocker-server (only 'function')", t.Type)
			}
			if t.Name == "" {
				return errFieldRequired(path + ".name")
			}
			out = append(out, chatTool{Type: "function", Function: chatToolFuncDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
		}
		if len(out) > 0 {
			b, _ := json.Marshal(out)
			chat["tools"] = b
		}
	}
	raw, ok := o.raw("tool_choice")
	if !ok {
		return o.failed()
	}
	req.toolChoice = string(compactJSON(raw))
	if raw[0] == '"' {
		chat["tool_choice"] = raw
		return nil
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) != nil {
		return errFieldType("tool_choice", "string or object")
	}
	if named.Type != "function" || named.Name == "" {
		return errInvalid("tool_choice", "tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", \"name\": ...}")
	}
	chat["tool_choice"] = namedChoiceJSON(named.Name)
	return nil
}

// responsesTextFormat translates text.format into response_format.
func responsesTextFormat(o object, chat map[string]json.RawMessage) *apiError {
	text, ok := o.Object("text")
	if !ok {
		return o.failed()
	}
	format, ok := text.Object("format")
	if !ok {
		return o.failed()
	}
	typ, _ := format.String("type")
	if e := o.failed(); e != nil {
		return e
	}
	switch typ {
	case "text":
	case "json_object":
		chat["response_format"] = json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		schema, ok := format.raw("schema")
		if !ok {
			return errFieldRequired("text.format.schema")
		}
		name, _ := format.String("name")
		b, _ := json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": name, "schema": schema}})
		chat["response_format"] = b
	default:
		return errInvalid("text.format.type", "text.format.type must be 'text', 'json_object' or 'json_schema', got '%s'", typ)
	}
	return nil
}

// responsesConversation builds the chat messages of a request: the
// instructions as a system message, the previous response's conversation
// and output (its own instructions are not carried over), then the input.
func responsesConversation(o object, instructions *string, prev *storedResponse) ([]chatMessageIn, *apiError) {
	var conv []chatMessageIn
	if instructions != nil {
		c, _ := json.Marshal(*instructions)
		conv = append(conv, chatMessageIn{Role: "system", Content: c})
	}
	if prev != nil {
		conv = append(conv, prev.conversation...)
		conv = append(conv, prev.output...)
	}
	raw, ok := o.raw("input")
	if !ok {
		if e := o.failed(); e != nil {
			return nil, e
		}
		return nil, errFieldRequired("input")
	}
	if raw[0] == '"' {
		if _, e := parseString(raw, "input"); e != nil {
			return nil, e
		}
		return append(conv, chatMessageIn{Role: "user", Content: raw}), nil
	}
	items, e := parseArray(raw, "input")
	if e != nil {
		return nil, errFieldType("input", "string or array")
	}
	for i, it := range items {
		m, e := responsesInputItem(it, "input["+itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		if m != nil {
			conv = append(conv, *m)
		}
	}
	if len(conv) == 0 {
		return nil, errInvalid("input", "input must not be empty")
	}
	return conv, nil
}

// responsesInputItem translates one input item: a message (typed or the
// short {role, content} form), a function_call, a function_call_output or
// a reasoning item (accepted, not rendered). Other types are a 400.
func responsesInputItem(raw json.RawMessage, path string) (*chatMessageIn, *apiError) {
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
		return nil, errFieldType(path, "object")
	}
	switch it.Type {
	case "", "message":
		switch it.Role {
		case "user", "assistant", "system", "developer":
		case "":
			return nil, errFieldRequired(path + ".role")
		default:
			return nil, errInvalid(path+".role", "role must be 'user', 'assistant', 'system' or 'developer', got '%s'", it.Role)
		}
		text, e := responsesContentText(it.Content, path+".content")
		if e != nil {
			return nil, e
		}
		c, _ := json.Marshal(text)
		return &chatMessageIn{Role: it.Role, Content: c}, nil
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return nil, errFieldRequired(path + ".call_id, name")
		}
		return &chatMessageIn{Role: "assistant", ToolCalls: []chatToolCall{{ID: it.CallID, Type: "function",
			Function: chatFunction{Name: it.Name, Arguments: it.Arguments}}}}, nil
	case "function_call_output":
		if it.CallID == "" {
			return nil, errFieldRequired(path + ".call_id")
		}
		out := string(it.Output)
		if len(it.Output) > 0 && it.Output[0] == '"' {
			out, _ = parseString(it.Output, path+".output")
		}
		c, _ := json.Marshal(out)
		id := it.CallID
		return &chatMessageIn{Role: "tool", ToolCallID: &id, Content: c}, nil
	case "reasoning":
		return nil, nil
	}
	return nil, errInvalid(path+".type", "Unknown input item type '%s': supported are 'message', 'function_call', 'function_call_output' and 'reasoning'", it.Type)
}

// responsesContentText is a message's content: a string, or its text parts
// (input_text, output_text) joined by newlines.
func responsesContentText(raw json.RawMessage, path string) (string, *apiError) {
	if len(raw) == 0 || isNull(raw) {
		return "", errFieldRequired(path)
	}
	if raw[0] == '"' {
		return parseString(raw, path)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", errFieldType(path, "string or array")
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		default:
			return "", errInvalid(path+"["+itoa(i)+"].type", "Only text content parts are supported by mocker-server.")
		}
	}
	return strings.Join(texts, "\n"), nil
}
