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
	run := func(kind RouterKind) *Report {
		src, err := NewSynthetic(SyntheticOptions{Requests: 800, Rate: 10, Input: Dist{Kind: DistFixed, A: 128},
			Output: Dist{Kind: DistFixed, A: 32}, PrefixGroups: 16, PrefixTokens: 1024, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		cfg := engine.DefaultConfig()
		cfg.Type = engine.EngineSGLang
		cfg.BlockSize = 16
		cfg.NumBlocks = 320
		rep, err := Run(src, Options{Workers: fleet(4, cfg), Router: kind, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Completed != 800 {
			t.Fatalf("%s: completed %d of 800", kind, rep.Summary.Completed)
		}
		return rep
	}
	rr, kvr := run(RoundRobin), run(KVAware)
	t.Logf("sglang hit rate: round_robin %.3f, kv_aware %.3f", rr.Summary.PrefixCacheHitRate, kvr.Summary.PrefixCacheHitRate)
	if !(kvr.Summary.PrefixCacheHitRate > rr.Summary.PrefixCacheHitRate+0.05) {
		t.Fatalf("kv_aware hit rate %.4f is not clearly above round_robin's %.4f", kvr.Summary.PrefixCacheHitRate, rr.Summary.PrefixCacheHitRate)
	}
}
