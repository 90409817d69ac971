package engine

import (
	"testing"
	"time"
)

// cancelStormCore returns a core with n single-sequence requests submitted
// and one pass run, so that MaxNumSeqs of them run and the rest wait.
func cancelStormCore(tb testing.TB, n int, policy SchedulingPolicy) (*Core, []*Output) {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 256
	cfg.Scheduling = policy
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	outs := make([]*Output, n)
	prompt := seqTokens(1, 16)
	planned := seqTokens(1000, 4)
	for i := range n {
		outs[i] = NewOutput()
		core.Submit(&Request{ID: uint64(i + 1), Prompt: prompt, PlannedOutput: planned, Out: outs[i],
			Priority: i * 7 / n, ArrivalTime: VirtualEpoch.Add(time.Duration(i) * time.Microsecond)})
	}
	at := VirtualEpoch.Add(time.Second) // after every arrival
	d := core.BeginPass(at)
	core.EndPass(at.Add(d), at.Add(d))
	return core, outs
}

// cancelStormOrder is the order a disconnect storm cancels in when its
// requests' handlers wake in no particular order: every odd id from the
// back, then every even id from the front.
func cancelStormOrder(n int) []uint64 {
	ids := make([]uint64, 0, n)
	for i := n; i >= 1; i-- {
		if i%2 == 1 {
			ids = append(ids, uint64(i))
		}
	}
	for i := 2; i <= n; i += 2 {
		ids = append(ids, uint64(i))
	}
	return ids
}

// TestCancelStorm100kIsLinear cancels 100,000 sequences (256 running, the
// rest waiting) out of order. Removing each from the middle of the waiting
// queue by scan and copy cost O(N²): tens of seconds here. Removal is now
// O(1), and the storm takes well under a second (a few seconds under the
// race detector). The limit sits between the two, far from both, so that
// a busy shared machine cannot fail a linear storm while a quadratic one
// cannot pass: a complexity guard, not a performance measurement
// (BenchmarkCancelStorm100k measures).
func TestCancelStorm100kIsLinear(t *testing.T) {
	for _, policy := range []SchedulingPolicy{ScheduleFCFS, SchedulePriority} {
		const n = 100_000
		took := cancelStorm(t, n, policy)
		t.Logf("%v: %d cancellations in %v", policy, n, took)
		if limit := 8 * time.Second * raceSlowdown; took > limit {
			t.Errorf("%v: %d cancellations took %v (limit %v): quadratic again?", policy, n, took, limit)
		}
	}
}

// cancelStorm cancels every one of n submitted requests in cancelStormOrder,
// checks that the core is empty and every request ended with an abort, and
// returns how long the cancellations took.
func cancelStorm(t *testing.T, n int, policy SchedulingPolicy) time.Duration {
	t.Helper()
	core, outs := cancelStormCore(t, n, policy)
	if core.NumRunning() != 256 || core.NumWaiting() != n-256 {
		t.Fatalf("%v: running %d waiting %d before the storm", policy, core.NumRunning(), core.NumWaiting())
	}
	now := VirtualEpoch.Add(2 * time.Second)
	start := time.Now()
	for _, id := range cancelStormOrder(n) {
		core.Cancel(id, now)
	}
	took := time.Since(start)
	if core.NumWaiting() != 0 || core.NumRunning() != 0 || !core.Idle() {
		t.Errorf("%v: after the storm running %d waiting %d", policy, core.NumRunning(), core.NumWaiting())
	}
	if a := core.Pool().NumActive(); a != 0 {
		t.Errorf("%v: %d blocks still active", policy, a)
	}
	for i, o := range outs {
		items := o.Drain(nil)
		if len(items) == 0 || !items[len(items)-1].Final || items[len(items)-1].Finished.Reason != FinishAbort {
			t.Fatalf("%v: request %d ended with %+v, want an abort", policy, i+1, items)
		}
	}
	return took
}

// TestCancelKeepsQueueOrder cancels every third waiting request, then runs
// the rest to completion: the survivors are admitted in the order the
// policy gives (fcfs: arrival), exactly as if the cancelled ones had never
// been submitted.
func TestCancelKeepsQueueOrder(t *testing.T) {
	for _, policy := range []SchedulingPolicy{ScheduleFCFS, SchedulePriority} {
		run := func(skip func(id uint64) bool, cancel bool) []uint64 {
			cfg := DefaultConfig()
			cfg.MaxNumSeqs = 4
			cfg.Scheduling = policy
			obs := &finishOrder{}
			core, err := NewCore(cfg, CoreOptions{Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			sim := NewSimulator(core)
			for i := range 60 {
				id := uint64(i + 1)
				if !cancel && skip(id) {
					continue
				}
				sim.SubmitAt(0, &Request{ID: id, Prompt: seqTokens(int(id)*100, 8), PlannedOutput: seqTokens(1, 3),
					Priority: int(id % 3), Out: NewOutput()})
			}
			if cancel {
				for i := 59; i >= 0; i-- {
					if id := uint64(i + 1); skip(id) {
						sim.CancelAt(time.Microsecond, id)
					}
				}
			}
			sim.Run(0)
			return obs.order
		}
		skip := func(id uint64) bool { return id%3 == 0 && id > 8 }
		got := run(skip, true)
		want := run(skip, false)
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("%v: %d finished with cancellations, %d without", policy, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%v: finish order %v, without the cancelled ones %v", policy, got, want)
			}
		}
	}
}

// BenchmarkCancelStorm100k measures cancelling 100,000 sequences out of
// order (see TestCancelStorm100kIsLinear).
func BenchmarkCancelStorm100k(b *testing.B) {
	const n = 100_000
	ids := cancelStormOrder(n)
	for b.Loop() {
		b.StopTimer()
		core, _ := cancelStormCore(b, n, ScheduleFCFS)
		b.StartTimer()
		for _, id := range ids {
			core.Cancel(id, VirtualEpoch)
		}
	}
}

// finishOrder records the ids of requests that finished other than by abort.
type finishOrder struct{ order []uint64 }

func (f *finishOrder) ObserveGauges(Gauges) {}

func (f *finishOrder) ObservePass(r *PassReport) {
	for _, rec := range r.Finished {
		if rec.Reason != FinishAbort {
			f.order = append(f.order, rec.ID)
		}
	}
}

// TestReleaseHeldStormIsLinear holds 100,000 finished prefills' blocks and
// releases them out of order: each release is a map lookup (it used to be a
// scan and copy of every hold, several seconds for this many), the held-block count
// stays exact, and the survivors keep their timers. The time limit is a
// complexity guard as in TestCancelStorm100kIsLinear.
func TestReleaseHeldStormIsLinear(t *testing.T) {
	const n = 100_000
	took := releaseHeldStorm(t, n)
	t.Logf("%d releases in %v", n-1, took)
	if limit := time.Second * raceSlowdown; took > limit {
		t.Errorf("%d releases took %v (limit %v): quadratic again?", n-1, took, limit)
	}
}

// releaseHeldStorm holds n prefills' blocks, releases all but the last out
// of order, checks the last keeps its hold and timer, and returns how long
// the releases took.
func releaseHeldStorm(t *testing.T, n int) time.Duration {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 16
	cfg.NumBlocks = n + 64
	cfg.MaxNumSeqs = 1024
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim := NewSimulator(core)
	released := 0
	for i := range n {
		sim.SubmitAt(0, &Request{ID: uint64(i + 1), Prompt: seqTokens(100+i*16, 15), PlannedOutput: seqTokens(1, 1),
			Handoff: &Handoff{Timeout: time.Hour, OnReleased: func(bool) { released++ }}})
	}
	for core.NumHeldBlocks() < n && sim.Step() {
	}
	if got := core.NumHeldBlocks(); got != n || released != 0 {
		t.Fatalf("held blocks %d, want %d (released %d)", got, n, released)
	}
	start := time.Now()
	for _, id := range cancelStormOrder(n - 1) { // all but the last
		if !core.ReleaseHeld(id) {
			t.Fatalf("hold %d not found", id)
		}
	}
	took := time.Since(start)
	last := uint64(n)
	if released != n-1 || core.NumHeldBlocks() != 1 || !core.HoldsHandoff(last) || core.HoldsHandoff(1) || core.ReleaseHeld(1) {
		t.Errorf("released %d, held blocks %d, holds last %v", released, core.NumHeldBlocks(), core.HoldsHandoff(last))
	}
	if at, ok := core.NextTimer(); !ok || at.Sub(sim.Clock.Now()) < 59*time.Minute {
		t.Errorf("next timer %v ok %v, want the last hold's timeout an hour away", at, ok)
	}
	core.AdvanceTimers(sim.Clock.Now().Add(2 * time.Hour))
	if released != n || core.NumHeldBlocks() != 0 || core.Pool().NumActive() != 0 {
		t.Errorf("after the timeout: released %d, held %d, active %d", released, core.NumHeldBlocks(), core.Pool().NumActive())
	}
	return took
}

// TestTinySpeedupRatioFreezesInsteadOfOverflowing: a speedup ratio of
// 1e-20 divides a pass's modeled milliseconds into more nanoseconds than
// time.Duration holds; the conversion used to wrap to a negative (or zero)
// pass, making the rank instant. The pass now lasts MaxPassDuration.
func TestTinySpeedupRatioFreezesInsteadOfOverflowing(t *testing.T) {
	for _, ratio := range []float64{1e-20, 1e-300, 5e-324} {
		cfg := DefaultConfig()
		cfg.SpeedupRatio = ratio
		core, err := NewCore(cfg, CoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		core.Submit(&Request{ID: 1, Prompt: seqTokens(1, 64), PlannedOutput: seqTokens(1000, 4), Out: NewOutput()})
		if d := core.BeginPass(VirtualEpoch); d != MaxPassDuration {
			t.Errorf("speedup %g: pass lasts %v, want %v (frozen)", ratio, d, MaxPassDuration)
		}
	}
	cfg := DefaultConfig()
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	core.SetExtraPassDelay(time.Duration(1<<63 - 1))
	if core.ExtraPassDelay() != MaxPassDuration {
		t.Errorf("extra delay %v, want it capped at %v", core.ExtraPassDelay(), MaxPassDuration)
	}
}
