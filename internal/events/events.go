// Package events publishes KV cache events (docs/kv-events.md) and
// forward-pass metrics (docs/metrics.md) over ZMQ, one publisher goroutine
// per DP rank and stream.
//
// Threading: the engine calls PublishKVEvents / PublishFPM on its own
// goroutine; they only append the batch (the engine's events, handed over
// by kv.Pool.TakeEvents, not yet encoded) to a bounded queue and never
// block: when max_queue_size batches are queued the batch is dropped,
// counted and logged at most once per second. (The engine never waits on
// a publisher: a slow consumer costs events, never pass timing.) The queue is a mutex-guarded slice with a 1-slot wake
// channel rather than a buffered channel so that its storage grows on
// demand instead of allocating max_queue_size slots per rank up front.
//
// Each publisher goroutine owns its sockets exclusively (locked to one OS
// thread), encodes the msgpack payloads (encode.go; zero allocations into
// reused buffers), numbers them and sends with ZMQ_DONTWAIT. PUB sockets
// set ZMQ_XPUB_NODROP so that a full subscriber pipe (high-water mark)
// surfaces as EAGAIN and the batch is counted as dropped — its sequence
// number is still consumed and it stays in the replay ring. A KV publisher
// with a replay ROUTER services it (non-blocking receive) after every batch
// and on a 100 ms ticker while idle: the goroutine blocks in one select on
// the queue's wake channel, the ticker and the quit channel, so both the
// Go side and the ZMQ side are served without a busy loop and without the
// engine touching a socket. Replay requests therefore wait at most 100 ms
// while the rank is idle.
//
// Contexts: Open uses one ZMQ context for the whole process (all ranks and
// both streams), terminated by Publishers.Close after every publisher
// goroutine has closed its sockets. Publishers built directly with
// NewKVPublisher / NewFPMPublisher without a context own a private one.
package events

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	zmq "github.com/pebbe/zmq4"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Publishers holds every DP rank's KV event and FPM publishers of one
// process.
type Publishers struct {
	zctx *zmq.Context
	kv   []*KVPublisher  // per rank; nil when KV events are not configured
	fpm  []*FPMPublisher // per rank; nil when fpm_endpoint is empty

	once     sync.Once
	closeErr error
}

// Open creates the sockets of every DP rank o configures and starts their
// publisher goroutines. A bind or connect failure returns an error naming
// the endpoint, after closing what was already opened. With neither KV
// events nor FPM configured it opens nothing (and creates no context).
func Open(o Options, log *slog.Logger) (*Publishers, error) {
	return open(o, log, nil)
}

func open(o Options, log *slog.Logger, lookup LookupIP) (_ *Publishers, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := max(o.DPSize, 1)
	kvs := make([]KVSettings, n)
	fpms := make([]FPMSettings, n)
	kvOn, fpmOn := false, false
	for r := range n {
		var ok bool
		if kvs[r], ok, err = KVSettingsFor(o, r, lookup); err != nil {
			return nil, err
		}
		kvOn = kvOn || ok
		if fpms[r], ok, err = FPMSettingsFor(o, r); err != nil {
			return nil, err
		}
		fpmOn = fpmOn || ok
	}
	p := &Publishers{kv: make([]*KVPublisher, n), fpm: make([]*FPMPublisher, n)}
	if !kvOn && !fpmOn {
		return p, nil
	}
	if kvOn && o.Silent {
		log.Warn("KV event sockets are open but nothing will be published (prefix caching disabled or decode worker)")
	}
	if p.zctx, err = zmq.NewContext(); err != nil {
		return nil, fmt.Errorf("zmq context: %w", err)
	}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	for r := range n {
		if kvOn {
			if p.kv[r], err = NewKVPublisher(KVPublisherOptions{KVSettings: kvs[r], Context: p.zctx, Logger: log}); err != nil {
				return nil, err
			}
		}
		if fpmOn {
			if p.fpm[r], err = NewFPMPublisher(FPMPublisherOptions{FPMSettings: fpms[r], Context: p.zctx, Logger: log}); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// KVSink returns rank's KV event sink, or nil when KV events are not
// configured. (When they are configured but cannot be published — prefix
// caching disabled, decode worker — the sink exists and discards.)
func (p *Publishers) KVSink(rank int) engine.KVEventSink {
	if k := p.kvAt(rank); k != nil {
		return k
	}
	return nil
}

// FPMSink returns rank's FPM sink, or nil when fpm_endpoint is empty.
func (p *Publishers) FPMSink(rank int) engine.FPMSink {
	if f := p.fpmAt(rank); f != nil {
		return f
	}
	return nil
}

// KV returns rank's KV publisher (nil when not configured).
func (p *Publishers) KV(rank int) *KVPublisher { return p.kvAt(rank) }

// FPM returns rank's FPM publisher (nil when not configured).
func (p *Publishers) FPM(rank int) *FPMPublisher { return p.fpmAt(rank) }

// KVBatchesSent returns rank's batches handed to the PUB socket
// (mocker_kv_event_batches_total).
func (p *Publishers) KVBatchesSent(rank int) uint64 {
	if k := p.kvAt(rank); k != nil {
		return k.Sent()
	}
	return 0
}

// KVBatchesDropped returns rank's dropped batches, at the queue or at the
// high-water mark (mocker_kv_event_batches_dropped_total).
func (p *Publishers) KVBatchesDropped(rank int) uint64 {
	if k := p.kvAt(rank); k != nil {
		return k.Dropped()
	}
	return 0
}

// FPMSent returns rank's FPM messages handed to the PUB socket.
func (p *Publishers) FPMSent(rank int) uint64 {
	if f := p.fpmAt(rank); f != nil {
		return f.Sent()
	}
	return 0
}

// FPMDropped returns rank's dropped FPM snapshots.
func (p *Publishers) FPMDropped(rank int) uint64 {
	if f := p.fpmAt(rank); f != nil {
		return f.Dropped()
	}
	return 0
}

// Close stops every publisher (each returns after its goroutine closed its
// sockets), then terminates the context. Counters stay readable. Sinks must
// not be used after Close (they would only queue into the void). Idempotent;
// safe on nil.
func (p *Publishers) Close() error {
	if p == nil {
		return nil
	}
	p.once.Do(func() {
		var errs []error
		for _, k := range p.kv {
			if k != nil {
				errs = append(errs, k.Close())
			}
		}
		for _, f := range p.fpm {
			if f != nil {
				errs = append(errs, f.Close())
			}
		}
		if p.zctx != nil {
			errs = append(errs, p.zctx.Term())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

func (p *Publishers) kvAt(rank int) *KVPublisher {
	if p == nil || rank < 0 || rank >= len(p.kv) {
		return nil
	}
	return p.kv[rank]
}

func (p *Publishers) fpmAt(rank int) *FPMPublisher {
	if p == nil || rank < 0 || rank >= len(p.fpm) {
		return nil
	}
	return p.fpm[rank]
}
