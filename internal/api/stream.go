package api

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/sockwrite"
)

// sseWriteTimeout bounds every SSE write, so a client that stops reading
// cannot hold a handler (and its engine work) forever (Server.writeTimeout;
// tests shorten it).
const sseWriteTimeout = 60 * time.Second

const sseDone = "data: [DONE]\n\n"

// streamer renders a job's output items as SSE events (docs/http-api.md). All
// events of one drain of the output queue are appended to one reused buffer
// and written with one Write and one Flush; the hot path uses hand-written
// JSON and allocates nothing per token.
type streamer struct {
	j   *job
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte

	prefix    []byte // `data: {"id":…,"model":…,"choices":[` (constant per request)
	reasonKey []byte // `{"reasoning":` or `{"reasoning_content":`
	lp        *logprobRenderer
	promptTok int // prompt tokens over all prompts (usage)
	usageDone bool
	armed     time.Time // when the write deadline was last set
	delivered int       // tokens rendered so far (mid-stream faults)
	streamWriteState
	// perPass streams the tokens one pass delivers to a choice as one
	// chunk, as vLLM does with speculative decoding (several tokens per
	// engine step). Off without speculative decoding, where a pass
	// delivers one token per choice anyway, and with logprobs.
	perPass bool
	one     [1]uint32 // a single token as a slice, without allocating

	enc eventEncoder // another surface's events; nil = chat/completions chunks

	// Delivery by a shard (delivery.go) through line, the request's
	// connection opened for non-blocking writes (held by value, so the
	// write path follows one pointer less). mu is held by whoever delivers the stream
	// (its shard, or its handler taking it back) and guards mode; done is
	// closed when the shard lets go of the stream.
	line  sockwrite.Conn
	shard *deliveryShard
	mu    sync.Mutex
	mode  deliveryMode
	done  chan struct{}
	// A client whose socket was full when its shard wrote: the bytes not
	// written yet, the items they carry (their lag is observed once they
	// are written) and whether they end the stream.
	pending      []byte
	pendingItems []engine.OutputItem
	pendingOver  bool
	// next is the stream's next chunk, rendered ahead (prerender.go).
	next nextChunk
}

// eventEncoder renders a streamed job in another API's SSE format
// (Responses, Anthropic Messages) over the same streaming loop as chat.
type eventEncoder interface {
	// begin appends the events sent with the headers, before any token.
	begin(b []byte) []byte
	// render records a run of output items (job.record) and appends
	// their events.
	render(st *streamer, items []engine.OutputItem)
	// end appends the closing events once every sequence has finished.
	end(b []byte) []byte
	// fail appends an error event that ends the stream.
	fail(b []byte, e *apiError) []byte
}

// appendFailure appends the events that end a stream with an error.
func (st *streamer) appendFailure(b []byte, e *apiError) []byte {
	if st.enc != nil {
		return st.enc.fail(b, e)
	}
	b = e.appendSSE(b)
	return append(b, sseDone...)
}

func newStreamer(j *job, w http.ResponseWriter) *streamer {
	g := j.g
	// buf starts small: streams delivered by a shard render into the
	// shard's buffer, so this one holds only the first events.
	st := &streamer{j: j, w: w, rc: http.NewResponseController(w), lp: j.logprobRenderer(),
		buf: make([]byte, 0, 512)}
	st.perPass = j.s.opts.Generation.PerPassChunks && !g.logprobs
	p := make([]byte, 0, 128+len(g.baseID)+len(g.model))
	p = append(p, `data: {"id":"`...)
	if g.chat {
		p = append(p, "chatcmpl-"...)
	} else {
		p = append(p, "cmpl-"...)
	}
	p = appendStringContent(p, g.baseID)
	if g.chat {
		p = append(p, `","object":"chat.completion.chunk","created":`...)
	} else {
		p = append(p, `","object":"text_completion","created":`...)
	}
	p = strconv.AppendInt(p, g.created, 10)
	p = append(p, `,"model":`...)
	p = appendString(p, g.model)
	p = append(p, `,"choices":[`...)
	st.prefix = p
	key := j.s.opts.Generation.ReasoningField
	if key == "" {
		key = ReasoningFieldReasoning
	}
	st.reasonKey = appendString([]byte(`{`), string(key))
	st.reasonKey = append(st.reasonKey, ':')
	for i := range g.prompts {
		st.promptTok += len(g.prompts[i].ids)
	}
	return st
}

// stream sends the SSE response of a submitted job: headers at once, then
// events as the engine delivers tokens, then the usage chunk and [DONE]. A
// mid-stream fault (j.fault) strikes once After tokens have been written.
// enc renders another surface's events (nil: chat/completions chunks).
func (j *job) stream(w http.ResponseWriter, r *http.Request, enc eventEncoder) {
	st := newStreamer(j, w)
	st.enc = enc
	defer st.rc.SetWriteDeadline(time.Time{}) // the connection may serve more requests
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			j.s.log.Error("panic while streaming", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			st.buf = st.appendFailure(st.buf[:0], errInternal)
			_ = st.flush()
		}
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if j.fault.Kind == faults.Truncate {
		h.Set("Connection", "close") // the stream ends with its connection
	}
	w.WriteHeader(http.StatusOK)
	if enc != nil {
		st.buf = enc.begin(st.buf)
	}
	if st.flush() != nil {
		return
	}
	if j.fault.Kind != "" && j.fault.After == 0 && st.strike(r) {
		return
	}
	ctx := r.Context()
	if j.fault.Kind == "" && openRawLine(&st.line, r) && !st.deliverByShard(ctx) {
		return
	}
	// Delivered from here by this goroutine: from the start, or after
	// the shard handed back a slow client's stream.
	j.s.stuck.add(st)
	defer j.s.stuck.remove(st)
	if st.pending != nil {
		if !st.writePending() {
			return
		}
		if st.abandoned.Load() {
			st.endAbandoned()
			return
		}
	}
	for {
		select {
		case <-j.out.Ready():
		case <-ctx.Done():
			st.endByContext(ctx)
			return // release cancels the engine work
		}
		j.items = j.out.Drain(j.items)
		for batch := j.items; len(batch) > 0; {
			part := batch[:st.cut(batch)]
			batch = batch[len(part):]
			if st.emit(part) {
				return
			}
			if st.abandoned.Load() {
				st.endAbandoned()
				return
			}
			if j.fault.Kind != "" && st.delivered >= j.fault.After && st.strike(r) {
				return
			}
		}
	}
}

// endByContext ends a stream whose request context ended: a final error
// event when the server is shutting down, nothing when the client left.
func (st *streamer) endByContext(ctx context.Context) {
	if e := ctxError(ctx); e != nil {
		st.buf = st.appendFailure(st.buf[:0], e)
		_ = st.flush()
	}
}

// emit renders and writes one run of output items; true means the stream
// is over (finished, rejected, or the write failed).
func (st *streamer) emit(items []engine.OutputItem) bool {
	j := st.j
	st.render(items)
	finished := j.remaining == 0 || j.rejected > 0
	switch {
	case j.rejected > 0:
		st.buf = st.appendFailure(st.buf, j.rejectionError())
	case finished && j.fault.Kind != "" && j.fault.Kind != faults.Stall:
		// The output ended before the fault's token: the fault replaces
		// the normal end of the stream.
		if st.flush() != nil {
			return true
		}
		st.delivered = max(st.delivered, j.fault.After)
		return false
	case finished:
		st.finish()
	}
	if len(st.buf) == 0 && !finished {
		// Only tokens without visible text: nothing to send, so they
		// count as delivered now.
		st.observeLag(items)
		return false
	}
	if err := st.flush(); err != nil {
		if errors.Is(err, errWouldBlock) {
			st.pendingItems = append(st.pendingItems[:0], items...)
			st.pendingOver = finished
		}
		return true
	}
	st.observeLag(items)
	return finished
}

// deliverByShard gives the stream to a delivery shard and waits until the
// shard lets go of it or the request context ends. True means the shard
// handed it back with bytes pending (its client is slow) and this
// goroutine delivers the rest; false means the stream is over.
func (st *streamer) deliverByShard(ctx context.Context) bool {
	// The shard's writes never wait, so they need no deadline (an
	// expired one would fail them); a handed-back stream arms its own.
	if err := st.rc.SetWriteDeadline(time.Time{}); err != nil {
		return false
	}
	st.armed = time.Time{}
	st.buf = nil // the shard renders into its own buffer
	st.shard = st.j.s.delivery.pick()
	st.done = make(chan struct{})
	st.mode = deliveredByShard
	st.shard.add(st)
	select {
	case <-st.done:
	case <-ctx.Done():
	}
	st.mu.Lock()
	mode := st.mode
	if mode == deliveredByShard {
		st.mode = takenBack
	}
	st.mu.Unlock()
	if mode == deliveredByShard {
		st.shard.remove(st)
		st.endByContext(ctx)
		return false
	}
	<-st.done // the shard has finished with the stream
	return mode == handedOver
}

// writePending writes what the shard could not, waiting for the client
// under the write deadline (the stuck-reader watcher sees it waiting).
// True means the stream goes on.
func (st *streamer) writePending() bool {
	now := time.Now()
	if err := st.rc.SetWriteDeadline(now.Add(st.j.s.writeTimeout)); err != nil {
		return false
	}
	st.armed = now
	st.writing.Store(now.UnixNano())
	_, err := st.line.TCP().Write(st.pending)
	st.writing.Store(0)
	st.pending = nil
	if err != nil {
		return false
	}
	st.observeLag(st.pendingItems)
	st.pendingItems = nil
	return !st.pendingOver
}

// cut returns how many of items to emit before the pending fault strikes:
// all of them, or up to the token that completes fault.After.
func (st *streamer) cut(items []engine.OutputItem) int {
	f := st.j.fault
	if f.Kind == "" {
		st.delivered += countTokens(items)
		return len(items)
	}
	need := f.After - st.delivered
	for i := range items {
		if !items[i].Final {
			need--
			st.delivered++
			if need <= 0 {
				return i + 1
			}
		}
	}
	return len(items)
}

func countTokens(items []engine.OutputItem) int {
	n := 0
	for i := range items {
		if !items[i].Final {
			n++
		}
	}
	return n
}

// strike carries out the pending mid-stream fault; true means the stream
// is over. A stall pauses and then lets the stream resume.
func (st *streamer) strike(r *http.Request) bool {
	j := st.j
	f := j.fault
	j.fault = faults.Fault{}
	switch f.Kind {
	case faults.Stall:
		if !sleepCtx(r.Context(), f.Duration) {
			st.endByContext(r.Context())
			return true
		}
		return false
	case faults.StreamError:
		st.buf = st.appendFailure(st.buf[:0], errInjectedStream)
		_ = st.flush()
	case faults.Reset:
		resetConnection(st.w)
	case faults.Truncate:
		// Returning ends the body without [DONE]; Connection: close (set
		// with the headers) closes the connection.
	}
	return true
}

// errInjectedStream is the error event of the stream_error fault, in the
// form vLLM emits for an error inside a 200 stream.
var errInjectedStream = &apiError{Status: http.StatusInternalServerError, Type: typeInternal,
	Message: "Internal Server Error (injected stream_error fault)"}

// endAbandoned finishes a stream the stuck-reader watcher gave up on: the
// tokens produced until then, an error event and [DONE].
func (st *streamer) endAbandoned() {
	j := st.j
	j.items = j.out.Drain(j.items)
	st.render(j.items)
	e := &apiError{Status: http.StatusRequestTimeout, Type: typeRequestTimeout,
		Message: "The client stopped reading: " + strconv.Itoa(j.s.opts.HTTP.MaxUnflushedTokens) +
			" or more generated tokens were left unread, so the request was aborted."}
	st.buf = st.appendFailure(st.buf, e)
	_ = st.flush()
}

// observeLag reports, once per token of a flushed drain, how late the
// flush was against the token's modeled delivery time.
func (st *streamer) observeLag(items []engine.OutputItem) {
	obs := st.j.s.lagObs
	if obs == nil {
		return
	}
	now := time.Now()
	rank := st.j.rank
	for i := range items {
		if !items[i].Final {
			lag := now.Sub(items[i].Time).Seconds()
			if st.mode == deliveredByShard {
				// Measured now, observed after the shard's batch, so
				// the histogram's work does not delay the next writes.
				st.shard.lags = append(st.shard.lags, rankLag{rank, lag})
				continue
			}
			obs.ObserveDeliveryLag(rank, lag)
		}
	}
}

// deadlineRefresh is how often flush re-arms the write deadline: re-arming
// a net.Conn deadline costs a runtime timer update, so a busy stream does it
// at most once per interval and every write stays bounded by
// sseWriteTimeout minus at most this much.
const deadlineRefresh = time.Second

// flush writes the buffered events under a write deadline and flushes them
// to the client.
func (st *streamer) flush() error {
	if st.mode == deliveredByShard {
		return st.flushRaw()
	}
	now := time.Now()
	if now.Sub(st.armed) >= deadlineRefresh {
		if err := st.rc.SetWriteDeadline(now.Add(st.j.s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		st.armed = now
	}
	// The stuck-reader watcher looks at how long a write has been blocked.
	st.writing.Store(now.UnixNano())
	defer st.writing.Store(0)
	if len(st.buf) > 0 {
		_, err := st.w.Write(st.buf)
		st.buf = st.buf[:0]
		if err != nil {
			return err
		}
	}
	if err := st.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// flushRaw writes the buffered events as one HTTP chunk straight to the
// connection, without waiting (delivery.go). errWouldBlock means the
// client's socket is full and st.pending holds the rest.
func (st *streamer) flushRaw() error {
	if len(st.buf) == 0 {
		return nil
	}
	sh := st.shard
	sh.frame = appendChunk(sh.frame[:0], st.buf)
	st.buf = st.buf[:0]
	return st.writeFrame(sh.frame)
}

// writeFrame writes one framed chunk without waiting; errWouldBlock means
// st.pending holds the part the socket did not take.
func (st *streamer) writeFrame(frame []byte) error {
	n, err := st.line.TryWrite(frame)
	if err != nil {
		return err
	}
	if n < len(frame) {
		st.pending = append([]byte(nil), frame[n:]...)
		return errWouldBlock
	}
	return nil
}

// render appends the events of a batch of output items.
func (st *streamer) render(items []engine.OutputItem) {
	if st.enc != nil {
		st.enc.render(st, items)
		return
	}
	j := st.j
	for i := 0; i < len(items); i++ {
		it := &items[i]
		ch := j.record(it)
		if it.Final {
			st.final(it.Choice, ch)
			continue
		}
		pos := ch.n - 1
		if j.g.chat && !ch.started {
			ch.started = true
			st.roleChunk(it.Choice, ch)
		}
		if st.perPass && ch.calls == nil {
			// A tool call's deltas stay one per token: each is a fragment
			// of the arguments string.
			i = st.renderPass(items, i, ch, pos)
			continue
		}
		if pos == len(ch.plan.IDs)-1 {
			// The planned-last token travels in the final chunk, which
			// follows in the same pass.
			ch.held, ch.heldTok = true, it.Token
			continue
		}
		if pos >= len(ch.plan.IDs) {
			continue // beyond the plan: never produced by the engine
		}
		if ch.calls != nil {
			st.callChunk(it.Choice, ch, pos, it.Token, false)
			continue
		}
		text, reasoning := ch.plan.Segment(pos)
		st.one[0] = it.Token
		if j.g.chat {
			if text != "" {
				st.chatChunk(it.Choice, ch, text, reasoning, st.one[:], false)
			}
		} else if text != "" || (j.g.echo && !ch.started) {
			st.completionChunk(it.Choice, ch, text, st.one[:], false)
		}
	}
}

// renderPass renders the tokens one pass delivered to a choice, starting
// at items[i] (already recorded, at plan position pos), as one chunk: the
// following items of the same choice with the same delivery time are
// recorded and joined to it. A run that holds the planned-last token waits
// whole for the final chunk. A run whose tokens change between reasoning
// and content is split where it changes, since a delta has one of them. It
// returns the index of the run's last item.
func (st *streamer) renderPass(items []engine.OutputItem, i int, ch *choice, pos int) int {
	j := st.j
	it := &items[i]
	toks := []uint32{it.Token}
	for i+1 < len(items) && !items[i+1].Final && items[i+1].Choice == it.Choice && items[i+1].Time.Equal(it.Time) {
		i++
		j.record(&items[i])
		toks = append(toks, items[i].Token)
	}
	last := len(ch.plan.IDs) - 1
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
		text, reasoning := ch.plan.Segment(pos + start)
		end := start + 1
		for ; end < len(toks); end++ {
			t, r := ch.plan.Segment(pos + end)
			if r != reasoning {
				break
			}
			text += t
		}
		if j.g.chat {
			if text != "" {
				st.chatChunk(it.Choice, ch, text, reasoning, toks[start:end], false)
			}
		} else if text != "" || (j.g.echo && !ch.started) {
			st.completionChunk(it.Choice, ch, text, toks[start:end], false)
		}
		start = end
	}
	return i
}

// heldRunText returns the text and tokens of a held last pass for the
// final chunk. In chat, tokens before the last change between reasoning
// and content go first in chunks of their own (a delta has one of them),
// so the final chunk carries the tokens of the last token's kind.
func (st *streamer) heldRunText(idx int, ch *choice) (string, []uint32) {
	last := len(ch.plan.IDs) - 1
	from := ch.heldFrom
	if st.j.g.chat {
		for start := from; start <= last; {
			text, reasoning := ch.plan.Segment(start)
			end := start + 1
			for ; end <= last; end++ {
				t, r := ch.plan.Segment(end)
				if r != reasoning {
					break
				}
				text += t
			}
			if end > last {
				break // the last run goes in the final chunk
			}
			if text != "" {
				st.chatChunk(idx, ch, text, reasoning, ch.heldRun[start-ch.heldFrom:end-ch.heldFrom], false)
			}
			from = end
			start = end
		}
	}
	text := ""
	for p := from; p <= last; p++ {
		t, _ := ch.plan.Segment(p)
		text += t
	}
	return text, ch.heldRun[from-ch.heldFrom:]
}

// final appends a choice's final chunk, carrying its held last token.
func (st *streamer) final(idx int, ch *choice) {
	if ch.fin.Rejection != nil {
		return // answered with an error event
	}
	if ch.calls != nil {
		pos := -1
		if ch.held {
			pos = len(ch.plan.IDs) - 1
		}
		st.callChunk(idx, ch, pos, ch.heldTok, true)
		return
	}
	var text string
	var reasoning bool
	toks := st.one[:]
	st.one[0] = ch.heldTok
	if ch.held {
		text, reasoning = ch.plan.Segment(len(ch.plan.IDs) - 1)
		if len(ch.heldRun) > 1 {
			text, toks = st.heldRunText(idx, ch)
		}
	}
	if st.j.g.chat {
		st.chatChunk(idx, ch, text, reasoning, toks, true)
	} else {
		st.completionChunk(idx, ch, text, toks, true)
	}
}

// appendRunningUsage appends `,"usage":{…}` with the tokens generated so far.
func (st *streamer) appendRunningUsage(b []byte) []byte {
	b = append(b, `,"usage":`...)
	return st.appendUsage(b, false)
}

func (st *streamer) appendUsage(b []byte, details bool) []byte {
	c := st.j.completion
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(st.promptTok), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(st.promptTok+c), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	if details {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(st.j.ch[0].fin.CachedTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// roleChunk appends the chat role chunk of a choice, sent when its first
// token arrives.
func (st *streamer) roleChunk(idx int, ch *choice) {
	b := append(st.buf, st.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	if st.j.g.continuousUsage {
		// The token that triggers the role chunk is already counted; the
		// role chunk reports the tokens before it.
		st.j.completion--
		b = st.appendRunningUsage(b)
		st.j.completion++
	}
	if st.j.g.returnIDs {
		b = append(b, `,"prompt_token_ids":`...)
		b = appendUint32s(b, st.j.g.prompts[ch.prompt].ids)
	}
	st.buf = append(b, "}\n\n"...)
}

// chatChunk appends a content chunk (final false) or the final chunk of a
// chat choice. text "" on a final chunk gives the empty delta {}.
func (st *streamer) chatChunk(idx int, ch *choice, text string, reasoning bool, toks []uint32, final bool) {
	b := append(st.buf, st.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":`...)
	switch {
	case text == "":
		b = append(b, "{}"...)
	case reasoning:
		b = append(b, st.reasonKey...)
		b = appendString(b, text)
		b = append(b, '}')
	default:
		b = append(b, `{"content":`...)
		b = appendString(b, text)
		b = append(b, '}')
	}
	st.buf = st.appendChunkTail(b, ch, toks, final)
}

// callChunk appends the chunk of position pos of a tool-call choice (pos
// -1: a final chunk without a token), or nothing when the position sends
// no delta and is not the final one.
func (st *streamer) callChunk(idx int, ch *choice, pos int, tok uint32, final bool) {
	start := len(st.buf)
	b := append(st.buf, st.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"delta":`...)
	ok := false
	if pos >= 0 {
		b, ok = ch.calls.appendCallDelta(b, ch, pos)
	}
	if !ok {
		if !final {
			st.buf = b[:start]
			return
		}
		b = append(b, "{}"...)
	}
	st.one[0] = tok
	st.buf = st.appendChunkTail(b, ch, st.one[:], final)
}

// appendChunkTail appends what follows a chat chunk's delta: logprobs,
// finish_reason (and stop_reason), token ids, usage, and the event's end.
func (st *streamer) appendChunkTail(b []byte, ch *choice, toks []uint32, final bool) []byte {
	g := st.j.g
	hasTok := !final || ch.held
	b = append(b, `,"logprobs":`...)
	if g.logprobs && hasTok {
		b = append(b, `{"content":[`...)
		for i, tok := range toks {
			if i > 0 {
				b = append(b, ',')
			}
			b = st.lp.appendChatEntry(b, tok)
		}
		b = append(b, "]}"...)
	} else {
		b = append(b, "null"...)
	}
	if final {
		b = st.appendFinish(b, ch)
	} else {
		b = append(b, `,"finish_reason":null`...)
	}
	if g.returnIDs {
		b = append(b, `,"token_ids":[`...)
		if hasTok {
			b = appendTokenIDs(b, toks)
		}
		b = append(b, ']')
	}
	b = append(b, "}]"...)
	if g.continuousUsage {
		b = st.appendRunningUsage(b)
	}
	return append(b, "}\n\n"...)
}

// appendFinish appends `,"finish_reason":…,"stop_reason":…`.
func (st *streamer) appendFinish(b []byte, ch *choice) []byte {
	reason, stop := ch.reasons()
	if ch.calls != nil {
		reason = ch.calls.finish(ch)
	}
	b = append(b, `,"finish_reason":`...)
	b = appendString(b, string(reason))
	b = append(b, `,"stop_reason":`...)
	switch stop.Kind {
	case plan.StopString:
		b = appendString(b, stop.String)
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
func (st *streamer) completionChunk(idx int, ch *choice, text string, toks []uint32, final bool) {
	g := st.j.g
	hasTok := !final || ch.held
	first := !ch.started
	ch.started = true
	b := append(st.buf, st.prefix...)
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, `,"text":"`...)
	if first && g.echo {
		echo := g.prompts[ch.prompt].text
		b = appendStringContent(b, echo)
		ch.offset += utf8.RuneCountInString(echo)
	}
	b = appendStringContent(b, text)
	b = append(b, `","logprobs":`...)
	if g.logprobs && hasTok {
		// Per-pass chunks are off with logprobs: one token here.
		b = st.lp.appendCompletionOne(b, toks[0], ch.offset)
	} else {
		b = append(b, "null"...)
	}
	ch.offset += utf8.RuneCountInString(text)
	if final {
		b = st.appendFinish(b, ch)
	} else {
		b = append(b, `,"finish_reason":null,"stop_reason":null`...)
	}
	if g.returnIDs {
		if first {
			b = append(b, `,"prompt_token_ids":`...)
			b = appendUint32s(b, g.prompts[ch.prompt].ids)
		}
		b = append(b, `,"token_ids":[`...)
		if hasTok {
			b = appendTokenIDs(b, toks)
		}
		b = append(b, ']')
	}
	b = append(b, "}]"...)
	if g.continuousUsage {
		b = st.appendRunningUsage(b)
	} else {
		b = append(b, `,"usage":null`...)
	}
	st.buf = append(b, "}\n\n"...)
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

// finish appends the usage chunk (when asked for) and [DONE], or another
// surface's closing events.
func (st *streamer) finish() {
	if st.enc != nil {
		st.buf = st.enc.end(st.buf)
		return
	}
	if st.j.g.includeUsage && !st.usageDone {
		st.usageDone = true
		b := append(st.buf, st.prefix...)
		b = append(b, `],"usage":`...)
		b = st.appendUsage(b, st.j.s.opts.HTTP.PromptTokensDetails)
		st.buf = append(b, "}\n\n"...)
	}
	st.buf = append(st.buf, sseDone...)
}
