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
	// Latency is a fixed time every transfer takes at least, its bytes
	// aside: the connection's setup and round trips
	// (llm-d-inference-sim's kv-cache-transfer-latency). A transfer
	// completes when its bytes have moved and Latency has passed since it
	// started; once its bytes have moved it no longer shares the
	// bandwidth.
	Latency time.Duration
}

// transferLink models a decode rank's incoming KV link as a processor-sharing
// queue: every transfer in flight gets an equal share of the bandwidth, so k
// simultaneous transfers of b bytes all finish after k·b/bandwidth, as the
// bytes demand. It is a pure function of the times it is given: no clock,
// no sleeping.
type transferLink struct {
	bytesPerSec float64       // +Inf: instant
	latency     time.Duration // after the speedup ratio
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
	ready     time.Time // start + the link's latency
}

func newTransferLink(cfg TransferConfig, speedup float64) transferLink {
	bps := cfg.BandwidthGBps * 1e9 * speedup
	if cfg.BandwidthGBps <= 0 || cfg.BytesPerToken <= 0 || NoDelay(speedup) {
		bps = math.Inf(1)
	}
	var lat time.Duration
	if cfg.Latency > 0 && !NoDelay(speedup) {
		lat = time.Duration(float64(cfg.Latency) / speedup)
	}
	return transferLink{bytesPerSec: bps, latency: lat}
}

// advance moves the link to now, draining each flow whose bytes are still
// moving by its share.
func (l *transferLink) advance(now time.Time) {
	if n := l.moving(); n > 0 && now.After(l.last) && !math.IsInf(l.bytesPerSec, 1) {
		share := l.bytesPerSec * now.Sub(l.last).Seconds() / float64(n)
		for _, f := range l.flows {
			if !l.moved(f) {
				f.remaining -= share
			}
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
	f.ready = now.Add(l.latency)
	f.remaining = float64(f.bytes)
	l.flows = append(l.flows, f)
}

// moved reports whether a flow has no bytes left. The tolerance is what the
// whole link moves in a nanosecond, the resolution of the times it is given.
func (l *transferLink) moved(f *transferFlow) bool {
	return math.IsInf(l.bytesPerSec, 1) || f.remaining <= l.bytesPerSec*1e-9
}

// moving counts the flows whose bytes are still moving.
func (l *transferLink) moving() int {
	n := 0
	for _, f := range l.flows {
		if !l.moved(f) {
			n++
		}
	}
	return n
}

// done reports whether a flow has completed at now: its bytes moved and
// the latency passed.
func (l *transferLink) done(f *transferFlow, now time.Time) bool {
	return l.moved(f) && !now.Before(f.ready)
}

// next returns the link's next event if no other flow starts: a flow's
// bytes finishing (which may complete it, and changes the others' shares)
// or a moved flow's latency passing.
func (l *transferLink) next() (time.Time, bool) {
	if len(l.flows) == 0 {
		return time.Time{}, false
	}
	least, n := math.Inf(1), 0
	var at time.Time
	for _, f := range l.flows {
		if l.moved(f) {
			t := f.ready
			if t.Before(l.last) {
				t = l.last
			}
			if at.IsZero() || t.Before(at) {
				at = t
			}
			continue
		}
		n++
		least = min(least, f.remaining)
	}
	if n > 0 {
		secs := least * float64(n) / l.bytesPerSec
		if t := l.last.Add(time.Duration(math.Ceil(secs * 1e9))); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, true
}

// complete advances to now and removes and returns the finished flows, in
// the order they started.
func (l *transferLink) complete(now time.Time, dst []*transferFlow) []*transferFlow {
	l.advance(now)
	kept := l.flows[:0]
	for _, f := range l.flows {
		if l.done(f, now) {
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
