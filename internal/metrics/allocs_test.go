package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// ObservePass runs on the engine goroutine after every scheduler pass: it
// must not allocate, whatever the metric family and however varied the
// inter-token gaps.
func TestObservePassAllocationFree(t *testing.T) {
	for _, tc := range observePassCases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newReg(testConfig(func(c *config.Config) { c.MetricsFamily = config.MetricsFamily(tc.family) }), "test")
			o := reg.Observer(0)
			r := decodeReport(tc.varied)
			if allocs := testing.AllocsPerRun(200, func() { observePass(o, r) }); allocs != 0 {
				t.Errorf("%v allocations per pass, want 0", allocs)
			}
		})
	}
}
