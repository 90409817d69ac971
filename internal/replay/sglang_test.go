package replay

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// TestRunKVAwareRoutesBySGLangPageHashes replays the shared-prefix workload
// on 4 SGLang workers (16-token pages): the KV-aware router hashes prompts
// the way the radix cache publishes its pages, so it sees the overlap and
// beats round-robin's hit rate as it does for vLLM workers.
func TestRunKVAwareRoutesBySGLangPageHashes(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Type = engine.EngineSGLang
	cfg.BlockSize = 16
	cfg.NumBlocks = 320
	rr, kvr := runSharedPrefixFleet(t, cfg, RoundRobin, 10), runSharedPrefixFleet(t, cfg, KVAware, 10)
	t.Logf("sglang hit rate: round_robin %.3f, kv_aware %.3f", rr.Summary.PrefixCacheHitRate, kvr.Summary.PrefixCacheHitRate)
	if !(kvr.Summary.PrefixCacheHitRate > rr.Summary.PrefixCacheHitRate+0.05) {
		t.Fatalf("kv_aware hit rate %.4f is not clearly above round_robin's %.4f", kvr.Summary.PrefixCacheHitRate, rr.Summary.PrefixCacheHitRate)
	}
}
