package anthropic

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
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
	case toolcall.FinishToolCalls:
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

func (MessagesSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	g := j.G
	ch := &j.Ch[0]
	reasoning, content := ch.Plan.Texts(ch.N)
	finish, _ := ch.Reasons()
	var calls []toolcall.ToolCallJSON
	if ch.Calls != nil {
		res := ch.Calls.Result(&ch.Plan, ch.N, ch.Reason())
		calls, finish, content = res.ToolCalls, res.Finish, ""
		if res.Content != nil {
			content = *res.Content
		}
	}
	b := make([]byte, 0, 256+len(reasoning)+len(content))
	b = append(b, `{"id":"chatcmpl-`...)
	b = jsonenc.AppendStringContent(b, g.BaseID)
	b = append(b, `","type":"message","role":"assistant","content":[`...)
	n := 0
	if j.S.Opts().Generation.Reasoning != nil && reasoning != "" {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonenc.AppendString(b, reasoning)
		b = append(b, `,"signature":"`...)
		b = append(b, anthropicSignature(g.BaseID)...)
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
	b = jsonenc.AppendString(b, g.Model)
	b = append(b, `,"stop_reason":"`...)
	b = append(b, anthropicStopReason(finish)...)
	b = append(b, `","usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(messagesReq(g).promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(j.Completion), 10)
	b = append(b, "}}"...)
	httperr.Write(w, http.StatusOK, b)
}

func (MessagesSurface) Encoder(j *pipeline.Job) pipeline.EventEncoder { return &messagesEncoder{j: j} }

// messagesEncoder writes vLLM's Anthropic stream (with message_start's
// message typed as Anthropic's API types it): message_start with the
// first token, one content block per run of thinking or text, deltas per
// token, then content_block_stop, message_delta and message_stop. Each
// event is "event: <type>\ndata: <json>\n\n"; the JSON omits unset fields
// as vLLM's pydantic dump (exclude_unset) does.
type messagesEncoder struct {
	j       *pipeline.Job
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
	return append(b, wire.CompactJSON([]byte(args))...)
}

// openToolUse starts the tool_use block of call k.
func (m *messagesEncoder) openToolUse(b []byte, k int) []byte {
	b = m.closeBlock(b)
	m.block, m.calls = "tool_use", k+1
	call := m.j.Ch[0].Calls.Calls[k]
	b = pipeline.AppendEventHeader(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","content_block":{"type":"tool_use","id":`...)
	b = jsonenc.AppendString(b, call.ID)
	b = append(b, `,"name":`...)
	b = jsonenc.AppendString(b, call.Name)
	b = append(b, `,"input":{}},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

// renderCall appends the events of position pos of a tool-call plan:
// input_json_delta per arguments token.
func (m *messagesEncoder) renderCall(b []byte, ch *pipeline.Choice, pos int) []byte {
	step := ch.Calls.StepAt(&ch.Plan, pos, m.calls)
	if step.Open {
		b = m.openToolUse(b, step.Call)
	}
	if step.Args == "" || m.block != "tool_use" {
		return b
	}
	b = pipeline.AppendEventHeader(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":`...)
	b = jsonenc.AppendString(b, step.Args)
	b = append(b, `},"index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	return append(b, "}\n\n"...)
}

func (m *messagesEncoder) Begin(b []byte) []byte { return b }

// messageStart writes message_start. Its message carries "type":"message"
// and "role":"assistant" as Anthropic's API sends them; vLLM's dump drops
// both (exclude_unset), and then the SDK's accumulated finalMessage() has
// neither, so its tool runner does not recognise a streamed tool_use reply
// (docs/http-api.md).
func (m *messagesEncoder) messageStart(b []byte) []byte {
	m.started = true
	g := m.j.G
	b = pipeline.AppendEventHeader(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":"chatcmpl-`...)
	b = jsonenc.AppendStringContent(b, g.BaseID)
	b = append(b, `","type":"message","role":"assistant","content":[],"model":`...)
	b = jsonenc.AppendString(b, g.Model)
	b = append(b, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(messagesReq(g).promptTokens), 10)
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
	b = pipeline.AppendEventHeader(b, "content_block_start")
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
		b = pipeline.AppendEventHeader(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"`...)
		b = append(b, anthropicSignature(m.j.G.BaseID)...)
		b = append(b, `"},"index":`...)
		b = strconv.AppendInt(b, int64(m.index), 10)
		b = append(b, "}\n\n"...)
	}
	b = pipeline.AppendEventHeader(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(m.index), 10)
	b = append(b, "}\n\n"...)
	m.block = ""
	m.index++
	return b
}

func (m *messagesEncoder) Render(st *pipeline.Streamer, items []engine.OutputItem) {
	m.j.ForEachToken(items, func(ch *pipeline.Choice, pos int) { st.Buf = m.token(st.Buf, ch, pos) })
}

// token appends the events of one delivered token.
func (m *messagesEncoder) token(b []byte, ch *pipeline.Choice, pos int) []byte {
	if !m.started {
		b = m.messageStart(b)
	}
	if ch.Calls != nil {
		return m.renderCall(b, ch, pos)
	}
	text, reasoning := ch.Plan.Segment(pos)
	if text == "" {
		return b
	}
	typ := "text"
	if reasoning {
		typ = "thinking"
	}
	b = m.openBlock(b, typ)
	b = pipeline.AppendEventHeader(b, "content_block_delta")
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

func (m *messagesEncoder) End(b []byte) []byte {
	if !m.started {
		b = m.messageStart(b)
	}
	b = m.closeBlock(b)
	ch := &m.j.Ch[0]
	finish, _ := ch.Reasons()
	if ch.Calls != nil {
		finish = ch.Calls.Finish(&ch.Plan, ch.N, ch.Reason())
	}
	b = pipeline.AppendEventHeader(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, anthropicStopReason(finish)...)
	b = append(b, `"},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(messagesReq(m.j.G).promptTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(m.j.Completion), 10)
	b = append(b, "}}\n\n"...)
	b = pipeline.AppendEventHeader(b, "message_stop")
	return append(b, `{"type":"message_stop"}`+"\n\n"...)
}

func (m *messagesEncoder) Fail(b []byte, e *wire.APIError) []byte {
	b = pipeline.AppendEventHeader(b, "error")
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, anthropicErrorType(e.Status)...)
	b = append(b, `","message":`...)
	b = jsonenc.AppendString(b, e.Message)
	return append(b, "}}\n\n"...)
}
