package events

import (
	"encoding/binary"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	zmq "github.com/pebbe/zmq4"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// FPMPublisher publishes one DP rank's forward-pass metrics snapshots
// (docs/metrics.md): PublishFPM only queues; one goroutine owns the PUB
// socket, encodes each snapshot and sends it as [topic, seq, payload]
// without blocking.
type FPMPublisher struct {
	rank     int
	workerID string
	log      *slog.Logger
	queue    *boundedQueue[engine.ForwardPassSnapshot]
	// specs holds the speculative figures of queued snapshots by counter
	// id (PublishFPMSpec); the publisher goroutine takes them when it
	// sends. One queue keeps heartbeats and passes in order.
	specMu sync.Mutex
	specs  map[uint64]engine.FPMSpecDecode
	lifecycle

	sent         atomic.Uint64
	queueDropped atomic.Uint64
	hwmDropped   atomic.Uint64
	queueLog     rateLog
	hwmLog       rateLog

	// Owned by the publisher goroutine after construction.
	pub     *zmq.Socket
	seq     uint64
	seqBuf  []byte
	scratch []byte
}

// FPMPublisherOptions configures NewFPMPublisher.
type FPMPublisherOptions struct {
	FPMSettings
	// Context is the ZMQ context to create the socket in; nil creates one
	// owned (and terminated) by the publisher.
	Context *zmq.Context
	Logger  *slog.Logger
	// QueueSize bounds the queued snapshots (0 = FPMQueueSize).
	QueueSize int
}

// NewFPMPublisher creates the rank's PUB socket (an error names the
// endpoint) and starts its publisher goroutine.
func NewFPMPublisher(o FPMPublisherOptions) (*FPMPublisher, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.QueueSize <= 0 {
		o.QueueSize = FPMQueueSize
	}
	p := &FPMPublisher{
		rank:     o.Rank,
		workerID: o.WorkerID,
		log:      log.With("component", "fpm", "dp_rank", o.Rank),
		queue:    newBoundedQueue[engine.ForwardPassSnapshot](o.QueueSize),
		seqBuf:   make([]byte, 8),
	}
	p.lifecycle.start()
	zctx, err := p.lifecycle.context(o.Context)
	if err != nil {
		return nil, err
	}
	if p.pub, err = newSocket(zctx, zmq.PUB, o.Endpoint, o.Bind, FPMHWM); err != nil {
		if p.ownCtx != nil {
			_ = p.ownCtx.Term()
		}
		return nil, err
	}
	p.lifecycle.bound(o.Endpoint, o.Bind)
	mode := "connect"
	if o.Bind {
		mode = "bind"
	}
	p.log.Info("FPM publisher", "endpoint", o.Endpoint, "mode", mode, "worker_id", o.WorkerID)
	go p.run()
	return p, nil
}

// PublishFPM queues a snapshot without ever blocking (engine.FPMSink);
// when FPMQueueSize (or QueueSize) snapshots are already queued it is
// dropped and counted.
func (p *FPMPublisher) PublishFPM(s engine.ForwardPassSnapshot) {
	p.publish(s)
}

// PublishFPMSpec is PublishFPM with the pass's speculative decoding
// figures, sent as the payload's spec_decode key (engine.FPMSpecSink).
func (p *FPMPublisher) PublishFPMSpec(s engine.ForwardPassSnapshot, spec engine.FPMSpecDecode) {
	p.specMu.Lock()
	if p.specs == nil {
		p.specs = make(map[uint64]engine.FPMSpecDecode)
	}
	p.specs[s.CounterID] = spec
	p.specMu.Unlock()
	if !p.publish(s) {
		p.specMu.Lock()
		delete(p.specs, s.CounterID)
		p.specMu.Unlock()
	}
}

// publish queues s and reports whether it was queued.
func (p *FPMPublisher) publish(s engine.ForwardPassSnapshot) bool {
	if !p.queue.push(s) {
		p.queueDropped.Add(1)
		p.queueLog.note(p.log, "FPM queue full, snapshots dropped", "queue_size", p.queue.limit)
		return false
	}
	return true
}

// Sent returns the number of messages handed to the PUB socket.
func (p *FPMPublisher) Sent() uint64 { return p.sent.Load() }

// Dropped returns the snapshots dropped at the queue or the high-water mark.
func (p *FPMPublisher) Dropped() uint64 { return p.queueDropped.Load() + p.hwmDropped.Load() }

// Close stops the goroutine, which closes the socket (linger 0), and
// returns once it has ended. Idempotent.
func (p *FPMPublisher) Close() error {
	return p.stop()
}

func (p *FPMPublisher) run() {
	defer close(p.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() { _ = p.pub.Close() }()
	var items []engine.ForwardPassSnapshot
	for {
		select {
		case <-p.quit:
			return
		case <-p.queue.wake:
			items = p.queue.take(items)
			for i := range items {
				p.send(&items[i])
			}
		}
	}
}

// send encodes, numbers and sends one snapshot without blocking.
func (p *FPMPublisher) send(s *engine.ForwardPassSnapshot) {
	s.Rank = p.rank // the payload names the publisher's rank
	p.specMu.Lock()
	spec, hasSpec := p.specs[s.CounterID]
	if hasSpec {
		delete(p.specs, s.CounterID)
	}
	p.specMu.Unlock()
	if hasSpec {
		p.scratch = EncodeFPMSpec(p.scratch[:0], p.workerID, *s, spec)
	} else {
		p.scratch = EncodeFPM(p.scratch[:0], p.workerID, *s)
	}
	binary.BigEndian.PutUint64(p.seqBuf, p.seq)
	p.seq++
	switch err := sendFrames(p.pub, fpmTopic, p.seqBuf, p.scratch); {
	case err == nil:
		p.sent.Add(1)
	case isAgain(err):
		p.hwmDropped.Add(1)
		p.hwmLog.note(p.log, "FPM PUB high-water mark reached, snapshots dropped")
	default:
		p.hwmDropped.Add(1)
		p.hwmLog.note(p.log, "FPM send failed, snapshots dropped", "err", err)
	}
}

var fpmTopic = []byte(FPMTopic)
