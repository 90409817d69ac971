package api

import (
	"strconv"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

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
	b = jsonenc.AppendString(b, string(e.text))
	b = append(b, `,"item_id":`...)
	b = jsonenc.AppendString(b, functionItemID(e.j.g, k))
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, call.name)
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
		b = appendMessageItem(b, g, nil, nil, "in_progress")
	}
	b = e.endWithIndex(b, "response.output_item.added")

	b = appendEventHeader(b, "response.content_part.added")
	b = append(b, `{"content_index":0,"item_id":`...)
	b = jsonenc.AppendString(b, e.itemID())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, `,"part":`...)
	if kind == itemReasoning {
		b = append(b, `{"text":"","type":"reasoning_text"}`...)
	} else {
		b = appendOutputText(b, "", []byte("[]"))
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
	b = jsonenc.AppendString(b, e.itemID())
	if e.open == itemMessage {
		b = append(b, `,"logprobs":`...)
		b = e.appendEventLogprobs(b, e.j.ch[0].contentTokens())
	}
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, ',')
	b = e.closeEventWithText(b, doneType, text)

	b = appendEventHeader(b, "response.content_part.done")
	b = append(b, `{"content_index":0,"item_id":`...)
	b = jsonenc.AppendString(b, e.itemID())
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(e.index), 10)
	b = append(b, `,"part":`...)
	if e.open == itemReasoning {
		b = append(b, `{"text":`...)
		b = jsonenc.AppendString(b, text)
		b = append(b, `,"type":"reasoning_text"}`...)
	} else {
		b = appendOutputText(b, text, []byte("null"))
	}
	b = append(b, ',')
	b = e.closeEvent(b, "response.content_part.done")

	b = appendEventHeader(b, "response.output_item.done")
	b = append(b, `{"item":`...)
	if e.open == itemReasoning {
		b = appendReasoningItem(b, g, &text, "completed")
	} else {
		b = appendMessageItem(b, g, &text, []byte("null"), "completed")
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
	b = jsonenc.AppendString(b, text)
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
	if reasoning && e.j.s.opts.Generation.Reasoning != nil {
		kind, typ, id = itemReasoning, "response.reasoning_text.delta", reasoningItemID(e.j.g)
	}
	if e.open != kind {
		b = e.closeItem(b)
		b = e.openItem(b, kind)
	}
	e.text = append(e.text, text...)
	b = appendEventHeader(b, typ)
	b = append(b, `{"content_index":0,"delta":`...)
	b = jsonenc.AppendString(b, text)
	b = append(b, `,"item_id":`...)
	b = jsonenc.AppendString(b, id)
	if kind == itemMessage {
		b = append(b, `,"logprobs":`...)
		b = e.appendEventLogprobs(b, ch.plan.IDs[pos:pos+1])
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
	b = jsonenc.AppendString(b, step.args)
	b = append(b, `,"item_id":`...)
	b = jsonenc.AppendString(b, functionItemID(e.j.g, e.calls-1))
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
	b = jsonenc.AppendString(b, err.Type)
	b = append(b, `,"message":`...)
	b = jsonenc.AppendString(b, err.Message)
	b = append(b, `,"param":null,`...)
	return e.closeEvent(b, "error")
}

// appendEventLogprobs appends an event's logprobs: the entries of ids when
// the request asked for them, else [] (what vLLM sends without them).
func (e *responsesEncoder) appendEventLogprobs(b []byte, ids []uint32) []byte {
	if !e.j.g.logprobs {
		return append(b, "[]"...)
	}
	return e.j.appendResponsesLogprobs(b, ids, false)
}
