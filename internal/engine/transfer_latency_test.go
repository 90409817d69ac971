package engine

import (
	"slices"
	"testing"
	"time"
)

// A transfer takes at least the link's latency: with infinite bandwidth a
// 1000-token handoff arrives after exactly the latency.
func TestTransferLatencyAloneDelaysTheHandoff(t *testing.T) {
	h := disaggHarness(t, func(c *Config) {
		c.Transfer = TransferConfig{Latency: 40 * time.Millisecond}
	})
	var pulled []bool
	r := h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 2), &pulled)
	h.sim.Run(0)
	res := drain(r)
	want := []float64{50, 60} // 40 ms transfer, then decode passes of 10 ms
	if !slices.EqualFunc(res.times, want, func(a, b float64) bool { return approx(a, b, msTolerance) }) {
		t.Errorf("token times %v, want %v", res.times, want)
	}
}

// With bandwidth too, a transfer completes when its bytes have moved and
// the latency has passed, whichever is later; a flow whose bytes have moved
// no longer takes a share of the link.
func TestTransferLatencyAndBandwidth(t *testing.T) {
	for _, c := range []struct {
		latency time.Duration
		want    float64 // ms of the transfer of 1 GB at 64 GB/s (15.625 ms)
	}{{5 * time.Millisecond, 15.625}, {30 * time.Millisecond, 30}} {
		h := disaggHarness(t, func(cfg *Config) { cfg.Transfer.Latency = c.latency })
		var pulled []bool
		h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 1), &pulled)
		h.sim.Run(0)
		var got []TransferRecord
		for _, p := range h.obs.passes {
			got = append(got, p.Handoffs...)
		}
		if len(got) != 1 || !approx(ms(got[0].Duration), c.want, msTolerance) {
			t.Errorf("latency %v: transfers %+v, want one of %v ms", c.latency, got, c.want)
		}
	}
}

// On the link itself: two flows start together, 1 GB and 2 GB at 64 GB/s
// with a 40 ms latency. Both move at 32 GB/s until the first's bytes are in
// (31.25 ms); from then the second has the whole link and its last GB takes
// 15.625 ms (46.875 ms), while the first completes when its latency has
// passed (40 ms).
func TestTransferLinkLatencyFreesTheShareOfAMovedFlow(t *testing.T) {
	l := newTransferLink(TransferConfig{BytesPerToken: 1, BandwidthGBps: 64, Latency: 40 * time.Millisecond}, 1)
	t0 := VirtualEpoch
	a := &transferFlow{bytes: 1_000_000_000}
	b := &transferFlow{bytes: 2_000_000_000}
	l.add(a, t0)
	l.add(b, t0)
	var done []*transferFlow
	var at []float64
	for len(done) < 2 {
		next, ok := l.next()
		if !ok {
			t.Fatal("no next event with flows in flight")
		}
		n := len(done)
		done = l.complete(next, done)
		for range len(done) - n {
			at = append(at, ms(next.Sub(t0)))
		}
	}
	if done[0] != a || done[1] != b || !approx(at[0], 40, msTolerance) || !approx(at[1], 46.875, msTolerance) {
		t.Errorf("completions at %v ms (first is a: %v), want a at 40 and b at 46.875", at, done[0] == a)
	}
}
