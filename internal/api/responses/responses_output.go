package responses

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// responseOutput is the finished output of a Responses job.
type responseOutput struct {
	reasoning, content string
	calls              []toolcall.ToolCallJSON // complete function calls
	reasoningTokens    int
	status             string // completed | incomplete
}

func outputOf(j *pipeline.Job) responseOutput {
	ch := &j.Ch[0]
	out := responseOutput{status: "completed"}
	out.reasoning, out.content = ch.Plan.Texts(ch.N)
	if j.S.Opts().Generation.Reasoning == nil {
		out.content = out.reasoning + out.content
		out.reasoning = ""
	}
	for pos := range min(ch.N, len(ch.Plan.IDs)) {
		if ch.Plan.Reasoning(pos) {
			out.reasoningTokens++
		}
	}
	finish, _ := ch.Reasons()
	if ch.Calls != nil {
		res := ch.Calls.Result(&ch.Plan, ch.N, ch.Reason())
		out.calls, finish = res.ToolCalls, res.Finish
		out.content = ""
		if res.Content != nil {
			out.content = *res.Content
		}
	}
	if finish == engine.FinishLength {
		out.status = "incomplete"
	}
	return out
}

// appendFunctionCallItem appends a function_call output item
// (ResponseFunctionToolCall's field order).
func appendFunctionCallItem(b []byte, g *pipeline.GenRequest, k int, call toolcall.PlannedCall, args, status string) []byte {
	b = append(b, `{"arguments":`...)
	b = jsonenc.AppendString(b, args)
	b = append(b, `,"call_id":`...)
	b = jsonenc.AppendString(b, toolcall.ResponsesCallID(call))
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, call.Name)
	b = append(b, `,"type":"function_call","id":`...)
	b = jsonenc.AppendString(b, functionItemID(g, k))
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, status)
	return append(b, '}')
}

// Output item ids: vLLM draws random UUIDs; the mock derives them from the
// request id so that a fixed request id gives a fixed transcript.
func reasoningItemID(g *pipeline.GenRequest) string { return "rs_" + g.BaseID }
func messageItemID(g *pipeline.GenRequest) string   { return "msg_" + g.BaseID }

// appendReasoningItem appends a reasoning output item (content null while
// in progress).
func appendReasoningItem(b []byte, g *pipeline.GenRequest, text *string, status string) []byte {
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
func appendMessageItem(b []byte, g *pipeline.GenRequest, text *string, logprobs []byte, status string) []byte {
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
func appendResponseObject(j *pipeline.Job, b []byte, out *responseOutput) []byte {
	g := j.G
	req := responsesReq(g)
	status := "in_progress"
	if out != nil {
		status = out.status
	}
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, req.id)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, g.Created, 10)
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
	b = jsonenc.AppendString(b, g.Model)
	b = append(b, `,"object":"response","output":[`...)
	if out != nil {
		b = appendOutputItems(j, b, out)
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
	b = strconv.AppendInt(b, int64(g.Prompts[0].M), 10)
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
	b = appendTopLogprobs(j, b)
	b = append(b, `,"truncation":`...)
	b = jsonenc.AppendString(b, req.truncation)
	b = append(b, `,"usage":`...)
	if out != nil {
		b = appendResponseUsage(j, b, out)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"user":`...)
	b = appendRaw(b, req.user, "null")
	return append(b, `,"input_messages":null,"output_messages":null}`...)
}

// appendOutputItems appends the finished output items: reasoning (when the
// output has reasoning text), then the message.
func appendOutputItems(j *pipeline.Job, b []byte, out *responseOutput) []byte {
	if out.reasoning != "" {
		b = appendReasoningItem(b, j.G, &out.reasoning, "completed")
		b = append(b, ',')
	}
	var text *string
	if out.content != "" {
		text = &out.content
	}
	logprobs := appendResponsesLogprobs(j, nil, contentTokens(&j.Ch[0]), true)
	if len(out.calls) == 0 {
		return appendMessageItem(b, j.G, text, logprobs, "completed")
	}
	if text != nil {
		b = appendMessageItem(b, j.G, text, []byte("null"), "completed")
		b = append(b, ',')
	}
	calls := j.Ch[0].Calls.Calls
	for k, c := range out.calls {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendFunctionCallItem(b, j.G, k, calls[k], c.Arguments, "completed")
	}
	return b
}

// appendResponseUsage appends the Responses usage of one turn: vLLM's
// counts without its per-turn arrays (input_tokens_per_turn,
// cached_tokens_per_turn, output_tokens_per_turn,
// tool_output_tokens_per_turn). The official schema types every field of
// the two details objects as a number, and the OpenAI Agents SDK's
// validation of a streamed usage throws on an array there
// (docs/http-api.md).
func appendResponseUsage(j *pipeline.Job, b []byte, out *responseOutput) []byte {
	p := int64(len(j.G.Prompts[0].IDs))
	cached := int64(j.Ch[0].Fin.CachedTokens)
	o := int64(j.Completion)
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, p, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, cached, 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, o, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(out.reasoningTokens), 10)
	b = append(b, `,"tool_output_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, p+o, 10)
	return append(b, '}')
}

// finishResponse builds the final response object and stores it when the
// request asked for it.
func finishResponse(j *pipeline.Job, store *responseStore) []byte {
	out := outputOf(j)
	body := appendResponseObject(j, nil, &out)
	req := responsesReq(j.G)
	if req.store {
		var output []input.ChatMessageIn
		if out.content != "" || len(out.calls) > 0 {
			msg := input.ChatMessageIn{Role: "assistant"}
			if out.content != "" {
				msg.Content, _ = json.Marshal(out.content)
			}
			for k, c := range out.calls {
				msg.ToolCalls = append(msg.ToolCalls, input.ChatToolCall{ID: toolcall.ResponsesCallID(j.Ch[0].Calls.Calls[k]),
					Type: "function", Function: input.ChatFunction{Name: c.Name, Arguments: c.Arguments}})
			}
			output = append(output, msg)
		}
		store.Put(req.id, &StoredResponse{Body: body, conversation: req.conversation, output: output})
	}
	return body
}

func (rs ResponsesSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	httperr.Write(w, http.StatusOK, finishResponse(j, rs.Store))
}

func (rs ResponsesSurface) Encoder(j *pipeline.Job) pipeline.EventEncoder {
	return &responsesEncoder{j: j, store: rs.Store}
}

// functionItemID is the id of a Responses function_call item.
func functionItemID(g *pipeline.GenRequest, call int) string {
	return "fc_" + g.BaseID + "_" + wire.Itoa(call)
}
