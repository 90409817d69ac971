package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// The ways a health probe fails besides its context ending.
var (
	// ErrProbeNotRunning: the engine refused the probe's sequence or
	// aborted it.
	ErrProbeNotRunning = errors.New("the engine is not running")
	// ErrProbeTimeout: the probe's token did not come within the timeout.
	ErrProbeTimeout = errors.New("health probe timed out")
)

// HealthProbe runs a one-token generation through the engine of a picked
// rank and waits for it to finish, as SGLang's health checks do (HTTP's
// /health_generate and the scheduler service's HealthCheck): nil when it
// completes, ErrProbeNotRunning or ErrProbeTimeout when it cannot, ctx.Err()
// when ctx ends first. The sequence is cancelled on every early return, so
// it never outlives the probe.
func (s *Server) HealthProbe(ctx context.Context, timeout time.Duration) error {
	eng := s.Engines()[s.PickRank()]
	out := engine.NewOutput()
	req := &engine.Request{ID: engine.NewRequestID(), Prompt: []uint32{0}, PlannedOutput: []uint32{0},
		MaxOutputTokens: 1, ArrivalTime: eng.Clock().Now(), Out: out}
	if err := eng.Submit(req); err != nil {
		return ErrProbeNotRunning
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var items []engine.OutputItem
	for {
		select {
		case <-out.Ready():
			items = out.Drain(items[:0])
			for _, it := range items {
				if it.Final {
					if it.Finished.Reason == engine.FinishAbort {
						return ErrProbeNotRunning
					}
					return nil
				}
			}
		case <-t.C:
			eng.Cancel(req.ID)
			return ErrProbeTimeout
		case <-ctx.Done():
			eng.Cancel(req.ID)
			return ctx.Err()
		}
	}
}
