package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sleep mode, as vLLM's EngineCore has it (vllm/v1/engine/core.py,
// sleep / wake_up / is_sleeping; docs/sleep-mode.md): sleeping pauses the
// scheduler and, from level 1 on, discards the KV cache; waking brings the
// weights back, which takes time, and resumes scheduling. While asleep no
// pass runs: requests that arrive wait in the queue until the engine is
// awake again, as vLLM's paused scheduler keeps them.

// SleepMode says what sleeping does with the requests in flight (vLLM's
// PauseMode).
type SleepMode string

// Sleep modes.
const (
	// SleepAbort aborts every queued and running request (vLLM's default).
	SleepAbort SleepMode = "abort"
	// SleepKeep keeps them where they are, frozen until the wake-up. The
	// mock allows it only at level 0: at levels 1 and 2 vLLM discards the
	// KV cache under requests that still hold it.
	SleepKeep SleepMode = "keep"
	// SleepWait lets the running requests finish first while admitting no
	// other (vLLM's PAUSED_NEW), then sleeps; queued requests stay queued.
	// Only the vLLM and TensorRT-LLM schedulers drain so; SGLang's is
	// refused (ErrSleepMode).
	SleepWait SleepMode = "wait"
)

// Memory tags a wake-up can restore one at a time (vLLM's wake_up tags).
const (
	TagWeights    = "weights"
	TagKVCache    = "kv_cache"
	TagScheduling = "scheduling"
)

// ErrSleepMode is returned for a sleep the mock does not carry out.
var ErrSleepMode = errors.New("unsupported sleep")

// ErrSleepDisabled is returned when the engine was built without sleep mode.
var ErrSleepDisabled = errors.New("sleep mode is not enabled")

// SleepConfig enables sleep mode and prices waking up. Its zero value
// disables it.
type SleepConfig struct {
	Enabled bool
	// WeightBytes is the size of the model's weights on this rank: what a
	// wake-up moves back onto the device.
	WeightBytes int64
	// HostBandwidth is the host-to-device copy rate in bytes per second
	// (level 1 kept the weights in host memory); DiskBandwidth is the
	// read rate of the checkpoint (level 2 discarded them). 0 means
	// instant.
	HostBandwidth, DiskBandwidth float64
}

func (c SleepConfig) validate() error {
	if c.WeightBytes < 0 || c.HostBandwidth < 0 || c.DiskBandwidth < 0 {
		return fmt.Errorf("sleep: weight bytes %d and bandwidths %g, %g must be >= 0",
			c.WeightBytes, c.HostBandwidth, c.DiskBandwidth)
	}
	return nil
}

// reloadTime is how long moving the weights back takes after a sleep at
// level (1: from host memory, 2: from disk).
func (c SleepConfig) reloadTime(level int) time.Duration {
	bw := c.HostBandwidth
	if level >= 2 {
		bw = c.DiskBandwidth
	}
	if bw <= 0 || c.WeightBytes == 0 {
		return 0
	}
	return time.Duration(float64(c.WeightBytes) / bw * float64(time.Second))
}

// SleepStatus is a rank's sleep state.
type SleepStatus struct {
	// Sleeping is vLLM's is_sleeping: the scheduler is paused or some
	// memory is still asleep.
	Sleeping bool
	// Level is the level of the current sleep (0, 1 or 2); meaningful
	// only while Sleeping.
	Level int
	// Weights and KVCache report which memory is still asleep.
	Weights, KVCache bool
	// WakeDue is when a wake-up in progress completes (zero: none).
	WakeDue time.Time
}

// sleepState is the Core's part of sleep mode.
type sleepState struct {
	status SleepStatus
	// wakeTags are the tags the wake-up in progress restores, wakeDone
	// its callers' completions.
	wakeTags []string
	wakeDone []func(ok bool)
	// draining: a mode=wait sleep at drainLevel waits for the running
	// requests to finish; drainDone are its callers' completions.
	draining   bool
	drainLevel int
	drainDone  []func(error)
}

// SleepStatus returns the rank's sleep state.
func (c *Core) SleepStatus() SleepStatus { return c.sleep.status }

// asleep reports whether the scheduler must not run passes (a draining
// rank still runs its running requests).
func (c *Core) asleep() bool { return c.sleep.status.Sleeping && !c.sleep.draining }

// admitPaused reports whether the scheduler must admit no waiting request.
func (c *Core) admitPaused() bool { return c.sleep.draining }

// Sleep puts the rank to sleep at level 0 (pause scheduling), 1 (weights
// kept in host memory, KV cache discarded) or 2 (both discarded). With
// SleepAbort every request in flight ends as aborted; from level 1 on the
// prefix cache is cleared with one AllBlocksCleared event and KV usage
// drops to zero. Sleeping again while asleep applies mode again and keeps
// the deeper level, as vLLM's executor ignores a second sleep. SleepWait
// starts a drain (SleepWhenDrained, with no completion callback).
func (c *Core) Sleep(level int, mode SleepMode, now time.Time) error {
	if !c.cfg.Sleep.Enabled {
		return ErrSleepDisabled
	}
	if level < 0 || level > 2 {
		return fmt.Errorf("%w: level must be 0, 1 or 2, got %d", ErrSleepMode, level)
	}
	switch mode {
	case SleepAbort:
	case SleepKeep:
		if level > 0 && !c.Idle() {
			return fmt.Errorf("%w: mode=keep at level %d would discard the KV cache of %d requests in flight",
				ErrSleepMode, level, c.NumRunning()+c.NumWaiting())
		}
	case SleepWait:
		return c.sleepWhenDrained(level, now, nil)
	default:
		return fmt.Errorf("%w: mode must be abort, wait or keep, got %q", ErrSleepMode, mode)
	}
	if mode == SleepAbort {
		c.CancelAll(now)
	}
	c.sleepNow(level, now)
	// A drain in progress is overtaken: the rank is asleep now.
	c.finishDrain(nil)
	return nil
}

// sleepNow marks the rank asleep at level and, from level 1 on, discards
// the KV cache.
func (c *Core) sleepNow(level int, now time.Time) {
	st := &c.sleep.status
	if !st.Sleeping {
		*st = SleepStatus{Sleeping: true, Level: level}
	}
	if level >= 1 {
		// Held handoffs lose their KV with the cache.
		for _, h := range c.holds {
			if !h.dropped {
				c.dropHold(h, false)
			}
		}
		c.compactHolds()
		if !st.Weights {
			st.Level = max(st.Level, level)
			st.Weights, st.KVCache = true, true
		}
		if c.kv.resetPrefixCache() {
			c.publishEvents(now)
		}
	}
	// A wake-up in progress is overtaken by the new sleep.
	c.finishWake(false)
	st.WakeDue = time.Time{}
	c.gaugesDirty = true
	c.insp.stale = true // the live view shows the state
}

// SleepWhenDrained is Sleep with SleepWait: no waiting request is admitted
// any more, the running ones run to their end, then the rank sleeps at
// level and done (if not nil) is called with nil — at once when nothing
// runs. A sleep with another mode completes it early; a wake-up cancels
// it (done gets an ErrSleepMode error).
func (c *Core) SleepWhenDrained(level int, now time.Time, done func(error)) error {
	if !c.cfg.Sleep.Enabled {
		return ErrSleepDisabled
	}
	if level < 0 || level > 2 {
		return fmt.Errorf("%w: level must be 0, 1 or 2, got %d", ErrSleepMode, level)
	}
	return c.sleepWhenDrained(level, now, done)
}

func (c *Core) sleepWhenDrained(level int, now time.Time, done func(error)) error {
	if c.kv.radix != nil {
		return fmt.Errorf("%w: mode=wait is not supported for --engine-type sglang (use abort or keep)", ErrSleepMode)
	}
	if done != nil {
		c.sleep.drainDone = append(c.sleep.drainDone, done)
	}
	if !c.sleep.status.Sleeping {
		c.sleep.status = SleepStatus{Sleeping: true, Level: level}
	}
	c.sleep.drainLevel = max(c.sleep.drainLevel, level)
	c.sleep.draining = true
	c.gaugesDirty = true
	c.advanceDrain(now)
	return nil
}

// advanceDrain puts a draining rank to sleep once nothing runs.
func (c *Core) advanceDrain(now time.Time) {
	if !c.sleep.draining || len(c.running) > 0 {
		return
	}
	c.sleep.draining = false
	c.sleepNow(c.sleep.drainLevel, now)
	c.finishDrain(nil)
}

// finishDrain ends a drain (completed, overtaken or cancelled) and tells
// its callers.
func (c *Core) finishDrain(err error) {
	c.sleep.draining, c.sleep.drainLevel = false, 0
	for _, f := range c.sleep.drainDone {
		f(err)
	}
	clear(c.sleep.drainDone)
	c.sleep.drainDone = c.sleep.drainDone[:0]
}

// WakeUp starts waking the rank: the memory named by tags (nil: all) comes
// back, the weights after their reload time (SleepConfig), and scheduling
// resumes once nothing is asleep any more. done, if not nil, is called
// with true when this wake-up has completed (at once when there is
// nothing to restore), with false when a sleep or the engine's stop
// overtook it. Unknown tags are an error; a tag that is not asleep is ignored,
// as vLLM's executor warns and ignores it.
func (c *Core) WakeUp(tags []string, now time.Time, done func(ok bool)) error {
	if !c.cfg.Sleep.Enabled {
		return ErrSleepDisabled
	}
	for _, t := range tags {
		switch t {
		case TagWeights, TagKVCache, TagScheduling:
		default:
			return fmt.Errorf("%w: unknown tag %q (weights, kv_cache or scheduling)", ErrSleepMode, t)
		}
	}
	if c.sleep.draining {
		// vLLM's wake-up resumes the scheduler: the pending sleep is off.
		c.finishDrain(fmt.Errorf("%w: woken before the running requests drained", ErrSleepMode))
		if !c.sleep.status.Weights && !c.sleep.status.KVCache {
			c.sleep.status = SleepStatus{}
			c.gaugesDirty = true
		}
	}
	st := &c.sleep.status
	if !st.Sleeping {
		if done != nil {
			done(true)
		}
		return nil
	}
	if tags == nil {
		tags = []string{TagWeights, TagKVCache, TagScheduling}
	}
	var d time.Duration
	for _, t := range tags {
		if t == TagWeights && st.Weights {
			d = c.cfg.Sleep.reloadTime(st.Level)
		}
	}
	c.sleep.wakeTags = append(c.sleep.wakeTags, tags...)
	if done != nil {
		c.sleep.wakeDone = append(c.sleep.wakeDone, done)
	}
	due := now.Add(d)
	if st.WakeDue.After(due) {
		due = st.WakeDue
	}
	st.WakeDue = due
	if d == 0 && !due.After(now) {
		c.completeWake()
	}
	return nil
}

// completeWake restores what the wake-up in progress named, resumes
// scheduling when nothing is left asleep, and tells its callers.
func (c *Core) completeWake() {
	st := &c.sleep.status
	for _, t := range c.sleep.wakeTags {
		switch t {
		case TagWeights:
			st.Weights = false
		case TagKVCache:
			st.KVCache = false
		}
	}
	st.WakeDue = time.Time{}
	// vLLM resumes its scheduler on any wake-up but says a model must be
	// woken with every tag before it is used; the mock runs no pass
	// until then.
	if !st.Weights && !st.KVCache {
		*st = SleepStatus{}
	}
	c.finishWake(true)
	c.gaugesDirty = true
	c.insp.stale = true
}

// finishWake calls the completions of a wake-up: ok when it completed,
// not when it was overtaken or the engine stopped.
func (c *Core) finishWake(ok bool) {
	for _, f := range c.sleep.wakeDone {
		f(ok)
	}
	clear(c.sleep.wakeDone)
	c.sleep.wakeDone = c.sleep.wakeDone[:0]
	c.sleep.wakeTags = c.sleep.wakeTags[:0]
}

// advanceWake completes a wake-up that is due at now, and a drain whose
// running requests have finished.
func (c *Core) advanceWake(now time.Time) {
	c.advanceDrain(now)
	if due := c.sleep.status.WakeDue; !due.IsZero() && !now.Before(due) {
		c.completeWake()
	}
}

// Sleep puts every request in flight through mode and the rank to sleep at
// level (Core.Sleep); it returns once the rank sleeps — with SleepWait,
// after its running requests have finished.
func (e *Engine) Sleep(ctx context.Context, level int, mode SleepMode) error {
	return e.askErr(ctx, message{kind: msgSleep, sleepLevel: level, sleepMode: mode})
}

// WakeUp wakes the memory named by tags (nil: all) and returns once the
// wake-up has completed, after its modeled reload time (Core.WakeUp).
func (e *Engine) WakeUp(ctx context.Context, tags []string) error {
	return e.askErr(ctx, message{kind: msgWake, tags: tags})
}

// SleepStatus returns the rank's sleep state as of the actor's latest
// change, without involving the actor.
func (e *Engine) SleepStatus() SleepStatus {
	bits := e.sleepBits.Load()
	st := SleepStatus{Sleeping: bits&1 != 0, Weights: bits&2 != 0, KVCache: bits&4 != 0, Level: int(bits >> 4)}
	if due := e.wakeDue.Load(); due != 0 {
		st.WakeDue = time.Unix(0, due)
	}
	return st
}

// mirrorSleep publishes the Core's sleep state for SleepStatus.
func (e *Engine) mirrorSleep() {
	st := e.core.SleepStatus()
	var bits int64
	if st.Sleeping {
		bits |= 1
	}
	if st.Weights {
		bits |= 2
	}
	if st.KVCache {
		bits |= 4
	}
	e.sleepBits.Store(bits | int64(st.Level)<<4)
	var due int64
	if !st.WakeDue.IsZero() {
		due = st.WakeDue.UnixNano()
	}
	e.wakeDue.Store(due)
}

// applySleep carries out a sleep or wake-up message on the actor.
func (e *Engine) applySleep(m message, now time.Time) {
	switch m.kind {
	case msgSleep:
		if m.sleepMode == SleepWait {
			err := e.core.SleepWhenDrained(m.sleepLevel, now, func(err error) {
				e.mirrorSleep()
				if err == nil && e.stopping {
					err = ErrStopped
				}
				m.errc <- err
			})
			e.mirrorSleep()
			if err != nil {
				m.errc <- err
			}
			return
		}
		err := e.core.Sleep(m.sleepLevel, m.sleepMode, now)
		e.mirrorSleep()
		m.errc <- err
	case msgWake:
		err := e.core.WakeUp(m.tags, now, func(ok bool) {
			e.mirrorSleep()
			switch {
			case ok:
				m.errc <- nil
			case e.stopping:
				m.errc <- ErrStopped
			default:
				m.errc <- errWakeOvertaken
			}
		})
		e.mirrorSleep()
		if err != nil {
			m.errc <- err
		}
	}
}

// errWakeOvertaken is a wake-up's answer when a sleep came before it
// completed.
var errWakeOvertaken = fmt.Errorf("%w: put back to sleep before the wake-up completed", ErrSleepMode)

// askErr posts m with an error channel and waits for the actor's answer.
func (e *Engine) askErr(ctx context.Context, m message) error {
	m.errc = make(chan error, 1)
	if err := e.post(m); err != nil {
		return err
	}
	select {
	case err := <-m.errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
