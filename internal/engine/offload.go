package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// OffloadConfig puts KV offload tiers below a rank's block pool
// (docs/speculative-and-offload.md): a cached block whose last GPU copy is
// evicted moves to the first tier, and a prefix that misses on the GPU but
// continues in a tier is loaded back instead of recomputed. The zero value
// has no tiers.
type OffloadConfig struct {
	// Tiers are the lower tiers, fastest first (host memory, then disk).
	Tiers []OffloadTier
	// BlockBytes is the size of one KV block in bytes; with each tier's
	// bandwidth it gives the load time of a hit.
	BlockBytes int64
}

// OffloadTier is one offload tier.
type OffloadTier struct {
	Medium kv.Medium
	// NumBlocks is the tier's capacity in blocks of the pool's block size.
	NumBlocks int
	// BandwidthGBps is the speed of loading blocks back to the GPU, in
	// 10^9 bytes per second; 0 loads without delay.
	BandwidthGBps float64
}

// Enabled reports whether any tier is configured.
func (c OffloadConfig) Enabled() bool { return len(c.Tiers) > 0 }

func (c OffloadConfig) validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if c.BlockBytes < 1 {
		errs = append(errs, fmt.Errorf("kv offload: block size of %d bytes, want at least 1", c.BlockBytes))
	}
	for _, t := range c.Tiers {
		if !(t.BandwidthGBps >= 0) || math.IsInf(t.BandwidthGBps, 1) {
			errs = append(errs, fmt.Errorf("kv offload tier %s: bandwidth %v GB/s must be finite and >= 0", t.Medium, t.BandwidthGBps))
		}
	}
	return errors.Join(errs...)
}

// tierSpecs returns the kv package's view of the tiers.
func (c OffloadConfig) tierSpecs() []kv.TierSpec {
	specs := make([]kv.TierSpec, len(c.Tiers))
	for i, t := range c.Tiers {
		specs[i] = kv.TierSpec{Medium: t.Medium, NumBlocks: t.NumBlocks}
	}
	return specs
}

// loadTime is the time to load blocks back from tier i: their bytes over
// the tier's bandwidth, rounded to the nanosecond.
func (c OffloadConfig) loadTime(tier, blocks int) time.Duration {
	bw := c.Tiers[tier].BandwidthGBps
	if bw == 0 || blocks == 0 {
		return 0
	}
	secs := float64(int64(blocks)*c.BlockBytes) / (bw * 1e9)
	return time.Duration(math.Round(secs * float64(time.Second)))
}

// chargeLoads adds the load time of the blocks computedBlocks found in
// offload tiers to the pass, counts them as tier hits and records one
// transfer per tier.
func (m *kvManager) chargeLoads() {
	for _, tier := range m.loads {
		m.tierHits[tier]++
	}
	for tier := range m.tierHits {
		// Per tier, so the rounding is the same whatever the order of hits.
		n := 0
		for _, t := range m.loads {
			if t == tier {
				n++
			}
		}
		if n == 0 {
			continue
		}
		d := m.offload.loadTime(tier, n)
		m.loadTime += d
		m.loadOps = append(m.loadOps, KVTransfer{Type: string(m.lower.Medium(tier)) + "_to_GPU",
			Bytes: int64(n) * m.offload.BlockBytes, Seconds: d.Seconds()})
	}
}

// takeTransfers appends the pass's transfers to dst and forgets them: the
// load-backs, then per tier the blocks it took in (from the GPU for the
// first tier, from the tier above for the others), timed at the tier's
// bandwidth. Stores cost the pass no time: like vLLM's connector they
// overlap with computation.
func (m *kvManager) takeTransfers(dst []KVTransfer) []KVTransfer {
	if m.lower == nil {
		return dst
	}
	dst = append(dst, m.loadOps...)
	m.loadOps = m.loadOps[:0]
	m.lower.TakeStored(m.stored)
	for tier, n := range m.stored {
		if n == 0 {
			continue
		}
		src := string(kv.MediumGPU)
		if tier > 0 {
			src = string(m.lower.Medium(tier - 1))
		}
		dst = append(dst, KVTransfer{Type: src + "_to_" + string(m.lower.Medium(tier)),
			Bytes: int64(n) * m.offload.BlockBytes, Seconds: m.offload.loadTime(tier, n).Seconds()})
		m.stored[tier] = 0
	}
	return dst
}

// takeLoadTime returns the load time of the pass's load-backs and resets it.
func (m *kvManager) takeLoadTime() time.Duration {
	d := m.loadTime
	m.loadTime = 0
	return d
}

// tierGauges appends the cached blocks per medium to dst: nil without
// offload tiers, else the GPU pool then each tier.
func (m *kvManager) tierGauges(dst []TierGauge) []TierGauge {
	if m.lower == nil {
		return nil
	}
	dst = append(dst, TierGauge{Medium: string(kv.MediumGPU), Blocks: m.pool.NumCached()})
	for i := range m.lower.NumTiers() {
		dst = append(dst, TierGauge{Medium: string(m.lower.Medium(i)), Blocks: m.lower.Len(i)})
	}
	return dst
}
