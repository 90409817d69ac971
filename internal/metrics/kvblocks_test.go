package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestKVCacheBlocks_SplitThePoolByState(t *testing.T) {
	reg := newReg(testConfig(func(c *config.Config) { c.NumGPUBlocks = 100 }), "test")
	f := scrape(t, reg)
	if got := f.value(t, "mocker_kv_cache_blocks", "dp_rank", "0", "state", "free"); got != 100 {
		t.Errorf("fresh pool: free = %v, want 100", got)
	}
	reg.Observer(0).ObserveGauges(engine.Gauges{ActiveBlocks: 7, CachedBlocks: 30, KVUsage: 0.07})
	f = scrape(t, reg)
	for state, want := range map[string]float64{"in_use": 7, "cached": 30, "free": 63} {
		if got := f.value(t, "mocker_kv_cache_blocks", "dp_rank", "0", "state", state); got != want {
			t.Errorf("%s = %v, want %v", state, got, want)
		}
	}
}
