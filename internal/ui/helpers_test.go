package ui

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// simulated runs a real engine core in virtual time with hub's inspector
// on rank 0.
type simulated struct {
	core *engine.Core
	sim  *engine.Simulator
}

func newSimulated(t *testing.T, hub *Hub, numBlocks int) *simulated {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.NumBlocks = numBlocks
	cfg.BlockSize = 16
	core, err := engine.NewCore(cfg, engine.CoreOptions{Inspector: hub.Inspector(0)})
	if err != nil {
		t.Fatal(err)
	}
	return &simulated{core: core, sim: engine.NewSimulator(core)}
}

// submit queues a request at virtual time at with the given prompt and
// planned output lengths; prompts share their leading tokens.
func (s *simulated) submit(at time.Duration, label string, prompt, output int) *engine.Request {
	r := &engine.Request{ID: engine.NewRequestID(), Label: label, Prompt: make([]uint32, prompt),
		PlannedOutput: make([]uint32, output), Out: engine.NewOutput()}
	for i := range r.Prompt {
		r.Prompt[i] = uint32(i + 1)
	}
	for i := range r.PlannedOutput {
		r.PlannedOutput[i] = uint32(1000 + i)
	}
	s.sim.SubmitAt(at, r)
	return r
}

// run runs the simulation to completion and takes the final state.
func (s *simulated) run() {
	s.sim.Run(0)
	s.core.InspectState(s.sim.Clock.Now())
}
