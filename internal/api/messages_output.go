package api

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/zeebo/xxh3"
)

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
	b = jsonenc.AppendStringContent(b, g.baseID)
	b = append(b, `","type":"message","role":"assistant","content":[`...)
	n := 0
	if j.s.opts.Generation.Reasoning != nil && reasoning != "" {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonenc.AppendString(b, reasoning)
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
		b = jsonenc.AppendString(b, content)
		b = append(b, '}')
		n++
	}
	for _, c := range calls {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonenc.AppendString(b, c.ID)
		b = append(b, `,"name":`...)
		b = jsonenc.AppendString(b, c.Name)
		b = append(b, `,"input":`...)
		b = appendToolInput(b, c.Arguments)
		b = append(b, '}')
		n++
	}
	b = append(b, `],"model":`...)
	b = jsonenc.AppendString(b, g.model)
	b = append(b, `,"stop_reason":"`...)
	b = append(b, anthropicStopReason(finish)...)
	b = append(b, `","usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.messages.promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(j.completion), 10)
	b = append(b, "}}"...)
	httperr.Write(w, http.StatusOK, b)
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
	b = jsonenc.AppendString(b, call.id)
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, call.name)
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
	b = jsonenc.AppendString(b, step.args)
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
	b = jsonenc.AppendStringContent(b, g.baseID)
	b = append(b, `","content":[],"model":`...)
	b = jsonenc.AppendString(b, g.model)
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
	b = jsonenc.AppendString(b, text)
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
	b = jsonenc.AppendString(b, e.Message)
	return append(b, "}}\n\n"...)
}
