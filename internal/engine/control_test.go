package engine

import (
	"context"
	"testing"
	"time"
)

// Tests of the operator controls: pause/resume and run-time timing changes
// on the live actor, and the Core methods behind them in virtual time.

func fixedTimingConfig(prefillMs, decodeMs float64) Config {
	cfg := DefaultConfig()
	cfg.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: prefillMs, FixedDecodeMs: decodeMs}
	return cfg
}

// startEngine runs an engine until the test ends.
func startEngine(t *testing.T, cfg Config, clock Clock) *Engine {
	t.Helper()
	e, err := New(cfg, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = e.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// collect reads out until the final item or the timeout.
func collect(out *Output, timeout time.Duration) (tokens []OutputItem, final bool) {
	deadline := time.After(timeout)
	var buf []OutputItem
	for {
		select {
		case <-out.Ready():
			buf = out.Drain(buf)
			for _, it := range buf {
				if it.Final {
					return tokens, true
				}
				tokens = append(tokens, it)
			}
		case <-deadline:
			return tokens, false
		}
	}
}

func TestPauseStallsTokensAndResumeDeliversEveryTokenOnce(t *testing.T) {
	e := startEngine(t, fixedTimingConfig(1, 2), RealClock{})
	ctx := context.Background()
	planned := seqTokens(1000, 40)
	out := NewOutput()
	if err := e.Submit(&Request{ID: NewRequestID(), Prompt: seqTokens(1, 16), PlannedOutput: planned,
		ArrivalTime: time.Now(), Out: out}); err != nil {
		t.Fatal(err)
	}
	// Let a few tokens through, then pause mid-stream.
	var got []OutputItem
	for len(got) < 5 {
		<-out.Ready()
		for _, it := range out.Drain(nil) {
			if it.Final {
				t.Fatal("finished before the pause")
			}
			got = append(got, it)
		}
	}
	if err := e.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if !e.Paused() {
		t.Error("Paused() = false after Pause")
	}
	// Tokens of the pass that was running when the pause arrived were
	// delivered before Pause returned; nothing comes after.
	for _, it := range out.Drain(nil) {
		got = append(got, it)
	}
	stalled, final := collect(out, 150*time.Millisecond)
	if len(stalled) != 0 || final {
		t.Fatalf("paused engine delivered %d tokens (final=%v)", len(stalled), final)
	}
	if l := e.Load(); l.Running != 1 {
		t.Errorf("paused load = %+v, want the request still running", l)
	}
	if err := e.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	rest, final := collect(out, 5*time.Second)
	if !final {
		t.Fatal("no final item after resume")
	}
	got = append(got, rest...)
	if len(got) != len(planned) {
		t.Fatalf("delivered %d tokens, want %d", len(got), len(planned))
	}
	for i, it := range got {
		if it.Token != planned[i] {
			t.Fatalf("token %d = %d, want %d (lost or duplicated)", i, it.Token, planned[i])
		}
	}
}

func TestPausedEngineQueuesNewRequestsUntilResumed(t *testing.T) {
	e := startEngine(t, fixedTimingConfig(1, 1), &VirtualClock{})
	ctx := context.Background()
	if err := e.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	out := NewOutput()
	if err := e.Submit(&Request{ID: NewRequestID(), Prompt: seqTokens(1, 8), PlannedOutput: seqTokens(50, 3), Out: out}); err != nil {
		t.Fatal(err)
	}
	if toks, final := collect(out, 100*time.Millisecond); len(toks) != 0 || final {
		t.Fatalf("paused engine ran a request: %d tokens, final=%v", len(toks), final)
	}
	if err := e.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if toks, final := collect(out, 5*time.Second); len(toks) != 3 || !final {
		t.Fatalf("after resume: %d tokens, final=%v", len(toks), final)
	}
}

// Token times are pass deadlines, so in virtual time the gap between two
// tokens of one decoding request is exactly one modeled pass.
func tokenGaps(items []OutputItem) []time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(items); i++ {
		gaps = append(gaps, items[i].Time.Sub(items[i-1].Time))
	}
	return gaps
}

func TestRetimeChangesPassDurationsFromTheNextPass(t *testing.T) {
	e := startEngine(t, fixedTimingConfig(4, 10), &VirtualClock{})
	ctx := context.Background()
	run := func() []time.Duration {
		out := NewOutput()
		if err := e.Submit(&Request{ID: NewRequestID(), Prompt: seqTokens(1, 8), PlannedOutput: seqTokens(70, 4), Out: out}); err != nil {
			t.Fatal(err)
		}
		toks, final := collect(out, 5*time.Second)
		if !final || len(toks) != 4 {
			t.Fatalf("%d tokens, final=%v", len(toks), final)
		}
		return tokenGaps(toks)
	}
	cases := []struct {
		name   string
		change TimingChange
		want   time.Duration
	}{
		{"default", TimingChange{}, 10 * time.Millisecond},
		{"speedup 4", TimingChange{SpeedupRatio: ptr(4.0)}, 2500 * time.Microsecond},
		{"speedup 4 plus 7 ms per pass", TimingChange{ExtraPassDelay: ptr(7 * time.Millisecond)}, 9500 * time.Microsecond},
		{"back to speedup 1, no delay", TimingChange{SpeedupRatio: ptr(1.0), ExtraPassDelay: ptr(time.Duration(0))}, 10 * time.Millisecond},
	}
	for _, tc := range cases {
		if err := e.Retime(ctx, tc.change); err != nil {
			t.Fatal(err)
		}
		for i, g := range run() {
			if g != tc.want {
				t.Errorf("%s: gap %d = %v, want %v", tc.name, i, g, tc.want)
			}
		}
	}
}

func TestControlsOnAStoppedEngineReportErrStopped(t *testing.T) {
	e, err := New(DefaultConfig(), Options{Clock: &VirtualClock{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = e.Run(ctx)
	for name, call := range map[string]func() error{
		"pause":  func() error { return e.Pause(context.Background()) },
		"resume": func() error { return e.Resume(context.Background()) },
		"retime": func() error { return e.Retime(context.Background(), TimingChange{}) },
	} {
		if err := call(); err != ErrStopped {
			t.Errorf("%s on a stopped engine = %v, want ErrStopped", name, err)
		}
	}
}

// In virtual time the Core's setters change the modeled durations exactly
// and leave a run deterministic.
func TestCoreRetimeInVirtualTime(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 5, FixedDecodeMs: 10}
	})
	h.sim.BeforePass = func(pass int) {
		switch pass {
		case 3:
			h.core.SetSpeedupRatio(2)
		case 5:
			h.core.SetExtraPassDelay(3 * time.Millisecond)
		case 7:
			h.core.SetExtraPassDelay(-time.Second) // counts as 0
		}
	}
	h.submitAt(0, seqTokens(1, 4), seqTokens(100, 8))
	h.sim.Run(0)
	var durations []time.Duration
	for _, p := range h.obs.passes {
		if p.IsPass {
			durations = append(durations, p.Duration)
		}
	}
	want := []time.Duration{15, 10, 5, 5, 8, 8, 5, 5}
	if len(durations) != len(want) {
		t.Fatalf("passes = %v", durations)
	}
	for i, w := range want {
		if durations[i] != w*time.Millisecond {
			t.Errorf("pass %d lasted %v, want %v", i+1, durations[i], w*time.Millisecond)
		}
	}
	if h.core.SpeedupRatio() != 2 || h.core.ExtraPassDelay() != 0 {
		t.Errorf("speedup %v, extra %v", h.core.SpeedupRatio(), h.core.ExtraPassDelay())
	}
}

func ptr[T any](v T) *T { return &v }
