package engine

import (
	"math"
	"time"
)

// Run-time timing changes. They take effect from the next pass on: a pass
// already modeled keeps its duration, so tokens already promised keep
// their delivery times.

// MaxPassDuration bounds one modeled duration (a pass's compute term, an
// adapter load): a tiny speedup ratio (1e-20) makes passes last this long —
// the rank is frozen, as asked — instead of overflowing time.Duration into
// a negative or zero pass that would make it instant.
const MaxPassDuration = 365 * 24 * time.Hour

// saturatingDuration rounds ns to a Duration, clamped to
// [0, MaxPassDuration] (NaN: 0).
func saturatingDuration(ns float64) time.Duration {
	switch {
	case !(ns > 0):
		return 0
	case ns >= float64(MaxPassDuration):
		return MaxPassDuration
	}
	return time.Duration(math.Round(ns))
}

// SetSpeedupRatio replaces the speedup ratio (0 and +Inf mean "no delay");
// the decode speedup ratio still applies on top of it.
func (c *Core) SetSpeedupRatio(ratio float64) {
	c.cfg.SpeedupRatio = ratio
	c.prefillDiv = divisor(ratio)
	c.decodeDiv = c.prefillDiv * divisor(c.cfg.DecodeSpeedupRatio)
	// Transfers in flight continue at the new speed.
	fresh := newTransferLink(c.cfg.Transfer, ratio)
	c.link.bytesPerSec, c.link.latency = fresh.bytesPerSec, fresh.latency
}

// SpeedupRatio returns the speedup ratio in effect.
func (c *Core) SpeedupRatio() float64 { return c.cfg.SpeedupRatio }

// SetExtraPassDelay adds d to the modeled duration of every pass that does
// work (a negative d counts as 0). The delay is part of the pass: its
// tokens are stamped with the later deadline and the observers and FPM
// snapshots report the longer duration.
func (c *Core) SetExtraPassDelay(d time.Duration) { c.extraPassDelay = min(max(d, 0), MaxPassDuration) }

// ExtraPassDelay returns the per-pass delay in effect.
func (c *Core) ExtraPassDelay() time.Duration { return c.extraPassDelay }
