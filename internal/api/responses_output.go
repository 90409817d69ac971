package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// responseOutput is the finished output of a Responses job.
type responseOutput struct {
	reasoning, content string
	calls              []toolCallJSON // complete function calls
	reasoningTokens    int
	status             string // completed | incomplete
}

func (j *job) responseOutput() responseOutput {
	ch := &j.ch[0]
	out := responseOutput{status: "completed"}
	out.reasoning, out.content = ch.plan.Texts(ch.n)
	if j.s.opts.Generation.Reasoning == nil {
		out.content = out.reasoning + out.content
		out.reasoning = ""
	}
	for pos := range min(ch.n, len(ch.plan.IDs)) {
		if ch.plan.Reasoning(pos) {
			out.reasoningTokens++
		}
	}
	finish, _ := ch.reasons()
	if ch.calls != nil {
		res := ch.calls.result(ch)
		out.calls, finish = res.toolCalls, res.finish
		out.content = ""
		if res.content != nil {
			out.content = *res.content
		}
	}
	if finish == engine.FinishLength {
		out.status = "incomplete"
	}
	return out
}

// appendFunctionCallItem appends a function_call output item
// (ResponseFunctionToolCall's field order).
func appendFunctionCallItem(b []byte, g *genRequest, k int, call plannedCall, args, status string) []byte {
	b = append(b, `{"arguments":`...)
	b = jsonenc.AppendString(b, args)
	b = append(b, `,"call_id":`...)
	b = jsonenc.AppendString(b, responsesCallID(call))
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, call.name)
	b = append(b, `,"type":"function_call","id":`...)
	b = jsonenc.AppendString(b, functionItemID(g, k))
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, status)
	return append(b, '}')
}

// Output item ids: vLLM draws random UUIDs; the mock derives them from the
// request id so that a fixed request id gives a fixed transcript.
func reasoningItemID(g *genRequest) string { return "rs_" + g.baseID }
func messageItemID(g *genRequest) string   { return "msg_" + g.baseID }

// appendReasoningItem appends a reasoning output item (content null while
// in progress).
func appendReasoningItem(b []byte, g *genRequest, text *string, status string) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, reasoningItemID(g))
	b = append(b, `,"summary":[],"type":"reasoning","content":`...)
	if text == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `[{"text":`...)
		b = jsonenc.AppendString(b, *text)
		b = append(b, `,"type":"reasoning_text"}]`...)
	}
	b = append(b, `,"encrypted_content":null,"status":`...)
	b = appendNullable(b, status)
	return append(b, '}')
}

// appendOutputText appends an output_text content part; logprobs is the
// raw JSON value ("[]", "null" or a list, as vLLM sends it in each event).
func appendOutputText(b []byte, text string, logprobs []byte) []byte {
	b = append(b, `{"annotations":[],"text":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `,"type":"output_text","logprobs":`...)
	b = append(b, logprobs...)
	return append(b, '}')
}

// appendMessageItem appends a message output item (text nil: no content
// yet) whose output_text part carries the raw logprobs value.
func appendMessageItem(b []byte, g *genRequest, text *string, logprobs []byte, status string) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, messageItemID(g))
	b = append(b, `,"content":[`...)
	if text != nil {
		b = appendOutputText(b, *text, logprobs)
	}
	b = append(b, `],"role":"assistant","status":`...)
	b = jsonenc.AppendString(b, status)
	return append(b, `,"type":"message"}`...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, s)
}

func appendRaw(b []byte, raw, def string) []byte {
	if raw == "" {
		return append(b, def...)
	}
	return append(b, raw...)
}

// appendResponseObject appends the response object in vLLM's field order
// (ResponsesResponse.from_request). out nil means in progress: no output,
// no usage.
func (j *job) appendResponseObject(b []byte, out *responseOutput) []byte {
	g := j.g
	req := g.responses
	status := "in_progress"
	if out != nil {
		status = out.status
	}
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, req.id)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"incomplete_details":`...)
	if status == "incomplete" {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":`...)
	if req.instructions != nil {
		b = jsonenc.AppendString(b, *req.instructions)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":`...)
	b = appendRaw(b, req.metadata, "null")
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, g.model)
	b = append(b, `,"object":"response","output":[`...)
	if out != nil {
		b = j.appendOutputItems(b, out)
	}
	b = append(b, `],"parallel_tool_calls":`...)
	b = strconv.AppendBool(b, req.parallelToolCalls)
	b = append(b, `,"temperature":`...)
	b = append(b, req.temperature...)
	b = append(b, `,"tool_choice":`...)
	b = append(b, req.toolChoice...)
	b = append(b, `,"tools":`...)
	b = append(b, req.tools...)
	b = append(b, `,"top_p":`...)
	b = append(b, req.topP...)
	b = append(b, `,"background":false,"max_output_tokens":`...)
	b = strconv.AppendInt(b, int64(g.prompts[0].m), 10)
	b = append(b, `,"max_tool_calls":null,"previous_response_id":`...)
	if req.previousResponseID != nil {
		b = jsonenc.AppendString(b, *req.previousResponseID)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"prompt":null,"reasoning":`...)
	b = appendRaw(b, req.reasoning, "null")
	b = append(b, `,"service_tier":`...)
	b = jsonenc.AppendString(b, req.serviceTier)
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, status)
	b = append(b, `,"text":`...)
	b = appendRaw(b, req.text, "null")
	b = append(b, `,"top_logprobs":`...)
	b = j.appendTopLogprobs(b)
	b = append(b, `,"truncation":`...)
	b = jsonenc.AppendString(b, req.truncation)
	b = append(b, `,"usage":`...)
	if out != nil {
		b = j.appendResponseUsage(b, out)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"user":`...)
	b = appendRaw(b, req.user, "null")
	return append(b, `,"input_messages":null,"output_messages":null}`...)
}

// appendOutputItems appends the finished output items: reasoning (when the
// output has reasoning text), then the message.
func (j *job) appendOutputItems(b []byte, out *responseOutput) []byte {
	if out.reasoning != "" {
		b = appendReasoningItem(b, j.g, &out.reasoning, "completed")
		b = append(b, ',')
	}
	var text *string
	if out.content != "" {
		text = &out.content
	}
	logprobs := j.appendResponsesLogprobs(nil, j.ch[0].contentTokens(), true)
	if len(out.calls) == 0 {
		return appendMessageItem(b, j.g, text, logprobs, "completed")
	}
	if text != nil {
		b = appendMessageItem(b, j.g, text, []byte("null"), "completed")
		b = append(b, ',')
	}
	calls := j.ch[0].calls.calls
	for k, c := range out.calls {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendFunctionCallItem(b, j.g, k, calls[k], c.Arguments, "completed")
	}
	return b
}

// appendResponseUsage appends vLLM's Responses usage (one turn).
func (j *job) appendResponseUsage(b []byte, out *responseOutput) []byte {
	p := int64(len(j.g.prompts[0].ids))
	cached := int64(j.ch[0].fin.CachedTokens)
	o := int64(j.completion)
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, p, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, cached, 10)
	b = append(b, `,"input_tokens_per_turn":[`...)
	b = strconv.AppendInt(b, p, 10)
	b = append(b, `],"cached_tokens_per_turn":[`...)
	b = strconv.AppendInt(b, cached, 10)
	b = append(b, `]},"output_tokens":`...)
	b = strconv.AppendInt(b, o, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(out.reasoningTokens), 10)
	b = append(b, `,"tool_output_tokens":0,"output_tokens_per_turn":[`...)
	b = strconv.AppendInt(b, o, 10)
	b = append(b, `],"tool_output_tokens_per_turn":[0]},"total_tokens":`...)
	b = strconv.AppendInt(b, p+o, 10)
	return append(b, '}')
}

// finishResponse builds the final response object and stores it when the
// request asked for it.
func (j *job) finishResponse(store *responseStore) []byte {
	out := j.responseOutput()
	body := j.appendResponseObject(nil, &out)
	req := j.g.responses
	if req.store {
		var output []chatMessageIn
		if out.content != "" || len(out.calls) > 0 {
			msg := chatMessageIn{Role: "assistant"}
			if out.content != "" {
				msg.Content, _ = json.Marshal(out.content)
			}
			for k, c := range out.calls {
				msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: responsesCallID(j.ch[0].calls.calls[k]),
					Type: "function", Function: chatFunction{Name: c.Name, Arguments: c.Arguments}})
			}
			output = append(output, msg)
		}
		store.put(req.id, &storedResponse{body: body, conversation: req.conversation, output: output})
	}
	return body
}

func (rs responsesSurface) respond(j *job, w http.ResponseWriter) {
	httperr.Write(w, http.StatusOK, j.finishResponse(rs.store))
}

func (rs responsesSurface) encoder(j *job) eventEncoder {
	return &responsesEncoder{j: j, store: rs.store}
}
