package engine

import (
	"context"
	"sync"
	"time"
)

// Clock is the engine's only source of time. The live loop uses RealClock;
// the Simulator (and so the tests) uses a VirtualClock that jumps instead of
// sleeping.
type Clock interface {
	// Now returns the current engine time.
	Now() time.Time
	// SleepUntil returns once Now() >= t, or early with ctx's error.
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is wall time with timer-based sleeping.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps until t on a timer, or until ctx ends.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// VirtualEpoch is time zero of a VirtualClock: virtual scenario times are
// durations since this instant.
var VirtualEpoch = time.Unix(0, 0).UTC()

// VirtualClock is simulated time: SleepUntil jumps forward and never blocks.
// The zero value starts at VirtualEpoch.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Duration
}

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return VirtualEpoch.Add(c.now)
}

// Since returns the virtual time elapsed since VirtualEpoch.
func (c *VirtualClock) Since() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil sets the virtual time to t if t is later than now.
func (c *VirtualClock) SleepUntil(_ context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := t.Sub(VirtualEpoch); d > c.now {
		c.now = d
	}
	return nil
}
