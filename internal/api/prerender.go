package api

import (
	"errors"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// nextChunk is a stream's next content chunk, rendered and framed by its
// delivery shard after the batch that wrote the stream's previous one, in
// the time between passes. At 10,000 streams the rendering (the plan, its
// texts, the chunk prefix, the JSON) is about half of what a stream costs
// beyond its write; rendered ahead it delays no write, and the next pass
// only checks that its token is the one foreseen and writes the bytes.
//
// Only the common case is rendered ahead: a chat stream with one choice,
// started, whose next token is an ordinary planned token with text, not its
// last (which travels in the final chunk) — no tool call, logprobs,
// continuous usage, per-pass chunks or other surface. Anything else, or a
// token that is not the one foreseen, takes the ordinary path (emit).
type nextChunk struct {
	frame []byte // the framed chunk; empty when nothing is rendered ahead
	pos   int    // the plan position of its token
	tok   uint32
	due   bool // delivered in this batch: render the next one after it
}

// prepareNext renders the stream's next chunk ahead when it can. The shard
// calls it after the batch that delivered the stream, with st.buf its
// empty scratch: rendering then delays no other stream's write.
func (st *streamer) prepareNext() {
	st.next.frame = st.next.frame[:0]
	j := st.j
	g := j.g
	e, ok := st.enc.(*openAIEncoder)
	if !ok || !g.chat || e.perPass || g.logprobs || g.continuousUsage || len(j.ch) != 1 {
		return
	}
	ch := &j.ch[0]
	pos := ch.n // the next token's position
	if !ch.started || ch.done || ch.calls != nil || pos >= len(ch.plan.IDs)-1 {
		return
	}
	text, reasoning := ch.plan.Segment(pos)
	if text == "" {
		return
	}
	e.one[0] = ch.plan.IDs[pos]
	e.chatChunk(0, ch, text, reasoning, e.one[:], false)
	st.next.frame = appendChunk(st.next.frame, st.buf)
	st.buf = st.buf[:0]
	st.next.pos, st.next.tok = pos, e.one[0]
}

// emitNext delivers items with the chunk rendered ahead when they are
// exactly its token; ok false means they are not and nothing was done.
// over has emit's meaning.
func (st *streamer) emitNext(items []engine.OutputItem) (over, ok bool) {
	next := &st.next
	if len(next.frame) == 0 || len(items) != 1 {
		return false, false
	}
	it := &items[0]
	if it.Final || it.Choice != 0 || it.Token != next.tok || st.j.ch[0].n != next.pos {
		return false, false
	}
	st.j.record(it)
	if err := st.writeFrame(next.frame); err != nil {
		if errors.Is(err, errWouldBlock) {
			st.pendingItems = append(st.pendingItems[:0], items...)
			st.pendingOver = false
		}
		return true, true
	}
	next.frame = next.frame[:0]
	st.shard.renderedAhead.Add(1)
	st.observeLag(items)
	return false, true
}
