package replay

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// benchReplay replays n synthetic requests (256-token prompts, the first
// 128 shared by one of 32 prefixes, 64 output tokens, Poisson arrivals at
// rate per second) on workers workers, b.N times, and reports simulated
// requests per wall-clock second.
func benchReplay(b *testing.B, n, workers int, rate float64, kind RouterKind) {
	cfg := engine.DefaultConfig()
	cfg.MaxNumSeqs = 1024
	for i := 0; i < b.N; i++ {
		src, err := NewSynthetic(SyntheticOptions{Requests: n, Rate: rate, Input: Dist{Kind: DistFixed, A: 128},
			Output: Dist{Kind: DistFixed, A: 64}, PrefixGroups: 32, PrefixTokens: 128, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Run(src, Options{Workers: fleet(workers, cfg), Router: kind, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Completed != n {
			b.Fatalf("completed %d of %d", rep.Summary.Completed, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sim_requests/s")
}

// BenchmarkReplay100kOneWorker: 100,000 requests at 200 req/s on one worker.
func BenchmarkReplay100kOneWorker(b *testing.B) { benchReplay(b, 100_000, 1, 200, RoundRobin) }

// BenchmarkReplay100k16WorkersKVAware: 100,000 requests at 3,200 req/s on
// 16 workers routed by kv_aware.
func BenchmarkReplay100k16WorkersKVAware(b *testing.B) {
	benchReplay(b, 100_000, 16, 3200, KVAware)
}
