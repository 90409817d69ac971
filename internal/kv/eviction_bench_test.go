package kv

import "testing"

// BenchmarkAllocateReleaseBackends is BenchmarkAllocateRelease for every
// eviction backend.
func BenchmarkAllocateReleaseBackends(b *testing.B) {
	for _, backend := range []EvictionBackend{EvictLRU, EvictLineage, EvictMultiLRU} {
		b.Run(string(backend), func(b *testing.B) { benchAllocateRelease(b, backend) })
	}
}
