package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSubmitAllEntersOnePass: the sequences of one request submitted together
// take their first token in the same pass (the same deadline), however busy
// the actor is. Submitted one by one, a pass can start between two of them.
func TestSubmitAllEntersOnePass(t *testing.T) {
	e := startEngine(t, fixedTimingConfig(1, 1), RealClock{})
	// Keep the actor busy with passes, so a mailbox drain can fall between
	// two posts.
	bg := NewOutput()
	if err := e.Submit(&Request{ID: NewRequestID(), Prompt: seqTokens(1, 16), PlannedOutput: seqTokens(500, 400),
		ArrivalTime: time.Now(), Out: bg}); err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		out := NewOutput()
		reqs := make([]Request, 8)
		// One arrival for all, as the HTTP layer stamps a request's
		// sequences (a pass admits only what arrived by its start).
		arrival := time.Now()
		for i := range reqs {
			reqs[i] = Request{ID: NewRequestID(), Choice: i, Prompt: seqTokens(100+round*8+i, 16),
				PlannedOutput: seqTokens(9000, 2), ArrivalTime: arrival, Out: out}
		}
		if err := e.SubmitAll(reqs); err != nil {
			t.Fatal(err)
		}
		first := map[int]time.Time{}
		finals := 0
		deadline := time.After(10 * time.Second)
		for finals < len(reqs) {
			select {
			case <-out.Ready():
				for _, it := range out.Drain(nil) {
					if it.Final {
						finals++
						continue
					}
					if _, ok := first[it.Choice]; !ok {
						first[it.Choice] = it.Time
					}
				}
			case <-deadline:
				t.Fatalf("round %d: %d of %d sequences finished", round, finals, len(reqs))
			}
		}
		var t0 time.Time
		for id, ft := range first {
			if t0.IsZero() {
				t0 = ft
			} else if !ft.Equal(t0) {
				t.Fatalf("round %d: choice %d took its first token at %v, another at %v: not one pass", round, id, ft, t0)
			}
		}
	}
}

func TestSubmitAllAfterStopQueuesNothing(t *testing.T) {
	e, err := New(fixedTimingConfig(1, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = e.Run(ctx)
	if err := e.SubmitAll(make([]Request, 3)); !errors.Is(err, ErrStopped) {
		t.Fatalf("SubmitAll after stop = %v, want ErrStopped", err)
	}
}
