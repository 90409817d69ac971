package pipeline

import (
	"strconv"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/api/logprob"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// openAIEncoder writes the chat and completions chunks of a stream
// (docs/http-api.md): per choice a role chunk (chat), one chunk per token
// with visible text (or per pass with speculative decoding), the final
// chunk with finish_reason and the held last token, then the usage chunk
// when asked for and [DONE]. The hot path appends hand-written JSON to the
// streamer's buffer and allocates nothing per token.
type openAIEncoder struct {
	j  *Job
	st *Streamer // whose buffer the chunks are appended to (bind)

	prefix    []byte // `data: {"id":…,"model":…,"choices":[` (constant per request)
	reasonKey []byte // `{"reasoning":` or `{"reasoning_content":`
	lp        *logprob.Renderer
	promptTok int // prompt tokens over all prompts (usage)
	usageDone bool
	// perPass streams the tokens one pass delivers to a choice as one
	// chunk, as vLLM does with speculative decoding (several tokens per
	// engine step). Off without speculative decoding, where a pass
	// delivers one token per choice anyway, and with logprobs.
	perPass bool
	one     [1]uint32 // a single token as a slice, without allocating
}

func NewOpenAIEncoder(j *Job) EventEncoder {
	g := j.G
	e := &openAIEncoder{j: j, lp: NewLogprobRenderer(j), perPass: j.S.opts.Generation.PerPassChunks && !g.Logprobs}
	p := make([]byte, 0, 128+len(g.BaseID)+len(g.Model))
	p = append(p, `data: {"id":"`...)
	if g.Chat {
		p = append(p, "chatcmpl-"...)
	} else {
		p = append(p, "cmpl-"...)
	}
	p = jsonenc.AppendStringContent(p, g.BaseID)
	if g.Chat {
		p = append(p, `","object":"chat.completion.chunk","created":`...)
	} else {
		p = append(p, `","object":"text_completion","created":`...)
	}
	p = strconv.AppendInt(p, g.Created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, g.Model)
	p = append(p, `,"choices":[`...)
	e.prefix = p
	key := j.S.opts.Generation.ReasoningField
	if key == "" {
		key = settings.ReasoningFieldReasoning
	}
	e.reasonKey = jsonenc.AppendString([]byte(`{`), string(key))
	e.reasonKey = append(e.reasonKey, ':')
	for i := range g.Prompts {
		e.promptTok += len(g.Prompts[i].IDs)
	}
	return e
}

// bind makes the encoder append to st's buffer.
func (e *openAIEncoder) bind(st *Streamer) { e.st = st }

// Begin sends nothing before the first token.
func (e *openAIEncoder) Begin(b []byte) []byte { return b }

// Fail appends vLLM's mid-stream error event and [DONE].
func (e *openAIEncoder) Fail(b []byte, err *wire.APIError) []byte {
	b = err.AppendSSE(b)
	return append(b, SSEDone...)
}

// WorkerField is the top-level field of a chat or completions answer (the
// body, or a stream's usage chunk) that names the serving worker when it
// has an identity (settings.HTTPOptions.WorkerID).
const WorkerField = "mocker_worker"

// End appends the usage chunk (when asked for) and [DONE].
func (e *openAIEncoder) End(b []byte) []byte {
	if e.j.G.includeUsage && !e.usageDone {
		e.usageDone = true
		b = append(b, e.prefix...)
		b = append(b, `],"usage":`...)
		b = e.appendUsage(b, e.j.S.opts.HTTP.PromptTokensDetails)
		if id := e.j.S.opts.HTTP.WorkerID; id != "" {
			b = append(b, `,"`+WorkerField+`":`...)
			b = jsonenc.AppendString(b, id)
		}
		b = append(b, "}\n\n"...)
	}
	return append(b, SSEDone...)
}

// Render records a run of output items and appends their chunks.
func (e *openAIEncoder) Render(_ *Streamer, items []engine.OutputItem) {
	j := e.j
	for i := 0; i < len(items); i++ {
		it := &items[i]
		ch := j.Record(it)
		if it.Final {
			e.final(it.Choice, ch)
			continue
		}
		pos := ch.N - 1
		if j.G.Chat && !ch.Started {
			ch.Started = true
			e.roleChunk(it.Choice, ch)
		}
		if e.perPass && ch.Calls == nil {
			// A tool call's deltas stay one per token: each is a fragment
			// of the arguments string.
			i = e.renderPass(items, i, ch, pos)
			continue
		}
		if pos == len(ch.Plan.IDs)-1 {
			// The planned-last token travels in the final chunk, which
			// follows in the same pass.
			ch.held, ch.heldTok = true, it.Token
			continue
		}
		if pos >= len(ch.Plan.IDs) {
			continue // beyond the plan: never produced by the engine
		}
		if ch.Calls != nil {
			e.callChunk(it.Choice, ch, pos, it.Token, false)
			continue
		}
		e.token(it.Choice, ch, pos, it.Token)
	}
}

// token appends the chunk of one ordinary token at plan position pos.
func (e *openAIEncoder) token(idx int, ch *Choice, pos int, tok uint32) {
	text, reasoning := ch.Plan.Segment(pos)
	e.one[0] = tok
	if e.j.G.Chat {
		if text != "" {
			e.chatChunk(idx, ch, text, reasoning, e.one[:], false)
		}
	} else if text != "" || (e.j.G.Echo && !ch.Started) {
		e.completionChunk(idx, ch, text, e.one[:], false)
	}
}

// renderPass renders the tokens one pass delivered to a choice, starting
// at items[i] (already recorded, at plan position pos), as one chunk: the
// following items of the same choice with the same delivery time are
// recorded and joined to it. A run that holds the planned-last token waits
// whole for the final chunk. A run whose tokens change between reasoning
// and content is split where it changes, since a delta has one of them. It
// returns the index of the run's last item.
func (e *openAIEncoder) renderPass(items []engine.OutputItem, i int, ch *Choice, pos int) int {
	j := e.j
	it := &items[i]
	toks := []uint32{it.Token}
	for i+1 < len(items) && !items[i+1].Final && items[i+1].Choice == it.Choice && items[i+1].Time.Equal(it.Time) {
		i++
		j.Record(&items[i])
		toks = append(toks, items[i].Token)
	}
	last := len(ch.Plan.IDs) - 1
	if pos+len(toks)-1 >= last && pos <= last {
		toks = toks[:last-pos+1] // tokens beyond the plan are never produced
		ch.held, ch.heldRun, ch.heldFrom = true, toks, pos
		ch.heldTok = toks[len(toks)-1]
		return i
	}
	if pos > last {
		return i
	}
	for start := 0; start < len(toks); {
		text, reasoning := ch.Plan.Segment(pos + start)
		end := start + 1
		for ; end < len(toks); end++ {
			t, r := ch.Plan.Segment(pos + end)
			if r != reasoning {
				break
			}
			text += t
		}
		if j.G.Chat {
			if text != "" {
				e.chatChunk(it.Choice, ch, text, reasoning, toks[start:end], false)
			}
		} else if text != "" || (j.G.Echo && !ch.Started) {
			e.completionChunk(it.Choice, ch, text, toks[start:end], false)
		}
		start = end
	}
	return i
}

// heldRunText returns the text and tokens of a held last pass for the
// final chunk. In chat, tokens before the last change between reasoning
// and content go first in chunks of their own (a delta has one of them),
// so the final chunk carries the tokens of the last token's kind.
func (e *openAIEncoder) heldRunText(idx int, ch *Choice) (string, []uint32) {
	last := len(ch.Plan.IDs) - 1
	from := ch.heldFrom
	if e.j.G.Chat {
		for start := from; start <= last; {
			text, reasoning := ch.Plan.Segment(start)
			end := start + 1
			for ; end <= last; end++ {
				t, r := ch.Plan.Segment(end)
				if r != reasoning {
					break
				}
				text += t
			}
			if end > last {
				break // the last run goes in the final chunk
			}
			if text != "" {
				e.chatChunk(idx, ch, text, reasoning, ch.heldRun[start-ch.heldFrom:end-ch.heldFrom], false)
			}
			from = end
			start = end
		}
	}
	text := ""
	for p := from; p <= last; p++ {
		t, _ := ch.Plan.Segment(p)
		text += t
	}
	return text, ch.heldRun[from-ch.heldFrom:]
}

// final appends a choice's final chunk, carrying its held last token.
func (e *openAIEncoder) final(idx int, ch *Choice) {
	if ch.Fin.Rejection != nil {
		return // answered with an error event
	}
	if ch.Calls != nil {
		pos := -1
		if ch.held {
			pos = len(ch.Plan.IDs) - 1
		}
		e.callChunk(idx, ch, pos, ch.heldTok, true)
		return
	}
	var text string
	var reasoning bool
	toks := e.one[:]
	e.one[0] = ch.heldTok
	if ch.held {
		text, reasoning = ch.Plan.Segment(len(ch.Plan.IDs) - 1)
		if len(ch.heldRun) > 1 {
			text, toks = e.heldRunText(idx, ch)
		}
	}
	if e.j.G.Chat {
		e.chatChunk(idx, ch, text, reasoning, toks, true)
	} else {
		e.completionChunk(idx, ch, text, toks, true)
	}
}

// appendRunningUsage appends `,"usage":{…}` with the tokens generated so far.
func (e *openAIEncoder) appendRunningUsage(b []byte) []byte {
	b = append(b, `,"usage":`...)
	return e.appendUsage(b, false)
}

func (e *openAIEncoder) appendUsage(b []byte, details bool) []byte {
	c := e.j.Completion
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(e.promptTok), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(e.promptTok+c), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	if details {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(e.j.Ch[0].Fin.CachedTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// roleChunk appends the chat role chunk of a choice, sent when its first
// token arrives.
func (e *openAIEncoder) roleChunk(idx int, ch *Choice) {
	b := append(e.st.Buf, e.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	if e.j.G.continuousUsage {
		// The token that triggers the role chunk is already counted; the
		// role chunk reports the tokens before it.
		e.j.Completion--
		b = e.appendRunningUsage(b)
		e.j.Completion++
	}
	if e.j.G.ReturnIDs {
		b = append(b, `,"prompt_token_ids":`...)
		b = wire.AppendUint32s(b, e.j.G.Prompts[ch.Prompt].IDs)
	}
	e.st.Buf = append(b, "}\n\n"...)
}

// chatChunk appends a content chunk (final false) or the final chunk of a
// chat choice. text "" on a final chunk gives the empty delta {}.
func (e *openAIEncoder) chatChunk(idx int, ch *Choice, text string, reasoning bool, toks []uint32, final bool) {
	b := append(e.st.Buf, e.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":`...)
	switch {
	case text == "":
		b = append(b, "{}"...)
	case reasoning:
		b = append(b, e.reasonKey...)
		b = jsonenc.AppendString(b, text)
		b = append(b, '}')
	default:
		b = append(b, `{"content":`...)
		b = jsonenc.AppendString(b, text)
		b = append(b, '}')
	}
	e.st.Buf = e.appendChunkTail(b, ch, toks, final)
}

// callChunk appends the chunk of position pos of a tool-call choice (pos
// -1: a final chunk without a token), or nothing when the position sends
// no delta and is not the final one.
func (e *openAIEncoder) callChunk(idx int, ch *Choice, pos int, tok uint32, final bool) {
	start := len(e.st.Buf)
	b := append(e.st.Buf, e.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":`...)
	ok := false
	if pos >= 0 {
		b, ok = ch.Calls.AppendCallDelta(b, &ch.Plan, pos)
	}
	if !ok {
		if !final {
			e.st.Buf = b[:start]
			return
		}
		b = append(b, "{}"...)
	}
	e.one[0] = tok
	e.st.Buf = e.appendChunkTail(b, ch, e.one[:], final)
}

// appendChunkTail appends what follows a chat chunk's delta: logprobs,
// finish_reason (and stop_reason), token ids, usage, and the event's end.
func (e *openAIEncoder) appendChunkTail(b []byte, ch *Choice, toks []uint32, final bool) []byte {
	g := e.j.G
	hasTok := !final || ch.held
	b = append(b, `,"logprobs":`...)
	if g.Logprobs && hasTok {
		b = append(b, `{"content":[`...)
		for i, tok := range toks {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.lp.AppendChatEntry(b, tok)
		}
		b = append(b, "]}"...)
	} else {
		b = append(b, "null"...)
	}
	if final {
		b = e.appendFinish(b, ch)
	} else {
		b = append(b, `,"finish_reason":null`...)
	}
	if g.ReturnIDs {
		b = append(b, `,"token_ids":[`...)
		if hasTok {
			b = appendTokenIDs(b, toks)
		}
		b = append(b, ']')
	}
	b = append(b, "}]"...)
	if g.continuousUsage {
		b = e.appendRunningUsage(b)
	}
	return append(b, "}\n\n"...)
}

// appendFinish appends `,"finish_reason":…,"stop_reason":…`.
func (e *openAIEncoder) appendFinish(b []byte, ch *Choice) []byte {
	reason, stop := ch.Reasons()
	if ch.Calls != nil {
		reason = ch.Calls.Finish(&ch.Plan, ch.N, ch.Reason())
	}
	b = append(b, `,"finish_reason":`...)
	b = jsonenc.AppendString(b, string(reason))
	b = append(b, `,"stop_reason":`...)
	switch stop.Kind {
	case plan.StopString:
		b = jsonenc.AppendString(b, stop.String)
	case plan.StopTokenID:
		b = strconv.AppendUint(b, uint64(stop.TokenID), 10)
	default:
		b = append(b, "null"...)
	}
	return b
}

// completionChunk appends a completions chunk: one per
// token with visible text, the first one prefixed with the echoed prompt,
// the final one with finish_reason and stop_reason.
func (e *openAIEncoder) completionChunk(idx int, ch *Choice, text string, toks []uint32, final bool) {
	g := e.j.G
	hasTok := !final || ch.held
	first := !ch.Started
	ch.Started = true
	b := append(e.st.Buf, e.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"text":"`...)
	if first && g.Echo {
		echo := g.Prompts[ch.Prompt].Text
		b = jsonenc.AppendStringContent(b, echo)
		ch.offset += utf8.RuneCountInString(echo)
	}
	b = jsonenc.AppendStringContent(b, text)
	b = append(b, `","logprobs":`...)
	if g.Logprobs && hasTok {
		// Per-pass chunks are off with logprobs: one token here.
		b = e.lp.AppendCompletionOne(b, toks[0], ch.offset)
	} else {
		b = append(b, "null"...)
	}
	ch.offset += utf8.RuneCountInString(text)
	if final {
		b = e.appendFinish(b, ch)
	} else {
		b = append(b, `,"finish_reason":null,"stop_reason":null`...)
	}
	if g.ReturnIDs {
		if first {
			b = append(b, `,"prompt_token_ids":`...)
			b = wire.AppendUint32s(b, g.Prompts[ch.Prompt].IDs)
		}
		b = append(b, `,"token_ids":[`...)
		if hasTok {
			b = appendTokenIDs(b, toks)
		}
		b = append(b, ']')
	}
	b = append(b, "}]"...)
	if g.continuousUsage {
		b = e.appendRunningUsage(b)
	} else {
		b = append(b, `,"usage":null`...)
	}
	e.st.Buf = append(b, "}\n\n"...)
}

// appendTokenIDs appends ids separated by commas.
func appendTokenIDs(b []byte, ids []uint32) []byte {
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return b
}
