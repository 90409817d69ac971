package engine

import (
	"context"
	"time"
)

// Operator controls of the live actor: pause, resume and run-time timing
// changes. Each is a mailbox message like Submit, so it takes effect
// between two passes (a pass already running finishes and delivers its
// tokens first), and each call returns once the actor has applied it.

// TimingChange changes a running engine's timing; nil fields stay as
// they are.
type TimingChange struct {
	// SpeedupRatio replaces the speedup ratio (0 or +Inf: no delay).
	SpeedupRatio *float64
	// ExtraPassDelay is added to every pass that does work.
	ExtraPassDelay *time.Duration
}

// Pause stops the engine from running passes: requests stay queued or
// running with their KV blocks, their streams stall, and new submissions
// queue up behind them. Idle FPM heartbeats continue.
func (e *Engine) Pause(ctx context.Context) error {
	return e.control(ctx, message{kind: msgPause})
}

// Resume lets a paused engine run passes again; its next pass starts at
// the current time (the pause is not caught up on).
func (e *Engine) Resume(ctx context.Context) error {
	return e.control(ctx, message{kind: msgResume})
}

// Retime applies a timing change from the next pass on.
func (e *Engine) Retime(ctx context.Context, change TimingChange) error {
	return e.control(ctx, message{kind: msgRetime, retime: change})
}

// Paused reports whether the engine is paused.
func (e *Engine) Paused() bool { return e.pausedFlag.Load() }

// control posts m and waits until the actor has applied it.
func (e *Engine) control(ctx context.Context, m message) error {
	m.reply = make(chan bool, 1)
	if err := e.post(m); err != nil {
		return err
	}
	select {
	case ok := <-m.reply:
		if !ok {
			return ErrStopped
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applyControl carries out a control message on the actor goroutine.
func (e *Engine) applyControl(m message) {
	switch m.kind {
	case msgPause:
		e.paused = true
	case msgResume:
		e.paused = false
	case msgRetime:
		if m.retime.SpeedupRatio != nil {
			e.core.SetSpeedupRatio(*m.retime.SpeedupRatio)
		}
		if m.retime.ExtraPassDelay != nil {
			e.core.SetExtraPassDelay(*m.retime.ExtraPassDelay)
		}
	}
	e.pausedFlag.Store(e.paused)
	m.reply <- true
}
