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

// lateTolerance is how late a pass may end on the real clock and still be
// followed back to back by the next one (see Run).
const lateTolerance = 5 * time.Millisecond

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

	running, waiting, active, held atomic.Int64
	// passDeadline is the real-clock deadline (Unix ns) of the pass the
	// actor is sleeping through, 0 when it is not (PassDue).
	passDeadline atomic.Int64

	// paused is owned by the actor goroutine; pausedFlag mirrors it for
	// readers.
	paused     bool
	pausedFlag atomic.Bool

	// sleepBits and wakeDue mirror the Core's sleep state (SleepStatus).
	sleepBits, wakeDue atomic.Int64
	// stopping is set by the actor when its loop ends (stop).
	stopping bool
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
	msgReleaseHeld
	msgHoldsHandoff
	msgSleep
	msgWake
)

type message struct {
	kind    messageKind
	req     *Request
	id      uint64
	retime  TimingChange
	reply   chan bool
	adapter Adapter

	// Sleep mode (sleep.go): errc answers msgSleep and msgWake.
	sleepLevel int
	sleepMode  SleepMode
	tags       []string
	errc       chan error
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
	// HeldBlocks are the active blocks held for disaggregated handoffs.
	HeldBlocks int
}

// Load returns the rank's state after its latest pass.
func (e *Engine) Load() Load {
	return Load{Running: int(e.running.Load()), Waiting: int(e.waiting.Load()),
		ActiveBlocks: int(e.active.Load()), HeldBlocks: int(e.held.Load())}
}

// PassDue reports whether the actor is sleeping through a pass whose
// deadline has come: it is ready to run and waits only for a core. A
// goroutine doing long work on the engine's behalf (the HTTP layer writing
// a pass's tokens) yields the core when it sees this, so the modeled
// schedule does not slip on a busy machine.
func (e *Engine) PassDue(now time.Time) bool {
	d := e.passDeadline.Load()
	return d != 0 && now.UnixNano() >= d
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

// SubmitAll queues several requests in one mailbox step, so the actor
// applies them together and no pass starts between them: the choices of an
// n > 1 request (or the prompts of a batched completion) enter the engine in
// the same pass, as vLLM's engine core adds a request's sequences at once.
// Either all are queued or, when the engine has stopped, none.
func (e *Engine) SubmitAll(rs []Request) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return ErrStopped
	}
	for i := range rs {
		e.pending = append(e.pending, message{kind: msgSubmit, req: &rs[i]})
	}
	e.mu.Unlock()
	e.wake()
	return nil
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
	return e.ask(ctx, message{kind: msgReset})
}

// ask posts m with a reply channel and waits for the actor's answer.
func (e *Engine) ask(ctx context.Context, m message) (bool, error) {
	m.reply = make(chan bool, 1)
	if err := e.post(m); err != nil {
		return false, err
	}
	select {
	case ok := <-m.reply:
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
	e.wake()
	return nil
}

// wake pokes the actor's 1-slot notify channel without blocking.
func (e *Engine) wake() {
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// applyMailbox applies every pending message in arrival order.
// now is the engine time they take effect at.
func (e *Engine) applyMailbox(batch []message, now time.Time) []message {
	e.mu.Lock()
	msgs := e.pending
	e.pending = batch[:0]
	e.mu.Unlock()
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
		case msgReleaseHeld:
			released := e.core.ReleaseHeld(m.id)
			if m.reply != nil {
				m.reply <- released
			}
		case msgHoldsHandoff:
			m.reply <- e.core.HoldsHandoff(m.id)
		case msgSleep, msgWake:
			e.applySleep(m, now)
		default:
			e.applyControl(m)
		}
		msgs[i] = message{}
	}
	e.core.AdvanceTimers(now)
	e.core.FlushReport()
	e.mirrorSleep()
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
		busy         bool      // the previous pass ran back to back with this one
		timerDue     time.Time // the engine timer that woke the loop (zero: none)
		blocked      bool      // the previous pass could schedule nothing
		lastSnapshot = e.clock.Now()
	)
	hb := time.NewTimer(e.heartbeat)
	defer hb.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if e.core.Idle() || blocked || e.paused {
			// Nothing can run until a message arrives: block, emitting FPM
			// heartbeats while idle so FPM consumers can tell an idle rank
			// from a dead one. A paused engine waits here too, with its
			// requests kept as they are.
			busy = false
			e.publishLoad()
			e.core.InspectState(e.clock.Now()) // the last state before idling
			hb.Reset(max(lastSnapshot.Add(e.heartbeat).Sub(e.clock.Now()), 0))
			// Transfers completing and holds expiring need no message:
			// wake for the next one.
			var timerC <-chan time.Time
			next, hasNext := e.core.NextTimer()
			if hasNext && !e.paused {
				timer.Reset(max(next.Sub(e.clock.Now()), 0))
				timerC = timer.C
			}
			select {
			case <-ctx.Done():
				return nil
			case <-e.notify:
			case <-timerC:
				// Like back-to-back passes, what the timer was set for
				// happens at its due time, so timer overshoot does not
				// add to the modeled times.
				if e.clock.Now().Sub(next) <= lateTolerance {
					timerDue = next
				}
			case <-hb.C:
				e.core.Heartbeat()
				lastSnapshot = e.clock.Now()
				continue
			}
		}
		now := e.clock.Now()
		if !timerDue.IsZero() {
			now, timerDue = timerDue, time.Time{}
			busy, prevDeadline = true, now
		}
		batch = e.applyMailbox(batch, now)
		blocked = false
		if ctx.Err() != nil {
			return nil
		}
		if e.core.Idle() || e.paused {
			continue
		}
		now = e.clock.Now()
		start := now
		if busy {
			// Pace against deadlines so neither timer overshoot nor
			// the loop's own work between passes accumulates.
			start = prevDeadline
		}
		d := e.core.BeginPass(start)
		if !e.core.PassActive() {
			if busy && start.Before(now) {
				// Paced from the previous deadline, the pass may have had
				// nothing to do but requests that arrived after that
				// deadline: try again from the clock before calling the
				// rank blocked.
				busy = false
				continue
			}
			blocked = true
			continue
		}
		deadline := start.Add(d)
		e.passDeadline.Store(deadline.UnixNano())
		if d == 0 {
			runtime.Gosched()
		} else if err := e.clock.SleepUntil(ctx, deadline); err != nil {
			e.passDeadline.Store(0)
			e.core.EndPass(deadline, e.clock.Now())
			return nil
		}
		woke := e.clock.Now()
		e.passDeadline.Store(0)
		if e.core.DeliverPass(deadline, woke) {
			if d > 0 {
				// The pass's tokens are out: let their writers
				// (delivery shards, handlers) have the core before
				// the bookkeeping and the next pass's scheduling,
				// which can wait until they are done. (Zero-length
				// passes yield before they deliver, above: their
				// writers then take several passes' tokens at once.)
				runtime.Gosched()
			}
			e.core.SettlePass(woke)
		}
		e.publishLoad()
		prevDeadline = deadline
		// The next pass follows this one back to back when this one
		// ended on time: the wake-up was at most lateTolerance late. The
		// time EndPass, the mailbox and BeginPass take is the mock's own
		// work, which a GPU's pass would overlap, so it does not count.
		// A wake-up later than that (an overloaded machine, or a loop
		// that cannot keep up) starts the next pass from the clock.
		busy = woke.Sub(deadline) <= lateTolerance
		lastSnapshot = e.clock.Now()
	}
}

func (e *Engine) publishLoad() {
	e.running.Store(int64(e.core.NumRunning()))
	e.waiting.Store(int64(e.core.NumWaiting()))
	e.active.Store(int64(e.core.kv.numActiveBlocks()))
	e.held.Store(int64(e.core.NumHeldBlocks()))
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
		case msgReset, msgPause, msgResume, msgRetime, msgHoldsHandoff:
			m.reply <- false
		case msgReleaseHeld:
			if m.reply != nil {
				m.reply <- false
			}
		case msgSleep, msgWake:
			m.errc <- ErrStopped
		}
	}
	e.stopping = true
	e.core.finishWake(false)
	e.core.finishDrain(ErrStopped)
	e.core.CancelAll(now)
	e.core.FlushReport()
	e.publishLoad()
}
