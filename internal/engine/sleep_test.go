package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// sleepHarness is a vLLM core with sleep mode on: 16 GB of weights, 50 GB/s
// from host memory (a 320 ms wake-up after level 1) and 2 GB/s from disk
// (8 s after level 2).
func sleepHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) {
		c.NumBlocks = 64
		c.BlockSize = 16
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 10, FixedDecodeMs: 5}
		c.Sleep = SleepConfig{Enabled: true, WeightBytes: 16e9, HostBandwidth: 50e9, DiskBandwidth: 2e9}
	})
}

func TestSleepAbortsClearsAndWakesAfterReload(t *testing.T) {
	for _, tc := range []struct {
		level int
		wake  time.Duration
	}{{1, 320 * time.Millisecond}, {2, 8 * time.Second}} {
		h := sleepHarness(t)
		prompt := seqTokens(1, 64)
		r1 := h.submitAt(0, prompt, seqTokens(500, 40))
		h.sim.Run(5)
		if h.core.kv.numActiveBlocks() == 0 {
			t.Fatal("no blocks in use before the sleep")
		}
		now := h.sim.Clock.Now()
		if err := h.core.Sleep(tc.level, SleepAbort, now); err != nil {
			t.Fatal(err)
		}
		h.core.FlushReport()
		res := drain(r1)
		if res.fin == nil || res.fin.Reason != FinishAbort {
			t.Fatalf("level %d: the running request was not aborted: %+v", tc.level, res.fin)
		}
		if len(h.pend) == 0 || h.pend[len(h.pend)-1].Kind != kv.AllCleared {
			t.Fatalf("level %d: last event is not AllBlocksCleared: %+v", tc.level, h.pend)
		}
		h.pend = nil
		if g := h.obs.gauges; g.KVUsage != 0 || g.ActiveBlocks != 0 || g.CachedBlocks != 0 || !g.Sleep.Sleeping || g.Sleep.Level != tc.level {
			t.Fatalf("level %d: gauges after the sleep %+v", tc.level, g)
		}

		// A request that arrives while asleep waits: no pass runs.
		r2 := h.request(prompt, seqTokens(600, 3))
		h.core.Submit(r2)
		passes := h.sim.Passes()
		if h.sim.Step() || h.sim.Passes() != passes {
			t.Fatalf("level %d: a pass ran while asleep", tc.level)
		}

		wakeAt := h.sim.Clock.Now()
		woke := false
		if err := h.core.WakeUp(nil, wakeAt, func(ok bool) { woke = ok }); err != nil {
			t.Fatal(err)
		}
		if woke || !h.core.SleepStatus().Sleeping || !h.core.SleepStatus().WakeDue.Equal(wakeAt.Add(tc.wake)) {
			t.Fatalf("level %d: wake-up did not wait for the reload: %+v", tc.level, h.core.SleepStatus())
		}
		h.sim.Run(0)
		if !woke || h.core.SleepStatus().Sleeping {
			t.Fatalf("level %d: not awake after the run: %+v", tc.level, h.core.SleepStatus())
		}
		res = drain(r2)
		if res.fin == nil || res.fin.Reason == FinishAbort || len(res.tokens) != 3 {
			t.Fatalf("level %d: queued request did not run after waking: %+v", tc.level, res)
		}
		if first := VirtualEpoch.Add(time.Duration(res.times[0] * float64(time.Millisecond))); first.Before(wakeAt.Add(tc.wake)) {
			t.Fatalf("level %d: first token at %v, before the wake-up completed at %v", tc.level, first, wakeAt.Add(tc.wake))
		}
		if res.fin.CachedTokens != 0 {
			t.Fatalf("level %d: prefix cache survived the sleep: %d cached tokens", tc.level, res.fin.CachedTokens)
		}
	}
}

func TestSleepTagsAndModes(t *testing.T) {
	h := sleepHarness(t)
	r := h.submitAt(0, seqTokens(1, 32), seqTokens(500, 20))
	h.sim.Run(2)
	now := h.sim.Clock.Now()
	if err := h.core.Sleep(1, SleepKeep, now); !errors.Is(err, ErrSleepMode) {
		t.Fatalf("mode=keep at level 1 with a running request: %v", err)
	}
	if err := h.core.Sleep(3, SleepAbort, now); !errors.Is(err, ErrSleepMode) {
		t.Fatalf("level 3: %v", err)
	}
	// Level 0 with keep freezes the request with its blocks.
	if err := h.core.Sleep(0, SleepKeep, now); err != nil {
		t.Fatal(err)
	}
	active := h.core.kv.numActiveBlocks()
	if active == 0 || h.sim.Step() {
		t.Fatalf("level 0 keep: %d active blocks, or a pass ran", active)
	}
	if err := h.core.WakeUp([]string{"bogus"}, now, nil); !errors.Is(err, ErrSleepMode) {
		t.Fatalf("unknown tag: %v", err)
	}
	if err := h.core.WakeUp([]string{TagScheduling}, now, nil); err != nil || h.core.SleepStatus().Sleeping {
		t.Fatalf("level 0 wake: %v %+v", err, h.core.SleepStatus())
	}
	h.sim.Run(0)
	if res := drain(r); res.fin == nil || res.fin.Reason == FinishAbort || len(res.tokens) != 20 {
		t.Fatalf("kept request did not finish: %+v", res)
	}

	// Level 1, then the weights alone: still asleep, no wait for the KV
	// cache, then the KV cache: awake.
	now = h.sim.Clock.Now()
	if err := h.core.Sleep(1, SleepAbort, now); err != nil {
		t.Fatal(err)
	}
	if err := h.core.WakeUp([]string{TagWeights}, now, nil); err != nil {
		t.Fatal(err)
	}
	h.sim.Run(0)
	if st := h.core.SleepStatus(); !st.Sleeping || st.Weights || !st.KVCache {
		t.Fatalf("after waking the weights: %+v", st)
	}
	if err := h.core.WakeUp([]string{TagKVCache}, h.sim.Clock.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if st := h.core.SleepStatus(); st.Sleeping {
		t.Fatalf("after waking the KV cache too: %+v", st)
	}

	off := newHarness(t, nil)
	if err := off.core.Sleep(1, SleepAbort, VirtualEpoch); !errors.Is(err, ErrSleepDisabled) {
		t.Fatalf("sleep without sleep mode: %v", err)
	}
}

// mode=wait (vLLM's PAUSED_NEW): the running request runs to its end, a
// request that arrives meanwhile is not admitted, then the rank sleeps and
// clears its cache; the queued request runs after the wake-up.
func TestSleepWaitDrainsTheRunningRequests(t *testing.T) {
	h := sleepHarness(t)
	r1 := h.submitAt(0, seqTokens(1, 32), seqTokens(500, 20))
	h.sim.Run(3)
	var drained error = errors.New("not yet")
	if err := h.core.SleepWhenDrained(1, h.sim.Clock.Now(), func(err error) { drained = err }); err != nil {
		t.Fatal(err)
	}
	if !h.core.SleepStatus().Sleeping || drained == nil {
		t.Fatalf("draining: %+v, done %v", h.core.SleepStatus(), drained)
	}
	r2 := h.request(seqTokens(100, 32), seqTokens(600, 3))
	h.core.Submit(r2)
	h.pend = nil
	h.sim.Run(0)
	if drained != nil {
		t.Fatalf("the drain did not complete: %v", drained)
	}
	if res := drain(r1); res.fin == nil || res.fin.Reason == FinishAbort || len(res.tokens) != 20 {
		t.Fatalf("the running request did not run to its end: %+v", res)
	}
	if res := drain(r2); res.fin != nil || len(res.tokens) != 0 {
		t.Fatalf("a request was admitted while draining: %+v", res)
	}
	// The clear is published with the pass that finished the last running
	// request.
	last := h.events[h.sim.Passes()]
	if n := len(last); n == 0 || last[n-1].Kind != kv.AllCleared {
		t.Fatalf("no AllBlocksCleared with the last pass: %+v", last)
	}
	if st := h.core.SleepStatus(); !st.Sleeping || st.Level != 1 || !st.Weights || h.core.NumWaiting() != 1 {
		t.Fatalf("after the drain: %+v, %d waiting", st, h.core.NumWaiting())
	}
	if err := h.core.WakeUp(nil, h.sim.Clock.Now(), nil); err != nil {
		t.Fatal(err)
	}
	h.sim.Run(0)
	if res := drain(r2); res.fin == nil || len(res.tokens) != 3 {
		t.Fatalf("the queued request did not run after the wake-up: %+v", res)
	}

	// A wake-up cancels a drain in progress; SGLang refuses mode=wait.
	r3 := h.request(seqTokens(200, 32), seqTokens(700, 20))
	h.core.Submit(r3)
	h.sim.Run(h.sim.Passes() + 2)
	var cancelled error
	if err := h.core.SleepWhenDrained(2, h.sim.Clock.Now(), func(err error) { cancelled = err }); err != nil {
		t.Fatal(err)
	}
	if err := h.core.WakeUp(nil, h.sim.Clock.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cancelled, ErrSleepMode) || h.core.SleepStatus().Sleeping {
		t.Fatalf("wake-up during a drain: %v, %+v", cancelled, h.core.SleepStatus())
	}
	sg := newHarness(t, func(c *Config) { c.Type = EngineSGLang; c.Sleep = SleepConfig{Enabled: true} })
	if err := sg.core.Sleep(1, SleepWait, VirtualEpoch); !errors.Is(err, ErrSleepMode) {
		t.Fatalf("sglang mode=wait: %v", err)
	}
}
