package kvtransfer

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startEngine runs a real engine (fixed timing: prefill 20 ms, decode 10
// ms, 16-token blocks) until the test ends.
func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.BlockSize = 16
	cfg.NumBlocks = 256
	cfg.Timing = engine.TimingConfig{Model: engine.TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	e, err := engine.New(cfg, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// startService starts a Service with a bootstrap listener on a
// kernel-chosen port.
func startService(t *testing.T, engines []*engine.Engine, timeout time.Duration) *Service {
	t.Helper()
	s, err := New(engines, Options{EngineID: "prefill-0", AdvertiseHost: "127.0.0.1",
		BootstrapListener: testutil.Listen(t), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// prefill submits a held prefill of 40 tokens (3 blocks) registered with
// the service and returns once it has finished with its blocks held.
func prefill(t *testing.T, e *engine.Engine, s *Service, spec HandoffSpec) []int {
	t.Helper()
	out := engine.NewOutput()
	prompt := make([]uint32, 40)
	for i := range prompt {
		prompt[i] = uint32(100 + i)
	}
	r := &engine.Request{ID: engine.NewRequestID(), Prompt: prompt, PlannedOutput: []uint32{7}, Out: out,
		ArrivalTime: time.Now()}
	spec.EngineReq = r.ID
	r.Handoff = s.NewHandoff(spec)
	if err := e.Submit(r); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case <-out.Ready():
			for _, it := range out.Drain(nil) {
				if it.Final {
					s.Held(spec.RequestID, it.Finished.HeldBlocks, false)
					return it.Finished.HeldBlocks
				}
			}
		case <-deadline:
			t.Fatal("prefill did not finish")
		}
	}
}
