package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// offloadConfig is a CPU tier (and optionally a disk tier) whose blocks of
// 2 MiB load in 0.5 ms from the CPU (4.194304 GB/s) and 2 ms from disk.
func offloadConfig(cpuBlocks, diskBlocks int) OffloadConfig {
	c := OffloadConfig{BlockBytes: 2 << 20, Tiers: []OffloadTier{
		{Medium: kv.MediumCPU, NumBlocks: cpuBlocks, BandwidthGBps: 4.194304}}}
	if diskBlocks > 0 {
		c.Tiers = append(c.Tiers, OffloadTier{Medium: kv.MediumDisk, NumBlocks: diskBlocks, BandwidthGBps: 1.048576})
	}
	return c
}

// TestScenarioS26OffloadHitInTheCPUTier: a workload overflows a 10-block
// GPU pool, then repeats its first prompt, which hits in the CPU tier.
//
//	A (100 tokens, 2 output) at 0 ms: 6 full blocks cached, released at 40 ms.
//	B (150 tokens, 1 output) at 100 ms: needs all 10 blocks, evicts A's 6
//	  cached blocks: each GPU BlockRemoved is followed by a CPU BlockStored.
//	A again at 200 ms: misses on the GPU, finds its 6 blocks in the CPU tier
//	  (never the block with the last token: (100 − 1) / 16 = 6), loads them
//	  (6 × 0.5 ms = 3 ms) and prefills the remaining 4 tokens:
//	  TTFT = 3 ms load + 20 ms prefill + 10 ms decode = 33 ms.
func TestScenarioS26OffloadHitInTheCPUTier(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.NumBlocks = 10
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Offload = offloadConfig(20, 0)
	})
	promptA := seqTokens(1000, 100)
	names := map[uint64]string{}
	blockNames(t, h.cfg, "a", promptA, names)
	blockNames(t, h.cfg, "b", seqTokens(5000, 150), names)
	h.submitAt(0, promptA, []uint32{1, 2})
	h.submitAt(100, seqTokens(5000, 150), []uint32{3})
	again := h.submitAt(200, promptA, []uint32{4})
	h.sim.Run(0)

	res := drain(again)
	if len(res.times) != 1 || !approx(res.times[0], 233, msTolerance) {
		t.Fatalf("repeat of A: token times %v, want [233] (TTFT 33 ms)", res.times)
	}
	if res.fin == nil || res.fin.CachedTokens != 96 {
		t.Errorf("repeat of A: cached tokens %+v, want 96 (the loaded blocks count as cached, as in vLLM)", res.fin)
	}
	// Pass 3 admits B: A's blocks leave the GPU for the CPU tier.
	wantB := "Removed[a5] Stored[a5 medium=CPU] Removed[a4] Stored[a4 medium=CPU] Removed[a3] Stored[a3 medium=CPU] " +
		"Removed[a2] Stored[a2 medium=CPU] Removed[a1] Stored[a1 medium=CPU] Removed[a0] Stored[a0 medium=CPU] " +
		"Stored[b0,b1,b2,b3,b4,b5,b6,b7,b8 parent=-]"
	if got := describeMedia(h.events[3], names); got != wantB {
		t.Errorf("pass 3 events:\n got %s\nwant %s", got, wantB)
	}
	// Pass 4 admits A again: B's blocks are offloaded as A's are loaded
	// back and re-announced on the GPU.
	if got := describeMedia(h.events[4], names); !containsAll(got, "Stored[a0,a1,a2,a3,a4,a5 parent=-]", "Stored[b8 medium=CPU]") {
		t.Errorf("pass 4 events: %s", got)
	}
	p5 := h.obs.passes[3]
	if p5.ExternalPrefixHits != 96 || p5.ExternalPrefixQueries != 100 || p5.PrefixHits != 0 || !slices.Equal(p5.TierHits, []int{6}) {
		t.Errorf("pass 4 report: external %d/%d local hits %d tier hits %v, want 96/100, 0, [6]",
			p5.ExternalPrefixHits, p5.ExternalPrefixQueries, p5.PrefixHits, p5.TierHits)
	}
	// Transfers of pass 4: A's 6 blocks back (3 ms), and 6 of B's down
	// (timed at the same bandwidth, but costing the pass nothing).
	wantX := []KVTransfer{{Type: "CPU_to_GPU", Bytes: 6 << 21, Seconds: 0.003}, {Type: "GPU_to_CPU", Bytes: 6 << 21, Seconds: 0.003}}
	if !slices.Equal(p5.Transfers, wantX) {
		t.Errorf("pass 4 transfers %+v, want %+v", p5.Transfers, wantX)
	}
	if p5.Duration.Milliseconds() != 33 {
		t.Errorf("pass 4 duration %v, want 33ms", p5.Duration)
	}
}

// TestScenarioS27NoOffloadRecomputes is S26 without the tier: the repeat
// recomputes its prompt (TTFT 30 ms with the fixed model) and reports no
// cached tokens.
func TestScenarioS27NoOffloadRecomputes(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 16
		c.NumBlocks = 10
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	})
	h.submitAt(0, seqTokens(1000, 100), []uint32{1, 2})
	h.submitAt(100, seqTokens(5000, 150), []uint32{3})
	again := h.submitAt(200, seqTokens(1000, 100), []uint32{4})
	h.sim.Run(0)
	res := drain(again)
	if len(res.times) != 1 || !approx(res.times[0], 230, msTolerance) || res.fin.CachedTokens != 0 {
		t.Fatalf("repeat without offload: times %v cached %d, want [230] and 0", res.times, res.fin.CachedTokens)
	}
}

// TestOffloadEventsRebuildEveryMedium is the consumer's view: a router that
// keeps one set of hashes per medium from the events alone must hold
// exactly what the GPU pool and each tier hold, after every pass, for
// random workloads that overflow every tier.
func TestOffloadEventsRebuildEveryMedium(t *testing.T) {
	t.Run("seeds", func(t *testing.T) {
		for seed := range uint64(200) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				checkMediaRebuild(t, seed)
			})
		}
	})
	// The workloads must load blocks back from both tiers, or the check
	// above proves little.
	if cpu, disk := tierHitTotals[0].Load(), tierHitTotals[1].Load(); cpu == 0 || disk == 0 {
		t.Errorf("blocks loaded back: CPU %d, disk %d; both must be > 0", cpu, disk)
	} else {
		t.Logf("blocks loaded back over 200 seeds: CPU %d, disk %d", cpu, disk)
	}
}

func checkMediaRebuild(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 19))
	disk := 0
	if seed%3 != 0 {
		disk = 4 + rng.IntN(12)
	}
	h := newHarness(t, func(c *Config) {
		c.BlockSize = 4
		c.NumBlocks = 24 + rng.IntN(16)
		c.MaxNumSeqs = 1 + rng.IntN(4)
		c.MaxModelLen = 256
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Offload = offloadConfig(3+rng.IntN(10), disk)
		if seed%2 == 0 {
			// Half the seeds decode speculatively: drafts take slots, and
			// blocks fill several tokens at a time.
			k := 1 + rng.IntN(4)
			rates := make([]float64, k)
			for i := range rates {
				rates[i] = rng.Float64()
			}
			c.Speculative = SpeculativeConfig{NumSpeculativeTokens: k, AcceptanceRates: rates, Seed: seed}
		}
	})
	media := map[kv.Medium]map[uint64]bool{}
	apply := func(events []kv.Event) {
		for _, e := range events {
			m := e.MediumOrGPU()
			if media[m] == nil {
				media[m] = map[uint64]bool{}
			}
			switch e.Kind {
			case kv.Stored:
				for _, x := range e.BlockHashes {
					if media[m][x] {
						t.Fatalf("seed %d: %s stored twice on %s", seed, fmt.Sprint(x), m)
					}
					media[m][x] = true
				}
			case kv.Removed:
				for _, x := range e.BlockHashes {
					if !media[m][x] {
						t.Fatalf("seed %d: %#x removed from %s but not stored there", seed, x, m)
					}
					delete(media[m], x)
				}
			case kv.AllCleared:
				clear(media)
			}
		}
	}
	tiers := h.core.Pool().Lower()
	h.sim.AfterPass = func(pass int) {
		apply(h.pend)
		h.pend = nil
		if got, want := sortedKeys(media[kv.MediumGPU]), h.core.Pool().CachedHashes(); !slices.Equal(got, want) {
			t.Fatalf("seed %d pass %d: GPU rebuilt %d hashes, pool holds %d", seed, pass, len(got), len(want))
		}
		for i := range tiers.NumTiers() {
			want := tiers.Hashes(i)
			slices.Sort(want)
			if got := sortedKeys(media[tiers.Medium(i)]); !slices.Equal(got, want) {
				t.Fatalf("seed %d pass %d: %s rebuilt %v, tier holds %v", seed, pass, tiers.Medium(i), got, want)
			}
		}
		if err := h.core.Pool().CheckInvariants(); err != nil {
			t.Fatalf("seed %d pass %d: %v", seed, pass, err)
		}
	}
	// Prompts share a few prefixes so that blocks are hit, evicted,
	// offloaded, demoted and loaded back.
	prefixes := make([][]uint32, 4)
	for i := range prefixes {
		prefixes[i] = seqTokens(1000*(i+1), 8+rng.IntN(40))
	}
	at := 0.0
	for range 30 + rng.IntN(30) {
		p := append(slices.Clone(prefixes[rng.IntN(len(prefixes))]), seqTokens(100000+rng.IntN(1000)*50, 1+rng.IntN(30))...)
		h.submitAt(at, p, seqTokens(7, 1+rng.IntN(12)))
		at += float64(rng.IntN(60))
	}
	h.sim.Run(0)
	for _, r := range h.reqs {
		if res := drain(r); !slices.Equal(res.tokens, r.PlannedOutput) || res.fin == nil {
			t.Fatalf("seed %d: request delivered %v (fin %+v), planned %v", seed, res.tokens, res.fin, r.PlannedOutput)
		}
	}
	hits := h.obs.total(func(p *PassReport) int { return p.ExternalPrefixHits })
	for _, p := range h.obs.passes {
		for i, n := range p.TierHits {
			tierHitTotals[i].Add(int64(n))
		}
	}
	if seed == 0 && hits == 0 {
		t.Errorf("seed 0 never loaded a block back; the workload does not exercise the tiers")
	}
}

// tierHitTotals counts blocks loaded back per tier over every seed of
// TestOffloadEventsRebuildEveryMedium.
var tierHitTotals [2]atomic.Int64

func sortedKeys(m map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// describeMedia is describe with the medium of lower-tier events shown.
func describeMedia(events []kv.Event, names map[uint64]string) string {
	out := ""
	for i := range events {
		one := describe(events[i:i+1], names)
		if events[i].Medium != "" {
			one = one[:len(one)-1]
			if events[i].Kind == kv.Stored {
				// describe writes "parent=-" for parentless events.
				one = one[:len(one)-len(" parent=-")]
			}
			one += " medium=" + string(events[i].Medium) + "]"
		}
		if i > 0 {
			out += " "
		}
		out += one
	}
	return out
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
