package engine

import (
	"math"
	"time"
)

// TransferTimingMode says how many prompt tokens a disaggregated decode
// pulls from its prefill worker.
type TransferTimingMode string

// Transfer timing modes.
const (
	// TransferFullPrompt moves the whole prompt's KV (Dynamo's default).
	TransferFullPrompt TransferTimingMode = "full_prompt"
	// TransferDestinationMissing moves only the blocks the decode rank does
	// not already hold in its prefix cache (what vLLM's NixlConnector reads:
	// the prompt tokens beyond the local prefix hit).
	TransferDestinationMissing TransferTimingMode = "destination_missing"
)

// TransferConfig is the KV transfer link of a rank receiving disaggregated
// handoffs. The zero value moves KV instantly.
type TransferConfig struct {
	// BytesPerToken is the KV size of one token; 0 = no transfer time.
	BytesPerToken int64
	// BandwidthGBps is the link's bandwidth in GB/s (1e9 bytes per second);
	// 0 = no transfer time. Concurrent transfers share it equally.
	BandwidthGBps float64
	// Mode chooses which tokens are moved; "" means full_prompt.
	Mode TransferTimingMode
}

// transferLink models a decode rank's incoming KV link as a processor-sharing
// queue: every transfer in flight gets an equal share of the bandwidth, so k
// simultaneous transfers of b bytes all finish after k·b/bandwidth, as the
// bytes demand. It is a pure function of the times it is given: no clock,
// no sleeping.
type transferLink struct {
	bytesPerSec float64 // +Inf: instant
	flows       []*transferFlow
	last        time.Time // the instant the flows' remaining bytes refer to
}

// transferFlow is one handoff's transfer.
type transferFlow struct {
	seq       *sequence
	bytes     int64
	tokens    int
	remaining float64
	start     time.Time
}

func newTransferLink(cfg TransferConfig, speedup float64) transferLink {
	bps := cfg.BandwidthGBps * 1e9 * speedup
	if cfg.BandwidthGBps <= 0 || cfg.BytesPerToken <= 0 || NoDelay(speedup) {
		bps = math.Inf(1)
	}
	return transferLink{bytesPerSec: bps}
}

// advance moves the link to now, draining each flow by its share.
func (l *transferLink) advance(now time.Time) {
	if n := len(l.flows); n > 0 && now.After(l.last) && !math.IsInf(l.bytesPerSec, 1) {
		share := l.bytesPerSec * now.Sub(l.last).Seconds() / float64(n)
		for _, f := range l.flows {
			f.remaining -= share
		}
	}
	if now.After(l.last) || l.last.IsZero() {
		l.last = now
	}
}

// add starts a transfer at now.
func (l *transferLink) add(f *transferFlow, now time.Time) {
	l.advance(now)
	f.start = now
	f.remaining = float64(f.bytes)
	l.flows = append(l.flows, f)
}

// done reports whether a flow has no bytes left. The tolerance is what the
// whole link moves in a nanosecond, the resolution of the times it is given.
func (l *transferLink) done(f *transferFlow) bool {
	return math.IsInf(l.bytesPerSec, 1) || f.remaining <= l.bytesPerSec*1e-9
}

// next returns when the next flow completes if no other flow starts.
func (l *transferLink) next() (time.Time, bool) {
	if len(l.flows) == 0 {
		return time.Time{}, false
	}
	least := math.Inf(1)
	for _, f := range l.flows {
		if l.done(f) {
			return l.last, true
		}
		least = min(least, f.remaining)
	}
	secs := least * float64(len(l.flows)) / l.bytesPerSec
	return l.last.Add(time.Duration(math.Ceil(secs * 1e9))), true
}

// complete advances to now and removes and returns the finished flows, in
// the order they started.
func (l *transferLink) complete(now time.Time, dst []*transferFlow) []*transferFlow {
	l.advance(now)
	kept := l.flows[:0]
	for _, f := range l.flows {
		if l.done(f) {
			dst = append(dst, f)
		} else {
			kept = append(kept, f)
		}
	}
	clear(l.flows[len(kept):])
	l.flows = kept
	return dst
}

// remove drops a flow (its request was cancelled).
func (l *transferLink) remove(s *sequence, now time.Time) bool {
	l.advance(now)
	for i, f := range l.flows {
		if f.seq == s {
			l.flows = append(l.flows[:i], l.flows[i+1:]...)
			return true
		}
	}
	return false
}
