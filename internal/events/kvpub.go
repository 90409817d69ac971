package events

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// replayIdlePoll is how often the ROUTER is serviced while no batch
// arrives: the longest a replay request waits on an idle rank.
const replayIdlePoll = 100 * time.Millisecond

// endSeq is the replay end marker's sequence frame (−1 as int64).
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// kvItem is one queued batch: the engine's events and their timestamp. The
// engine hands over ownership of the events (kv.Pool.TakeEvents), so they
// are encoded later on the publisher goroutine.
type kvItem struct {
	ts     float64
	events []kv.Event
}

// KVPublisher publishes one DP rank's KV event batches (docs/kv-events.md).
// PublishKVEvents is the engine-side entry point: it only queues. One
// goroutine owns the PUB socket and the optional replay ROUTER; it encodes
// each batch, numbers it, sends it without blocking, keeps it in the replay
// ring, and answers replay requests after every batch and every 100 ms
// while idle.
type KVPublisher struct {
	rank     int
	publish  bool
	endpoint string // the PUB endpoint, a bound "*" port resolved
	bound    bool   // the PUB socket binds (else it connects to its consumer)
	log      *slog.Logger
	queue    *boundedQueue[kvItem]
	lifecycle

	sent         atomic.Uint64
	queueDropped atomic.Uint64
	hwmDropped   atomic.Uint64
	queueLog     rateLog
	hwmLog       rateLog

	// Owned by the publisher goroutine after construction.
	pub, router *zmq.Socket
	enc         Encoding
	topic       []byte
	topicFrame  bool
	seq         uint64
	seqBuf      []byte
	scratch     []byte
	ring        *replayRing
}

// KVPublisherOptions configures NewKVPublisher.
type KVPublisherOptions struct {
	KVSettings
	// Context is the ZMQ context to create the sockets in; nil creates one
	// owned (and terminated) by the publisher.
	Context *zmq.Context
	Logger  *slog.Logger
}

// NewKVPublisher creates the rank's sockets (an error names the endpoint
// that failed to bind or connect) and starts its publisher goroutine.
func NewKVPublisher(o KVPublisherOptions) (*KVPublisher, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &KVPublisher{
		rank:       o.Rank,
		publish:    o.Publish,
		log:        log.With("component", "kv-events", "dp_rank", o.Rank),
		queue:      newBoundedQueue[kvItem](o.MaxQueueSize),
		enc:        o.Encoding,
		topic:      []byte(o.Topic),
		topicFrame: o.ReplayTopicFrame,
		seqBuf:     make([]byte, 8),
	}
	p.lifecycle.start()
	zctx, err := p.lifecycle.context(o.Context)
	if err != nil {
		return nil, err
	}
	if p.pub, err = newSocket(zctx, zmq.PUB, o.Endpoint, o.Bind, o.HWM); err != nil {
		return p.abort(err)
	}
	p.lifecycle.bound(o.Endpoint, o.Bind)
	p.endpoint, p.bound = o.Endpoint, o.Bind
	if o.Bind {
		// A "*" port is chosen by the kernel: report the one it chose.
		if p.endpoint, err = p.pub.GetLastEndpoint(); err != nil {
			return p.abort(fmt.Errorf("zmq PUB %s: last endpoint: %w", o.Endpoint, err))
		}
	}
	if o.ReplayEndpoint != "" {
		// One full replay must fit in a client's pipe: the ROUTER drops
		// (silently) what exceeds its high-water mark.
		if p.router, err = newSocket(zctx, zmq.ROUTER, o.ReplayEndpoint, true, max(o.BufferSteps, 1)+16); err != nil {
			return p.abort(err)
		}
		p.lifecycle.bound(o.ReplayEndpoint, true)
		p.ring = newReplayRing(max(o.BufferSteps, 1))
	}
	mode := "connect"
	if o.Bind {
		mode = "bind"
	}
	p.log.Info("KV events publisher", "endpoint", o.Endpoint, "mode", mode,
		"replay_endpoint", o.ReplayEndpoint, "topic", o.Topic, "encoding", o.Encoding.String(),
		"publish", o.Publish)
	go p.run()
	return p, nil
}

// PublishKVEvents queues a batch for the publisher goroutine without ever
// blocking (engine.KVEventSink). When max_queue_size batches are already
// queued the batch is
// dropped and counted (Dropped), logged at most once per second. The
// batch's Rank is ignored: the payload carries the publisher's rank.
func (p *KVPublisher) PublishKVEvents(b engine.KVEventBatch) {
	if !p.publish || len(b.Events) == 0 {
		return
	}
	if !p.queue.push(kvItem{ts: UnixSeconds(b.Time), events: b.Events}) {
		p.queueDropped.Add(1)
		p.queueLog.note(p.log, "KV event queue full, batches dropped", "max_queue_size", p.queue.limit)
	}
}

// Endpoint returns the PUB socket's endpoint: the connected one as given,
// the bound one as libzmq reports it (ZMQ_LAST_ENDPOINT), so that a "*"
// port reads back as the port the kernel chose.
func (p *KVPublisher) Endpoint() string { return p.endpoint }

// Bound reports whether the PUB socket binds its endpoint, so that another
// subscriber (the gRPC front end's SubscribeKvEvents) can connect to it.
func (p *KVPublisher) Bound() bool { return p.bound }

// Topic returns the topic frame of every published batch.
func (p *KVPublisher) Topic() string { return string(p.topic) }

// Sent returns the number of batches handed to the PUB socket.
func (p *KVPublisher) Sent() uint64 { return p.sent.Load() }

// Dropped returns the number of batches dropped, at the queue or at the
// PUB high-water mark.
func (p *KVPublisher) Dropped() uint64 { return p.queueDropped.Load() + p.hwmDropped.Load() }

// QueueDropped returns the batches dropped because the queue was full.
func (p *KVPublisher) QueueDropped() uint64 { return p.queueDropped.Load() }

// HWMDropped returns the batches dropped at the PUB high-water mark (their
// sequence numbers are consumed and they stay replayable).
func (p *KVPublisher) HWMDropped() uint64 { return p.hwmDropped.Load() }

// Close stops the publisher goroutine, which closes the sockets (linger 0),
// and returns once it has ended; a context the publisher created is then
// terminated. Batches still queued are discarded. Close is idempotent.
func (p *KVPublisher) Close() error {
	return p.stop()
}

func (p *KVPublisher) run() {
	defer close(p.done)
	// ZMQ sockets may move between threads only with a full barrier; keep
	// them on one thread for their whole life.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer p.closeSockets()

	var idle <-chan time.Time
	if p.router != nil {
		t := time.NewTicker(replayIdlePoll)
		defer t.Stop()
		idle = t.C
	}
	var items []kvItem
	for {
		select {
		case <-p.quit:
			return
		case <-p.queue.wake:
			items = p.queue.take(items)
			for _, it := range items {
				p.send(it)
				p.serviceReplay()
			}
		case <-idle:
			p.serviceReplay()
		}
	}
}

// send encodes, numbers, stores and sends one batch.
func (p *KVPublisher) send(it kvItem) {
	seq := p.seq
	p.seq++
	var payload []byte
	if p.ring != nil {
		// Encode straight into the ring slot, reusing its buffer.
		e := p.ring.next(seq)
		e.payload = EncodeBatch(e.payload[:0], it.ts, it.events, p.rank, p.enc)
		payload = e.payload
	} else {
		p.scratch = EncodeBatch(p.scratch[:0], it.ts, it.events, p.rank, p.enc)
		payload = p.scratch
	}
	binary.BigEndian.PutUint64(p.seqBuf, seq)
	switch err := sendFrames(p.pub, p.topic, p.seqBuf, payload); {
	case err == nil:
		p.sent.Add(1)
	case isAgain(err):
		p.hwmDropped.Add(1)
		p.hwmLog.note(p.log, "KV event PUB high-water mark reached, batches dropped", "seq", seq)
	default:
		p.hwmDropped.Add(1)
		p.hwmLog.note(p.log, "KV event send failed, batches dropped", "seq", seq, "err", err)
	}
}

// serviceReplay answers every pending replay request: ["", start_seq] from
// a DEALER, answered with every buffered batch from start_seq on and an end
// marker.
func (p *KVPublisher) serviceReplay() {
	if p.router == nil {
		return
	}
	for {
		msg, err := p.router.RecvMessageBytes(zmq.DONTWAIT)
		if err != nil {
			if !isAgain(err) {
				p.log.Warn("replay receive failed", "err", err)
			}
			return
		}
		if len(msg) != 3 || len(msg[2]) != 8 {
			lens := make([]int, len(msg))
			for i, f := range msg {
				lens[i] = len(f)
			}
			p.log.Warn("malformed replay request ignored", "frames", len(msg), "frame_lengths", lens)
			continue
		}
		p.replay(msg[0], binary.BigEndian.Uint64(msg[2]))
	}
}

// replay sends every buffered batch with seq ≥ start, then the end marker.
// Replies to a vanished client are dropped by the ROUTER.
func (p *KVPublisher) replay(identity []byte, start uint64) {
	empty := []byte{}
	seq := make([]byte, 8)
	n := 0
	var err error
	p.ring.from(start, func(s uint64, payload []byte) bool {
		binary.BigEndian.PutUint64(seq, s)
		if p.topicFrame {
			err = sendFrames(p.router, identity, empty, p.topic, seq, payload)
		} else {
			err = sendFrames(p.router, identity, empty, seq, payload)
		}
		n++
		return err == nil
	})
	if err == nil {
		if p.topicFrame {
			err = sendFrames(p.router, identity, empty, empty, endSeq, empty)
		} else {
			err = sendFrames(p.router, identity, empty, endSeq, empty)
		}
	}
	if err != nil {
		p.log.Debug("replay reply dropped", "start_seq", start, "err", err)
		return
	}
	p.log.Debug("replay served", "start_seq", start, "batches", n)
}

func (p *KVPublisher) closeSockets() {
	for _, s := range []*zmq.Socket{p.pub, p.router} {
		if s != nil {
			_ = s.Close()
		}
	}
	p.pub, p.router = nil, nil
}

// abort undoes a failed construction.
func (p *KVPublisher) abort(err error) (*KVPublisher, error) {
	p.closeSockets()
	p.removeIPCFiles()
	if p.ownCtx != nil {
		_ = p.ownCtx.Term()
	}
	return nil, err
}

// replayRing keeps the last n (seq, payload) pairs; payload buffers are
// reused when their slot is overwritten.
type replayRing struct {
	entries []ringEntry
	head    int // index of the oldest entry
	n       int // number of valid entries
}

type ringEntry struct {
	seq     uint64
	payload []byte
}

func newReplayRing(n int) *replayRing {
	return &replayRing{entries: make([]ringEntry, n)}
}

// next claims the slot for seq (overwriting the oldest when full).
func (r *replayRing) next(seq uint64) *ringEntry {
	var i int
	if r.n < len(r.entries) {
		i = (r.head + r.n) % len(r.entries)
		r.n++
	} else {
		i = r.head
		r.head = (r.head + 1) % len(r.entries)
	}
	e := &r.entries[i]
	e.seq = seq
	return e
}

// from calls f for each entry with seq ≥ start in ascending order (all of
// them when start is older than the oldest) until f returns false.
func (r *replayRing) from(start uint64, f func(seq uint64, payload []byte) bool) {
	if r.n == 0 {
		return
	}
	// Buffered sequence numbers are contiguous from the oldest entry's.
	k := 0
	if oldest := r.entries[r.head].seq; start > oldest {
		if start-oldest >= uint64(r.n) {
			return
		}
		k = int(start - oldest)
	}
	for ; k < r.n; k++ {
		e := &r.entries[(r.head+k)%len(r.entries)]
		if !f(e.seq, e.payload) {
			return
		}
	}
}
