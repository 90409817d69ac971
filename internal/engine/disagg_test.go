package engine

import (
	"slices"
	"testing"
	"time"
)

// disaggHarness is a harness with the fixed timing model (prefill 20 ms,
// decode 10 ms), 64-token blocks and a 64 GB/s link moving 1 MB per token,
// so a 1000-token prompt is 1 GB.
func disaggHarness(t *testing.T, mutate func(c *Config)) *harness {
	return newHarness(t, func(c *Config) {
		c.BlockSize = 64
		c.NumBlocks = 1024
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		c.Transfer = TransferConfig{BytesPerToken: 1_000_000, BandwidthGBps: 64, Mode: TransferFullPrompt}
		if mutate != nil {
			mutate(c)
		}
	})
}

// decodeAt schedules a disaggregated decode request at virtual ms and counts
// its pull notifications.
func (h *harness) decodeAt(ms float64, prompt, planned []uint32, pulled *[]bool) *Request {
	r := h.request(prompt, planned)
	r.Remote = &RemoteKV{OnPulled: func(ok bool) { *pulled = append(*pulled, ok) }}
	h.sim.SubmitAt(time.Duration(ms*float64(time.Millisecond)), r)
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func TestTransferOneHandoffOf1GBAt64GBpsTakes15625Microseconds(t *testing.T) {
	h := disaggHarness(t, nil)
	var pulled []bool
	r := h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 3), &pulled)
	h.sim.Run(0)

	res := drain(r)
	// Transfer 0 → 15.625 ms; then one decode pass per token (the prompt
	// costs no prefill term).
	want := []float64{25.625, 35.625, 45.625}
	if !slices.EqualFunc(res.times, want, func(a, b float64) bool { return approx(a, b, msTolerance) }) {
		t.Errorf("token times %v, want %v", res.times, want)
	}
	if !slices.Equal(res.tokens, seqTokens(5, 3)) || res.fin == nil || res.fin.Reason != FinishLength {
		t.Errorf("tokens %v, terminal %+v", res.tokens, res.fin)
	}
	var transfers []TransferRecord
	for _, p := range h.obs.passes {
		transfers = append(transfers, p.Handoffs...)
	}
	if len(transfers) != 1 || transfers[0].Bytes != 1_000_000_000 || transfers[0].Tokens != 1000 ||
		transfers[0].Blocks != 16 || transfers[0].Duration != 15625*time.Microsecond {
		t.Errorf("transfers %+v, want one of 1e9 bytes in 15.625 ms", transfers)
	}
	if !slices.Equal(pulled, []bool{true}) {
		t.Errorf("OnPulled calls %v, want [true]", pulled)
	}
	for pass, f := range h.fpm {
		if f.NumPrefillRequests != 0 || f.SumPrefillTokens != 0 {
			t.Errorf("pass %d FPM has a prefill: %+v", pass, f)
		}
	}
	if n := h.core.Pool().NumActive(); n != 0 {
		t.Errorf("active blocks after completion = %d", n)
	}
}

func TestTransferThirtyTwoSimultaneousHandoffsShareTheLinkAndAllFinishAt500ms(t *testing.T) {
	h := disaggHarness(t, nil)
	var pulled []bool
	var reqs []*Request
	for i := range 32 {
		reqs = append(reqs, h.decodeAt(0, seqTokens(100000+i*1000, 1000), seqTokens(5, 1), &pulled))
	}
	h.sim.Run(0)
	var transfers []TransferRecord
	for _, p := range h.obs.passes {
		transfers = append(transfers, p.Handoffs...)
	}
	if len(transfers) != 32 {
		t.Fatalf("%d transfers, want 32", len(transfers))
	}
	for i, tr := range transfers {
		if tr.Duration != 500*time.Millisecond || tr.Bytes != 1_000_000_000 {
			t.Errorf("transfer %d: %+v, want 1 GB in 500 ms", i, tr)
		}
	}
	for i, r := range reqs {
		if res := drain(r); len(res.times) != 1 || !approx(res.times[0], 510, msTolerance) {
			t.Errorf("request %d: token times %v, want [510]", i, res.times)
		}
	}
	if len(pulled) != 32 {
		t.Errorf("%d pull notifications, want 32", len(pulled))
	}
}

func TestTransferALaterHandoffSharesTheLinkFromItsArrival(t *testing.T) {
	// A starts alone at 0 (1 GB), B joins at 10 ms (1 GB): A has moved
	// 0.64 GB, then both run at 32 GB/s. A finishes at 10 + 0.36/32 s =
	// 21.25 ms; B then has 0.64 GB left alone: 21.25 + 10 = 31.25 ms.
	h := disaggHarness(t, nil)
	var pulled []bool
	h.decodeAt(0, seqTokens(100000, 1000), seqTokens(5, 1), &pulled)
	h.decodeAt(10, seqTokens(200000, 1000), seqTokens(5, 1), &pulled)
	h.sim.Run(0)
	var got []time.Duration
	for _, p := range h.obs.passes {
		for _, tr := range p.Handoffs {
			got = append(got, tr.Duration)
		}
	}
	want := []time.Duration{21250 * time.Microsecond, 21250 * time.Microsecond}
	if !slices.Equal(got, want) {
		t.Errorf("durations %v, want %v", got, want)
	}
}

func TestTransferDestinationMissingMovesOnlyBlocksTheDecodeRankLacks(t *testing.T) {
	for _, tc := range []struct {
		mode       TransferTimingMode
		wantTokens int
	}{
		{TransferFullPrompt, 1000},
		// 640 tokens (10 blocks) of the prompt are cached locally.
		{TransferDestinationMissing, 360},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			h := disaggHarness(t, func(c *Config) { c.Transfer.Mode = tc.mode })
			shared := seqTokens(1000, 640)
			h.submitAt(0, append(slices.Clone(shared), seqTokens(50000, 10)...), seqTokens(5, 1))
			var pulled []bool
			r := h.decodeAt(100, append(slices.Clone(shared), seqTokens(60000, 360)...), seqTokens(5, 1), &pulled)
			h.sim.Run(0)
			var transfers []TransferRecord
			for _, p := range h.obs.passes {
				transfers = append(transfers, p.Handoffs...)
			}
			if len(transfers) != 1 || transfers[0].Tokens != tc.wantTokens {
				t.Fatalf("transfers %+v, want %d tokens", transfers, tc.wantTokens)
			}
			wantMs := float64(tc.wantTokens) * 1e6 / 64e9 * 1e3
			if !approx(ms(transfers[0].Duration), wantMs, msTolerance) {
				t.Errorf("duration %v, want %.6f ms", transfers[0].Duration, wantMs)
			}
			if res := drain(r); res.fin == nil || res.fin.CachedTokens != 640 {
				t.Errorf("decode terminal %+v, want 640 locally cached tokens", res.fin)
			}
		})
	}
}

func TestDecodePulledBlocksAreStoredAsVLLMCachesThem(t *testing.T) {
	// 130 tokens: two full blocks arrive and enter the prefix cache
	// (BlockStored) in the first pass after the transfer.
	h := disaggHarness(t, nil)
	var pulled []bool
	prompt := seqTokens(1000, 130)
	h.decodeAt(0, prompt, seqTokens(5, 1), &pulled)
	h.sim.Run(0)
	names := map[uint64]string{}
	blockNames(t, h.cfg, "b", prompt, names)
	if got := describe(h.events[1], names); got != "Stored[b0,b1 parent=-]" {
		t.Errorf("pass 1 events %q", got)
	}
}

// prefillAt schedules a disaggregated prefill request at virtual ms that
// records its release notifications.
func (h *harness) prefillAt(ms float64, prompt []uint32, timeout time.Duration, released *[]bool) *Request {
	r := h.request(prompt, seqTokens(5, 1))
	r.Handoff = &Handoff{Timeout: timeout, OnReleased: func(pulled bool) { *released = append(*released, pulled) }}
	h.sim.SubmitAt(time.Duration(ms*float64(time.Millisecond)), r)
	return r
}

func TestPrefillHoldsItsBlocksUntilTheDecodeSidePullsThem(t *testing.T) {
	h := disaggHarness(t, nil)
	var released []bool
	r := h.prefillAt(0, seqTokens(1000, 130), time.Second, &released)
	other := h.submitAt(50, seqTokens(90000, 10), seqTokens(7, 1))
	h.sim.Run(1)

	res := drain(r)
	// The prompt's pass has no decode term: the one token comes at 20 ms.
	if len(res.times) != 1 || !approx(res.times[0], 20, msTolerance) {
		t.Errorf("prefill token times %v, want [20]", res.times)
	}
	if res.fin == nil || res.fin.Reason != FinishLength || !slices.Equal(res.fin.HeldBlocks, []int{0, 1, 2}) {
		t.Fatalf("terminal %+v, want held blocks [0 1 2]", res.fin)
	}
	if got := h.core.Pool().NumActive(); got != 3 || h.core.NumHeldBlocks() != 3 || h.obs.gauges.HeldBlocks != 3 {
		t.Errorf("active %d, held %d, gauge %d; want 3 held blocks", got, h.core.NumHeldBlocks(), h.obs.gauges.HeldBlocks)
	}
	if !h.core.HoldsHandoff(r.ID) {
		t.Error("HoldsHandoff = false while held")
	}
	h.sim.Run(2) // the other request's pass: its FPM snapshot shows the hold
	if f := h.fpm[2]; f.NumHeldBlocks != 3 {
		t.Errorf("FPM of pass 2: %+v, want NumHeldBlocks 3", f)
	}
	if !h.core.ReleaseHeld(r.ID) || h.core.ReleaseHeld(r.ID) {
		t.Error("ReleaseHeld: want true once, then false")
	}
	h.sim.Run(0)
	if got := h.core.Pool().NumActive(); got != 0 || h.core.NumHeldBlocks() != 0 {
		t.Errorf("after release: active %d, held %d", got, h.core.NumHeldBlocks())
	}
	if !slices.Equal(released, []bool{true}) {
		t.Errorf("OnReleased calls %v, want [true]", released)
	}
	if drain(other).fin == nil {
		t.Error("the other request did not finish")
	}
}

func TestPrefillHoldIsReleasedAtTheTimeoutWhenNoDecodeComes(t *testing.T) {
	h := disaggHarness(t, nil)
	var released []bool
	r := h.prefillAt(0, seqTokens(1000, 130), 300*time.Millisecond, &released)
	h.sim.Run(0)
	if !slices.Equal(released, []bool{false}) {
		t.Errorf("OnReleased calls %v, want [false]", released)
	}
	// Finished at 20 ms, released 300 ms later.
	if got := h.sim.Now(); got != 320*time.Millisecond {
		t.Errorf("simulation ended at %v, want 320ms (the timeout)", got)
	}
	if n := h.core.Pool().NumActive(); n != 0 || h.core.HoldsHandoff(r.ID) {
		t.Errorf("active blocks %d after the timeout", n)
	}
}

func TestPrefillAutomaticReleaseAfterTheModeledTransfer(t *testing.T) {
	h := disaggHarness(t, nil)
	var released []bool
	r := h.request(seqTokens(1000, 130), seqTokens(5, 1))
	r.Handoff = &Handoff{Timeout: time.Second, ReleaseAfter: 7 * time.Millisecond,
		OnReleased: func(pulled bool) { released = append(released, pulled) }}
	h.sim.SubmitAt(0, r)
	h.sim.Run(0)
	if !slices.Equal(released, []bool{true}) || h.sim.Now() != 27*time.Millisecond {
		t.Errorf("released %v at %v, want [true] at 27ms", released, h.sim.Now())
	}
}

func TestPrefillCutShortIsNotHeld(t *testing.T) {
	// A chunked prompt (three passes) is cancelled after its first chunk.
	h := disaggHarness(t, func(c *Config) { c.MaxNumBatchedTokens = 64 })
	var released []bool
	r := h.prefillAt(0, seqTokens(1000, 130), time.Second, &released)
	h.sim.CancelAt(5*time.Millisecond, r.ID)
	h.sim.Run(0)
	if res := drain(r); res.fin == nil || res.fin.Reason != FinishAbort || res.fin.HeldBlocks != nil {
		t.Errorf("terminal %+v, want an abort holding nothing", res.fin)
	}
	if len(released) != 0 || h.core.Pool().NumActive() != 0 {
		t.Errorf("released %v, active %d", released, h.core.Pool().NumActive())
	}
}

func TestDecodeCancelledDuringItsTransferFreesItsBlocks(t *testing.T) {
	h := disaggHarness(t, nil)
	var pulled []bool
	r := h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 3), &pulled)
	h.sim.CancelAt(5*time.Millisecond, r.ID)
	h.sim.Run(0)
	if res := drain(r); res.fin == nil || res.fin.Reason != FinishAbort || len(res.tokens) != 0 {
		t.Errorf("result %+v", res)
	}
	if !slices.Equal(pulled, []bool{false}) {
		t.Errorf("OnPulled calls %v, want [false]", pulled)
	}
	if h.core.Pool().NumActive() != 0 || h.core.NumArriving() != 0 || len(h.core.link.flows) != 0 {
		t.Errorf("leak: active %d, arriving %d, flows %d", h.core.Pool().NumActive(), h.core.NumArriving(), len(h.core.link.flows))
	}
}

func TestDecodeCountsAsDeferredWhileItsKVIsInTransit(t *testing.T) {
	h := disaggHarness(t, nil)
	var pulled []bool
	h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 1), &pulled)
	h.sim.Step() // starts the transfer (no pass ran)
	g := h.core.gauges()
	if g.WaitingDeferred != 1 || g.Running != 0 || g.ActiveBlocks != 16 {
		t.Errorf("gauges during the transfer %+v", g)
	}
}

func TestCancelAllEndsHoldsAndTransfers(t *testing.T) {
	h := disaggHarness(t, nil)
	var released, pulled []bool
	h.prefillAt(0, seqTokens(1000, 130), time.Hour, &released)
	h.decodeAt(30, seqTokens(5000, 1000), seqTokens(5, 1), &pulled)
	h.sim.Run(1)
	h.sim.Step()
	h.core.CancelAll(h.sim.Clock.Now())
	if !slices.Equal(released, []bool{false}) || !slices.Equal(pulled, []bool{false}) {
		t.Errorf("released %v, pulled %v", released, pulled)
	}
	if h.core.Pool().NumActive() != 0 {
		t.Errorf("active blocks %d after CancelAll", h.core.Pool().NumActive())
	}
	if _, ok := h.core.NextTimer(); ok {
		t.Error("a timer is left after CancelAll")
	}
}

// BenchmarkDisaggHandoffBurst simulates bursts of 256 decode handoffs of
// 1000 tokens into one rank sharing its link (docs/BENCHMARKS.md).
func BenchmarkDisaggHandoffBurst(b *testing.B) {
	cfg := DefaultConfig()
	cfg.BlockSize = 64
	cfg.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	cfg.Transfer = TransferConfig{BytesPerToken: 131072, BandwidthGBps: 64, Mode: TransferFullPrompt}
	prompts := make([][]uint32, 256)
	for i := range prompts {
		prompts[i] = seqTokens(100000+i*1000, 1000)
	}
	b.ReportAllocs()
	for b.Loop() {
		core, err := NewCore(cfg, CoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sim := NewSimulator(core)
		for _, p := range prompts {
			sim.SubmitAt(0, &Request{ID: NewRequestID(), Prompt: p, PlannedOutput: seqTokens(5, 16), Remote: &RemoteKV{}})
		}
		sim.Run(0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/handoff")
}

func TestDecodeRejectedAtTheQueueHeadTellsItsPrefillSide(t *testing.T) {
	h := disaggHarness(t, func(c *Config) { c.NumBlocks = 4 }) // 256 tokens
	var pulled []bool
	r := h.decodeAt(0, seqTokens(1000, 1000), seqTokens(5, 1), &pulled)
	h.sim.Run(0)
	if res := drain(r); res.fin == nil || res.fin.Rejection == nil {
		t.Fatalf("terminal %+v, want a rejection", res.fin)
	}
	if !slices.Equal(pulled, []bool{false}) {
		t.Errorf("OnPulled calls %v, want [false]", pulled)
	}
}
