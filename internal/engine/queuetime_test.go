package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// recordFinished collects FinishedRecords from the live engine's goroutine.
type recordFinished struct {
	mu   sync.Mutex
	recs []FinishedRecord
}

func (r *recordFinished) ObserveGauges(Gauges) {}

func (r *recordFinished) ObservePass(p *PassReport) {
	r.mu.Lock()
	r.recs = append(r.recs, p.Finished...)
	r.mu.Unlock()
}

// TestLiveQueueTimeIsNeverNegative runs the live engine on the real clock
// with short passes (prefill 2 ms, decode 1 ms) kept busy by long streams,
// so that passes follow each other back to back from the previous deadline,
// and submits requests stamped with their arrival at random moments in
// between. A pass that starts at the previous deadline used to admit a
// request that arrived after that deadline: its queue time (first
// scheduled − arrival) came out negative. Every request is now scheduled
// at or after its arrival, and its first token comes after it too.
func TestLiveQueueTimeIsNeverNegative(t *testing.T) {
	for _, engineType := range []EngineType{EngineVLLM, EngineSGLang} {
		t.Run(string(engineType), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Type = engineType
			cfg.BlockSize = 16
			cfg.NumBlocks = 4096
			cfg.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 2, FixedDecodeMs: 1}
			obs := &recordFinished{}
			e, err := New(cfg, Options{Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = e.Run(ctx) }()
			defer func() { cancel(); <-done }()

			var outs []*Output
			submit := func(id uint64, out int) {
				o := NewOutput()
				outs = append(outs, o)
				if err := e.Submit(&Request{ID: id, Prompt: seqTokens(int(id)*64, 20), PlannedOutput: seqTokens(1, out),
					Out: o, ArrivalTime: e.Clock().Now()}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 4 { // keep the engine busy back to back
				submit(uint64(1000+i), 400)
			}
			for i := range 150 {
				time.Sleep(time.Duration(200+(i*137)%900) * time.Microsecond)
				submit(uint64(i+1), 3)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				obs.mu.Lock()
				n := len(obs.recs)
				obs.mu.Unlock()
				if n == len(outs) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d requests finished", n, len(outs))
				}
				time.Sleep(10 * time.Millisecond)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			negative := 0
			for _, r := range obs.recs {
				if r.FirstScheduled.Before(r.Arrival) || r.FirstToken.Before(r.Arrival) {
					negative++
					if negative <= 3 {
						t.Errorf("request %d: scheduled %v and first token %v after its arrival", r.ID,
							r.FirstScheduled.Sub(r.Arrival), r.FirstToken.Sub(r.Arrival))
					}
				}
			}
			if negative > 0 {
				t.Errorf("%d of %d requests were scheduled before they arrived", negative, len(obs.recs))
			}
		})
	}
}
