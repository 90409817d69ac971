package pipeline

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// delivery writes the events of many streams from a few goroutines (one
// shard per core) instead of waking each stream's handler goroutine once
// per pass. A shard's streams share one engine.OutputGroup: the engine
// lists the outputs a pass filled and signals the shard once, after the
// pass; the shard renders each listed stream's events and writes them
// straight to its connection with one non-blocking write(2)
// (rawconn.go). What that leaves per token is the write itself, the
// rendering and a lock or two — no wake-up, no channel hand-off, no
// net/http buffering — and with several cores the shards write in
// parallel. docs/ARCHITECTURE.md, "Streaming delivery", has the picture.
//
// A stream is written by its own handler goroutine instead when it has a
// mid-stream fault to carry out or its connection cannot be written raw,
// and it goes back to that goroutine when its client does not keep up (the
// socket would block: the shard never waits for one client).
type delivery struct {
	shards []*deliveryShard
	next   atomic.Uint32
	// handedBack counts the streams a shard gave back to their handler
	// because the client's socket was full.
	handedBack atomic.Int64
	lagObs     settings.DeliveryLagObserver // may be nil
}

func newDelivery(shards int, engines []*engine.Engine, lagObs settings.DeliveryLagObserver) *delivery {
	d := &delivery{shards: make([]*deliveryShard, max(shards, 1)), lagObs: lagObs}
	for i := range d.shards {
		d.shards[i] = &deliveryShard{d: d, engines: engines, group: engine.NewOutputGroup(),
			wake: make(chan struct{}, 1)}
	}
	return d
}

// renderedAhead counts the chunks written as rendered ahead
// (prerender.go), over all shards.
func (d *delivery) renderedAhead() int64 {
	var n int64
	for _, sh := range d.shards {
		n += sh.renderedAhead.Load()
	}
	return n
}

// defaultShards is one shard per core the Go scheduler may use.
func defaultShards() int { return runtime.GOMAXPROCS(0) }

// pick returns the shard for a new stream (round robin).
func (d *delivery) pick() *deliveryShard {
	return d.shards[int(d.next.Add(1)-1)%len(d.shards)]
}

// deliveryShard is one delivery goroutine and its streams. The goroutine
// runs only while the shard has streams, so an idle server has none.
type deliveryShard struct {
	d       *delivery
	engines []*engine.Engine // the server's ranks, whose passes come first
	group   *engine.OutputGroup
	wake    chan struct{} // a stream left: the goroutine may have to exit

	mu      sync.Mutex
	streams int // streams given to the shard and not yet removed
	running bool

	// The goroutine's own state: the pass's ready outputs and streams,
	// and the buffers every stream of the shard renders and frames its
	// events in (a stream's bytes are written before the next stream's).
	ready []*engine.Output
	batch []*Streamer
	buf   []byte
	frame []byte
	// lags are the delivery lags measured during a batch, observed after
	// it.
	lags []rankLag
	// first is where the last pass's writes started in its ready list
	// (NextFirst).
	first int
	// renderedAhead counts the shard's chunks written as rendered ahead
	// (per shard, so shards on different cores share no counter).
	renderedAhead atomic.Int64
}

// NextFirst returns where a pass's writes start in a ready list of n
// outputs, given where the previous pass's started: about 5/8 of the list
// further on (near the golden ratio, so successive starts spread over the
// list), and never at the same place. The stream written last in one pass
// is then early in the next, and the lag of writing in turn is spread over
// every stream instead of falling on the same ones each pass.
func NextFirst(first, n int) int {
	return (first + max(1, n*5/8)) % n
}

// add gives a stream to the shard. Its output joins the shard's group, so
// tokens already queued are delivered at the shard's next wake-up.
func (sh *deliveryShard) add(st *Streamer) {
	sh.mu.Lock()
	sh.streams++
	if !sh.running {
		sh.running = true
		go sh.run()
	}
	sh.mu.Unlock()
	st.j.out.JoinGroup(sh.group, st)
}

// remove takes a stream from the shard; its output signals its own reader
// again from then on.
func (sh *deliveryShard) remove(st *Streamer) {
	st.j.out.LeaveGroup()
	sh.mu.Lock()
	sh.streams--
	empty := sh.streams == 0
	sh.mu.Unlock()
	if empty {
		select {
		case sh.wake <- struct{}{}:
		default:
		}
	}
}

// run is the shard's goroutine: wait for a pass's outputs, deliver each
// listed stream, repeat until the shard has no stream left.
func (sh *deliveryShard) run() {
	for {
		select {
		case <-sh.group.Ready():
		case <-sh.wake:
		}
		sh.mu.Lock()
		if sh.streams == 0 {
			sh.running = false
			sh.mu.Unlock()
			return
		}
		sh.mu.Unlock()
		sh.ready = sh.group.Take(sh.ready[:0])
		if n := len(sh.ready); n > 0 {
			sh.first = NextFirst(sh.first, n)
			for i := range n {
				// A stream that left the shard may still be listed
				// once; deliver sees it is no longer the shard's.
				if st, ok := sh.ready[(sh.first+i)%n].Owner().(*Streamer); ok {
					sh.batch = append(sh.batch, st)
				}
			}
		}
		slice := time.Now()
		for i, st := range sh.batch {
			if sh.deliver(st) {
				sh.remove(st)
				close(st.done)
			}
			if i%yieldEvery == yieldEvery-1 {
				if now := time.Now(); sh.engineDue(now) || now.Sub(slice) >= yieldSlice {
					// Let the engine's next pass start on time: its
					// timer has readied it, but on a busy core only a
					// scheduling point lets it run before the shard's
					// slice ends. Yielding every yieldSlice also
					// spares the runtime preempting a long batch with
					// a signal. Otherwise the shard does not yield, so
					// request handlers do not run ahead of the pass's
					// remaining writes.
					runtime.Gosched()
					slice = time.Now()
				}
			}
		}
		// Off the pass's critical path: the lags measured, then each
		// stream's next chunk (prerender.go).
		sh.observeLags()
		for _, st := range sh.batch {
			sh.prepareNext(st)
		}
		clear(sh.ready)
		clear(sh.batch)
		sh.batch = sh.batch[:0]
	}
}

// prepareNext renders a stream's next chunk ahead if its delivery in this
// batch asked for it and the stream is still the shard's.
func (sh *deliveryShard) prepareNext(st *Streamer) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.next.due || st.mode != deliveredByShard {
		return
	}
	st.next.due = false
	own := st.Buf
	st.Buf = sh.buf[:0]
	defer func() {
		sh.buf, st.Buf = st.Buf[:0], own
		if v := recover(); v != nil {
			// Nothing was written: the stream renders its next chunk
			// on the spot (where a panic ends it with an error event).
			st.next.frame = st.next.frame[:0]
			st.j.S.log.Error("panic while rendering a chunk ahead", "request_id", st.j.G.BaseID,
				"panic", v, "stack", string(debug.Stack()))
		}
	}()
	st.prepareNext()
}

// rankLag is one token's delivery lag (seconds) on a DP rank.
type rankLag struct {
	rank int
	lag  float64
}

// observeLags hands the batch's delivery lags to the observer.
func (sh *deliveryShard) observeLags() {
	if obs := sh.d.lagObs; obs != nil {
		for _, l := range sh.lags {
			obs.ObserveDeliveryLag(l.rank, l.lag)
		}
	}
	sh.lags = sh.lags[:0]
}

// yieldEvery is how many streams a shard writes between looks at whether
// an engine is waiting for the core: about 0.2 ms of writes, against the
// 5 ms a late engine wake-up may take before it shifts the modeled
// schedule.
const yieldEvery = 32

// yieldSlice is the longest a shard writes without yielding: below the Go
// scheduler's 10 ms time slice, after which it would preempt the shard.
const yieldSlice = 5 * time.Millisecond

// engineDue reports whether an engine's pass deadline has passed while
// the shard is writing.
func (sh *deliveryShard) engineDue(now time.Time) bool {
	for _, e := range sh.engines {
		if e.PassDue(now) {
			return true
		}
	}
	return false
}

// deliver writes what a stream's output holds. True means the stream left
// the shard: it is over (deliveryOver), or its client's socket is full and
// the rest is its handler's (handedOver).
func (sh *deliveryShard) deliver(st *Streamer) (left bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mode != deliveredByShard {
		return false // its handler took it back (the client left)
	}
	defer func() {
		if v := recover(); v != nil {
			j := st.j
			j.S.log.Error("panic while streaming", "request_id", j.G.BaseID, "panic", v, "stack", string(debug.Stack()))
			st.Buf = st.appendFailure(st.Buf[:0], wire.ErrInternal)
			_ = st.Flush()
			st.pending = nil
			st.mode, left = deliveryOver, true
		}
	}()
	j := st.j
	own := st.Buf
	st.Buf = sh.buf[:0]
	defer func() { sh.buf, st.Buf = st.Buf[:0], own[:0] }()
	// No st.cut here: only streams without a mid-stream fault get a shard.
	j.items = j.out.Drain(j.items)
	if over, ok := st.emitNext(j.items); ok {
		if !over {
			st.next.due = true
			return false
		}
	} else if !st.emit(j.items) {
		st.next.due = true
		return false
	}
	if st.pending != nil {
		st.mode = handedOver
		sh.d.handedBack.Add(1)
		j.S.log.Debug("client's socket is full; its handler delivers the rest of the stream",
			"request_id", j.G.BaseID, "pending_bytes", len(st.pending))
	} else {
		st.mode = deliveryOver
	}
	return true
}

// deliveryMode says who delivers a stream's events.
type deliveryMode uint8

const (
	// deliveredByHandler: the handler goroutine waits on the output and
	// writes through net/http (faults, connections not written raw).
	deliveredByHandler deliveryMode = iota
	// deliveredByShard: a delivery shard writes the stream raw.
	deliveredByShard
	// handedOver: the shard gave the stream back because its client's
	// socket was full; st.pending holds the bytes not yet written.
	handedOver
	// deliveryOver: the shard finished the stream (or its write failed).
	deliveryOver
	// takenBack: the handler took the stream from its shard when the
	// request context ended.
	takenBack
)
