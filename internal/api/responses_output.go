package api

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// responseStoreSize bounds the in-memory store of responses: the oldest
// response is forgotten when a new one would exceed it. (vLLM keeps every
// stored response forever when VLLM_ENABLE_RESPONSES_API_STORE is set and
// stores nothing otherwise.)
const responseStoreSize = 1024

// storedResponse is what previous_response_id and GET /v1/responses/{id}
// need of a finished response.
type storedResponse struct {
	body         []byte          // the response object as answered
	conversation []chatMessageIn // the chat messages it was generated from
	output       []chatMessageIn // its output as assistant messages
}

// responseStore is a bounded FIFO map of stored responses, safe for
// concurrent use.
type responseStore struct {
	mu    sync.Mutex
	limit int
	byID  map[string]*list.Element
	order *list.List // of string ids, oldest first
	items map[string]*storedResponse
}

func newResponseStore(limit int) *responseStore {
	return &responseStore{limit: limit, byID: map[string]*list.Element{}, order: list.New(),
		items: map[string]*storedResponse{}}
}

func (rs *responseStore) get(id string) *storedResponse {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.items[id]
}

func (rs *responseStore) put(id string, r *storedResponse) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if el, ok := rs.byID[id]; ok {
		rs.order.Remove(el)
	}
	rs.byID[id] = rs.order.PushBack(id)
	rs.items[id] = r
	for rs.order.Len() > rs.limit {
		old := rs.order.Remove(rs.order.Front()).(string)
		delete(rs.byID, old)
		delete(rs.items, old)
	}
}

// handleRetrieveResponse serves GET /v1/responses/{id}: a stored response
// as it was answered.
func handleRetrieveResponse(store *responseStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if sr := store.get(id); sr != nil {
			writeJSON(w, http.StatusOK, sr.body)
			return
		}
		writeError(w, errResponseNotFound(id))
	})
}

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
	if j.s.cfg.Reasoning == nil {
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
	b = appendString(b, args)
	b = append(b, `,"call_id":`...)
	b = appendString(b, responsesCallID(call))
	b = append(b, `,"name":`...)
	b = appendString(b, call.name)
	b = append(b, `,"type":"function_call","id":`...)
	b = appendString(b, functionItemID(g, k))
	b = append(b, `,"status":`...)
	b = appendString(b, status)
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
	b = appendString(b, reasoningItemID(g))
	b = append(b, `,"summary":[],"type":"reasoning","content":`...)
	if text == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `[{"text":`...)
		b = appendString(b, *text)
		b = append(b, `,"type":"reasoning_text"}]`...)
	}
	b = append(b, `,"encrypted_content":null,"status":`...)
	b = appendNullable(b, status)
	return append(b, '}')
}

// appendOutputText appends an output_text content part; logprobs is the
// raw value ("[]" or "null", as vLLM sends it in each event).
func appendOutputText(b []byte, text, logprobs string) []byte {
	b = append(b, `{"annotations":[],"text":`...)
	b = appendString(b, text)
	b = append(b, `,"type":"output_text","logprobs":`...)
	b = append(b, logprobs...)
	return append(b, '}')
}

// appendMessageItem appends a message output item (text nil: no content
// yet).
func appendMessageItem(b []byte, g *genRequest, text *string, status string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, messageItemID(g))
	b = append(b, `,"content":[`...)
	if text != nil {
		b = appendOutputText(b, *text, "null")
	}
	b = append(b, `],"role":"assistant","status":`...)
	b = appendString(b, status)
	return append(b, `,"type":"message"}`...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
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
	b = appendString(b, req.id)
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
		b = appendString(b, *req.instructions)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"metadata":`...)
	b = appendRaw(b, req.metadata, "null")
	b = append(b, `,"model":`...)
	b = appendString(b, g.model)
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
		b = appendString(b, *req.previousResponseID)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"prompt":null,"reasoning":`...)
	b = appendRaw(b, req.reasoning, "null")
	b = append(b, `,"service_tier":`...)
	b = appendString(b, req.serviceTier)
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"text":`...)
	b = appendRaw(b, req.text, "null")
	b = append(b, `,"top_logprobs":null,"truncation":`...)
	b = appendString(b, req.truncation)
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
	if len(out.calls) == 0 {
		return appendMessageItem(b, j.g, text, "completed")
	}
	if text != nil {
		b = appendMessageItem(b, j.g, text, "completed")
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
	writeJSON(w, http.StatusOK, j.finishResponse(rs.store))
}

func (rs responsesSurface) encoder(j *job) eventEncoder {
	return &responsesEncoder{j: j, store: rs.store}
}

// responseItem is the kind of the output item a Responses stream has open.
type responseItem uint8

const (
	itemNone responseItem = iota
	itemReasoning
	itemMessage
	itemFunction
)

// responsesEncoder writes vLLM's Responses event stream (its "simple"
// processor for non-Harmony models): response.created and
// response.in_progress at once; per output item output_item.added,
// content_part.added, one delta per token, then the text's done,
// content_part.done and output_item.done events; response.completed with
// the final response. Every event is "event: <type>\ndata: <json>\n\n" with
// a sequence_number counting from 0.
type responsesEncoder struct {
	j     *job
	store *responseStore
	seq   int
	open  responseItem
	index int    // output_index of the open item
	text  []byte // text (or arguments) of the open item so far
	calls int    // function calls started
}

// closeEvent ends an event whose JSON object has been written up to its
// last two fields, sequence_number and type.
func (e *responsesEncoder) closeEvent(b []byte, typ string) []byte {
	b = append(b, `"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	return append(b, "\"}\n\n"...)
}

func (e *responsesEncoder) begin(b []byte) []byte {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		b = appendEventHeader(b, typ)
		b = append(b, `{"response":`...)
		b = e.j.appendResponseObject(b, nil)
		b = append(b, ',')
		b = e.closeEvent(b, typ)
	}
	return b
}

// itemID is the id of the open output item.
func (e *responsesEncoder) itemID() string {
	switch e.open {
	case itemReasoning:
		return reasoningItemID(e.j.g)
	case itemFunction:
		return functionItemID(e.j.g, e.calls-1)
	}
	return messageItemID(e.j.g)
}

// openCall starts the function_call item of call k (the added event; its
// arguments arrive as function_call_arguments.delta events).
func (e *responsesEncoder) openCall(b []byte, k int) []byte {
	b = e.closeItem(b)
	e.open, e.calls = itemFunction, k+1
	e.text = e.text[:0]
	b = appendEventHeader(b, "response.output_item.added")
	b = append(b, `{"item":`...)
	b = appendFunctionCallItem(b, e.j.g, k, e.j.ch[0].calls.calls[k], "", "in_progress")
	return e.endWithIndex(b, "response.output_item.added")
}

// closeCall ends the open function_call item: arguments done, item done.
func (e *responsesEncoder) closeCall(b []byte) []byte {
	k := e.calls - 1
	call := e.j.ch[0].calls.calls[k]
	b = appendEventHeader(b, "response.function_call_arguments.done")
	b = append(b, `{"arguments":`...)
	b = appendString(b, string(e.text))
	b = append(b, `,"item_id":`...)
	b = appendString(b, functionItemID(e.j.g, k))
	b = append(b, `,"name":`...)
	b = appendString(b, call.name)
	b = e.endWithIndex(b, "response.function_call_arguments.done")
	b = appendEventHeader(b, "response.output_item.done")
	b = append(b, `{"item":`...)
	b = appendFunctionCallItem(b, e.j.g, k, call, string(e.text), "completed")
	b = e.endWithIndex(b, "response.output_item.done")
	e.open = itemNone
	e.index++
	return b
}

func (e *responsesEncoder) openItem(b []byte, kind responseItem) []byte {
	g := e.j.g
	e.open = kind
	e.text = e.text[:0]
	b = appendEventHeader(b, "response.output_item.added")
	b = append(b, `{"item":`...)
	if kind == itemReasoning {
		b = appendReasoningItem(b, g, nil, "in_progress")
	} else {
		b = appendMessageItem(b, g, nil, "in_progress")
	}
	b = e.endWithIndex(b, "response.output_item.added")

	b = appendEventHeader(b, "response.content_part.added")
	b = append(b, `{"content_index":0,"item_id":`...)
	b = appendString(b, e.itemID())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, `,"part":`...)
	if kind == itemReasoning {
		b = append(b, `{"text":"","type":"reasoning_text"}`...)
	} else {
		b = appendOutputText(b, "", "[]")
	}
	b = append(b, ',')
	return e.closeEvent(b, "response.content_part.added")
}

func (e *responsesEncoder) closeItem(b []byte) []byte {
	switch e.open {
	case itemNone:
		return b
	case itemFunction:
		return e.closeCall(b)
	}
	g := e.j.g
	text := string(e.text)
	doneType := "response.output_text.done"
	if e.open == itemReasoning {
		doneType = "response.reasoning_text.done"
	}
	b = appendEventHeader(b, doneType)
	b = append(b, `{"content_index":0,"item_id":`...)
	b = appendString(b, e.itemID())
	if e.open == itemMessage {
		b = append(b, `,"logprobs":[]`...)
	}
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, ',')
	b = e.closeEventWithText(b, doneType, text)

	b = appendEventHeader(b, "response.content_part.done")
	b = append(b, `{"content_index":0,"item_id":`...)
	b = appendString(b, e.itemID())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, `,"part":`...)
	if e.open == itemReasoning {
		b = append(b, `{"text":`...)
		b = appendString(b, text)
		b = append(b, `,"type":"reasoning_text"}`...)
	} else {
		b = appendOutputText(b, text, "null")
	}
	b = append(b, ',')
	b = e.closeEvent(b, "response.content_part.done")

	b = appendEventHeader(b, "response.output_item.done")
	b = append(b, `{"item":`...)
	if e.open == itemReasoning {
		b = appendReasoningItem(b, g, &text, "completed")
	} else {
		b = appendMessageItem(b, g, &text, "completed")
	}
	b = e.endWithIndex(b, "response.output_item.done")
	e.open = itemNone
	e.index++
	return b
}

// endWithIndex ends an event whose last fields are output_index,
// sequence_number and type.
func (e *responsesEncoder) endWithIndex(b []byte, typ string) []byte {
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, ',')
	return e.closeEvent(b, typ)
}

// closeEventWithText ends a done event whose last fields are
// sequence_number, text and type.
func (e *responsesEncoder) closeEventWithText(b []byte, typ, text string) []byte {
	b = append(b, `"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	b = append(b, `,"text":`...)
	b = appendString(b, text)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	return append(b, "\"}\n\n"...)
}

func (e *responsesEncoder) render(st *streamer, items []engine.OutputItem) {
	e.j.forEachToken(items, func(ch *choice, pos int) { st.buf = e.token(st.buf, ch, pos) })
}

// token appends the events of one delivered token.
func (e *responsesEncoder) token(b []byte, ch *choice, pos int) []byte {
	if ch.calls != nil {
		return e.renderCall(b, ch, pos)
	}
	text, reasoning := ch.plan.Segment(pos)
	if text == "" {
		return b
	}
	kind, typ, id := itemMessage, "response.output_text.delta", messageItemID(e.j.g)
	if reasoning && e.j.s.cfg.Reasoning != nil {
		kind, typ, id = itemReasoning, "response.reasoning_text.delta", reasoningItemID(e.j.g)
	}
	if e.open != kind {
		b = e.closeItem(b)
		b = e.openItem(b, kind)
	}
	e.text = append(e.text, text...)
	b = appendEventHeader(b, typ)
	b = append(b, `{"content_index":0,"delta":`...)
	b = appendString(b, text)
	b = append(b, `,"item_id":`...)
	b = appendString(b, id)
	if kind == itemMessage {
		b = append(b, `,"logprobs":[]`...)
	}
	return e.endWithIndex(b, typ)
}

// renderCall appends the events of position pos of a tool-call plan.
func (e *responsesEncoder) renderCall(b []byte, ch *choice, pos int) []byte {
	step := callStepAt(ch, pos, e.calls)
	if step.open {
		b = e.openCall(b, step.call)
	}
	if step.args == "" || e.open != itemFunction {
		return b
	}
	e.text = append(e.text, step.args...)
	b = appendEventHeader(b, "response.function_call_arguments.delta")
	b = append(b, `{"delta":`...)
	b = appendString(b, step.args)
	b = append(b, `,"item_id":`...)
	b = appendString(b, functionItemID(e.j.g, e.calls-1))
	return e.endWithIndex(b, "response.function_call_arguments.delta")
}

func (e *responsesEncoder) end(b []byte) []byte {
	b = e.closeItem(b)
	b = appendEventHeader(b, "response.completed")
	b = append(b, `{"response":`...)
	b = append(b, e.j.finishResponse(e.store)...)
	b = append(b, ',')
	return e.closeEvent(b, "response.completed")
}

// fail appends vLLM's error event (ResponseErrorEvent).
func (e *responsesEncoder) fail(b []byte, err *apiError) []byte {
	b = appendEventHeader(b, "error")
	b = append(b, `{"code":`...)
	b = appendString(b, err.Type)
	b = append(b, `,"message":`...)
	b = appendString(b, err.Message)
	b = append(b, `,"param":null,`...)
	return e.closeEvent(b, "error")
}
