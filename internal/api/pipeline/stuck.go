package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// stuckScanInterval is how often streams blocked in a write are checked.
// A stream is judged stuck only when its current write has lasted at least
// this long, so a healthy client never is.
const stuckScanInterval = 100 * time.Millisecond

// stuckWatch aborts the engine work of streams whose client stopped
// reading. A stuck client blocks the handler in a socket write, so the
// handler cannot notice anything itself; one watcher goroutine (running
// only while streams exist) checks every stuckScanInterval for streams
// whose write has been blocked for at least an interval while at least
// limit tokens wait undelivered in their output queue. Their sequences are
// cancelled: the engine frees their KV blocks and running slots at its
// next pass. What vLLM-backed servers do instead is keep decoding into an
// unbounded buffer until the request's max_tokens; the mock refuses to let
// one client hold capacity that way. The stream itself stays open: if the
// client resumes reading, it gets the tokens produced so far, an error
// event and [DONE]; if not, the write deadline closes it.
type stuckWatch struct {
	limit int
	log   func(msg string, args ...any)

	mu      sync.Mutex
	streams map[*Streamer]struct{}
	running bool
}

func (w *stuckWatch) add(st *Streamer) {
	if w == nil || w.limit <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.streams == nil {
		w.streams = make(map[*Streamer]struct{})
	}
	w.streams[st] = struct{}{}
	if !w.running {
		w.running = true
		go w.run()
	}
}

func (w *stuckWatch) remove(st *Streamer) {
	if w == nil || w.limit <= 0 {
		return
	}
	w.mu.Lock()
	delete(w.streams, st)
	w.mu.Unlock()
}

// run scans until no stream is left.
func (w *stuckWatch) run() {
	t := time.NewTicker(stuckScanInterval)
	defer t.Stop()
	var stuck []*Streamer
	for range t.C {
		now := time.Now().UnixNano()
		stuck = stuck[:0]
		w.mu.Lock()
		if len(w.streams) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		for st := range w.streams {
			since := st.writing.Load()
			if since != 0 && now-since >= int64(stuckScanInterval) && !st.abandoned.Load() &&
				st.j.out.Len() >= w.limit {
				stuck = append(stuck, st)
			}
		}
		w.mu.Unlock()
		for _, st := range stuck {
			st.abandon()
			if w.log != nil {
				w.log("client stopped reading; stream's engine work aborted",
					"request_id", st.j.G.BaseID, "unflushed_tokens", st.j.out.Len())
			}
		}
	}
}

// abandon cancels every sequence of the stream's job (unknown or finished
// ids are ignored by the engine). The handler goroutine notices the flag
// when its write returns.
func (st *Streamer) abandon() {
	st.abandoned.Store(true)
	for i := range st.j.Reqs {
		st.j.eng.Cancel(st.j.Reqs[i].ID)
	}
}

// streamWriteState is embedded in streamer: when the current write started
// (0 = not writing) and whether the watcher abandoned the stream.
type streamWriteState struct {
	writing   atomic.Int64
	abandoned atomic.Bool
}
