package engine

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStopped is returned by Submit after the engine's loop has ended.
var ErrStopped = errors.New("engine stopped")

// Engine is the live actor of one DP rank: a goroutine (Run) that owns a
// Core and paces its passes on a Clock. Other goroutines talk to it only
// through its mailbox (Submit, Cancel, ResetPrefixCache and the operator
// controls of control.go) and read its load from atomics.
type Engine struct {
	core      *Core
	clock     Clock
	heartbeat time.Duration
	log       *slog.Logger

	mu      sync.Mutex
	pending []message
	stopped bool
	notify  chan struct{}

	running, waiting, active atomic.Int64

	// paused is owned by the actor goroutine; pausedFlag mirrors it for
	// readers.
	paused     bool
	pausedFlag atomic.Bool
}

type messageKind uint8

const (
	msgSubmit messageKind = iota
	msgCancel
	msgReset
	msgPause
	msgResume
	msgRetime
	msgLoadAdapter
)

type message struct {
	kind    messageKind
	req     *Request
	id      uint64
	retime  TimingChange
	reply   chan bool
	adapter Adapter
}

// Options are an Engine's collaborators; zero fields get defaults.
type Options struct {
	Rank     int
	Clock    Clock // default RealClock
	KVSink   KVEventSink
	FPMSink  FPMSink
	Observer Observer
	Logger   *slog.Logger
	// Inspector, when set, gets per-sequence traces and state snapshots
	// (inspect.go).
	Inspector Inspector
	// HeartbeatInterval is the idle FPM heartbeat period (default 1 s).
	HeartbeatInterval time.Duration
}

// New builds one rank's engine.
func New(cfg Config, opts Options) (*Engine, error) {
	core, err := NewCore(cfg, CoreOptions{Rank: opts.Rank,
		KVSink: opts.KVSink, FPMSink: opts.FPMSink, Observer: opts.Observer, Logger: opts.Logger,
		Inspector: opts.Inspector})
	if err != nil {
		return nil, err
	}
	e := &Engine{core: core, clock: opts.Clock, heartbeat: opts.HeartbeatInterval,
		log: core.log, notify: make(chan struct{}, 1)}
	if e.clock == nil {
		e.clock = RealClock{}
	}
	if e.heartbeat <= 0 {
		e.heartbeat = time.Second
	}
	return e, nil
}

// Rank returns the engine's DP rank.
func (e *Engine) Rank() int { return e.core.rank }

// Clock returns the engine's clock (handlers stamp arrivals with it).
func (e *Engine) Clock() Clock { return e.clock }

// Load is a rank's instantaneous load, read without involving the actor.
type Load struct {
	Running, Waiting, ActiveBlocks int
}

// Load returns the rank's state after its latest pass.
func (e *Engine) Load() Load {
	return Load{Running: int(e.running.Load()), Waiting: int(e.waiting.Load()),
		ActiveBlocks: int(e.active.Load())}
}

// CheckAdmissible applies the engine's capacity rule to a request before it
// is submitted: nil when it can run, else the rejection the engine would
// give it. It reads only immutable configuration, so any goroutine may call
// it.
func (e *Engine) CheckAdmissible(promptTokens, maxOutputTokens int) *Rejection {
	return e.core.CheckAdmissible(promptTokens, maxOutputTokens)
}

// Submit queues a request for the actor without waiting for it. Its outputs
// arrive on r.Out.
func (e *Engine) Submit(r *Request) error {
	return e.post(message{kind: msgSubmit, req: r})
}

// LoadAdapter asks the actor to load a LoRA adapter into its CPU cache and
// a GPU slot, as vLLM's add_lora does when an adapter is registered.
func (e *Engine) LoadAdapter(a Adapter) error {
	return e.post(message{kind: msgLoadAdapter, adapter: a})
}

// Cancel asks the actor to abort a request and free its blocks before the
// next pass. Unknown ids are ignored.
func (e *Engine) Cancel(id uint64) {
	_ = e.post(message{kind: msgCancel, id: id})
}

// ResetPrefixCache resets the rank's prefix cache; false means blocks are in use.
func (e *Engine) ResetPrefixCache(ctx context.Context) (bool, error) {
	reply := make(chan bool, 1)
	if err := e.post(message{kind: msgReset, reply: reply}); err != nil {
		return false, err
	}
	select {
	case ok := <-reply:
		return ok, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (e *Engine) post(m message) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return ErrStopped
	}
	e.pending = append(e.pending, m)
	e.mu.Unlock()
	select {
	case e.notify <- struct{}{}:
	default:
	}
	return nil
}

// applyMailbox applies every pending message in arrival order.
func (e *Engine) applyMailbox(batch []message) []message {
	e.mu.Lock()
	msgs := e.pending
	e.pending = batch[:0]
	e.mu.Unlock()
	now := e.clock.Now()
	for i, m := range msgs {
		switch m.kind {
		case msgSubmit:
			e.core.Submit(m.req)
		case msgCancel:
			e.core.Cancel(m.id, now)
		case msgReset:
			m.reply <- e.core.ResetPrefixCache(now)
		case msgLoadAdapter:
			e.core.LoadAdapter(m.adapter)
		default:
			e.applyControl(m)
		}
		msgs[i] = message{}
	}
	e.core.FlushReport()
	return msgs
}

// Run is the pass loop: apply the mailbox, BeginPass, sleep until the
// pass's deadline, EndPass, repeat (docs/ARCHITECTURE.md). It returns when ctx ends, after
// aborting every request still queued or running.
func (e *Engine) Run(ctx context.Context) error {
	defer e.stop()
	var (
		batch        []message
		prevDeadline time.Time
		busy         bool // the previous pass ran back to back with this one
		blocked      bool // the previous pass could schedule nothing
		lastSnapshot = time.Now()
	)
	hb := time.NewTimer(e.heartbeat)
	defer hb.Stop()
	for {
		if e.core.Idle() || blocked || e.paused {
			// Nothing can run until a message arrives: block, emitting FPM
			// heartbeats while idle so FPM consumers can tell an idle rank
			// from a dead one. A paused engine waits here too, with its
			// requests kept as they are.
			busy = false
			e.publishLoad()
			e.core.InspectState(e.clock.Now()) // the last state before idling
			hb.Reset(max(time.Until(lastSnapshot.Add(e.heartbeat)), 0))
			select {
			case <-ctx.Done():
				return nil
			case <-e.notify:
			case <-hb.C:
				e.core.Heartbeat()
				lastSnapshot = time.Now()
				continue
			}
		}
		batch = e.applyMailbox(batch)
		blocked = false
		if ctx.Err() != nil {
			return nil
		}
		if e.core.Idle() || e.paused {
			continue
		}
		now := e.clock.Now()
		start := now
		if busy && now.Sub(prevDeadline) <= 5*time.Millisecond {
			// Pace against deadlines so timer overshoot does not accumulate.
			start = prevDeadline
		}
		d := e.core.BeginPass(start)
		if !e.core.PassActive() {
			blocked = true
			continue
		}
		deadline := start.Add(d)
		if d == 0 {
			runtime.Gosched()
		} else if err := e.clock.SleepUntil(ctx, deadline); err != nil {
			e.core.EndPass(deadline, e.clock.Now())
			return nil
		}
		e.core.EndPass(deadline, e.clock.Now())
		e.publishLoad()
		prevDeadline = deadline
		busy = true
		lastSnapshot = time.Now()
	}
}

func (e *Engine) publishLoad() {
	e.running.Store(int64(e.core.NumRunning()))
	e.waiting.Store(int64(e.core.NumWaiting()))
	e.active.Store(int64(e.core.kv.numActiveBlocks()))
}

// stop refuses new messages and aborts everything still pending, queued or
// running, so no caller waits forever on a stopped engine.
func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	msgs := e.pending
	e.pending = nil
	e.mu.Unlock()
	now := e.clock.Now()
	for _, m := range msgs {
		switch m.kind {
		case msgSubmit:
			e.core.Submit(m.req)
		case msgReset, msgPause, msgResume, msgRetime:
			m.reply <- false
		}
	}
	e.core.CancelAll(now)
	e.core.FlushReport()
	e.publishLoad()
}
