package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// ObservePass runs on the engine goroutine after every scheduler pass: it
// must not allocate, whatever the metric family and however varied the
// inter-token gaps.
func TestObservePassAllocationFree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		family string
		varied bool
	}{
		{"vllm", "vllm", false},
		{"vllm, varied gaps", "vllm", true},
		{"both", "both", false},
		{"both, varied gaps", "both", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := New(testConfig(func(c *config.Config) { c.MetricsFamily = tc.family }), "test")
			o := reg.Observer(0)
			r := decodeReport(tc.varied)
			g := engine.Gauges{Running: 256, Waiting: 3, ActiveBlocks: 4000, KVUsage: 4000.0 / 16384}
			allocs := testing.AllocsPerRun(200, func() {
				o.ObserveGauges(g)
				o.ObservePass(r)
			})
			if allocs != 0 {
				t.Errorf("%v allocations per pass, want 0", allocs)
			}
		})
	}
}
