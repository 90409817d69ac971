package api

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/sockwrite"
)

// sseWriteTimeout bounds every SSE write, so a client that stops reading
// cannot hold a handler (and its engine work) forever (Server.writeTimeout;
// tests shorten it).
const sseWriteTimeout = 60 * time.Second

const sseDone = "data: [DONE]\n\n"

// streamer is the transport of a job's SSE stream (docs/http-api.md): it
// writes what its surface's encoder renders — through a delivery shard or
// from the handler, under the write deadline, watched for a stuck reader —
// and carries out mid-stream faults and the end by disconnect or shutdown.
// All events of one drain of the output queue are appended to one reused
// buffer and written with one Write and one Flush; the hot path allocates
// nothing per token.
type streamer struct {
	j   *job
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte

	armed     time.Time // when the write deadline was last set
	delivered int       // tokens rendered so far (mid-stream faults)
	streamWriteState

	enc eventEncoder // the surface's events

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

// eventEncoder renders a streamed job in its surface's SSE format: chat and
// completions chunks (openAIEncoder), Responses and Anthropic Messages
// events, SGLang's cumulative results. The streamer writes what it renders.
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
func (st *streamer) appendFailure(b []byte, e *apiError) []byte { return st.enc.fail(b, e) }

// binder is an encoder that appends to the streamer's buffer itself
// (openAIEncoder) rather than returning what it appends.
type binder interface{ bind(st *streamer) }

// newStreamer starts the stream of j with enc's events (nil: chat or
// completions chunks).
func newStreamer(j *job, w http.ResponseWriter, enc eventEncoder) *streamer {
	if enc == nil {
		enc = newOpenAIEncoder(j)
	}
	// buf starts small: streams delivered by a shard render into the
	// shard's buffer, so this one holds only the first events.
	st := &streamer{j: j, w: w, rc: http.NewResponseController(w), enc: enc, buf: make([]byte, 0, 512)}
	if b, ok := enc.(binder); ok {
		b.bind(st)
	}
	return st
}

// stream sends the SSE response of a submitted job: headers at once, then
// events as the engine delivers tokens, then the usage chunk and [DONE]. A
// mid-stream fault (j.fault) strikes once After tokens have been written.
// enc renders the surface's events (nil: chat/completions chunks).
func (j *job) stream(w http.ResponseWriter, r *http.Request, enc eventEncoder) {
	st := newStreamer(j, w, enc)
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
	st.buf = st.enc.begin(st.buf)
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

// render appends the events of a batch of output items.
func (st *streamer) render(items []engine.OutputItem) { st.enc.render(st, items) }

// finish appends the closing events of a stream whose sequences have all
// finished.
func (st *streamer) finish() { st.buf = st.enc.end(st.buf) }

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
